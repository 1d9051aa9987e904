#!/usr/bin/env bash
# Create (or reuse) .venv-nemo-gym: nemo-gym 0.4.0 and the plugins/nemo-gym resources server, then run
# the plugin's tests (plugins/nemo-gym/tests) in it.  Not part of `make test`: NeMo Gym 0.7 (the
# version to target) needs Python >= 3.13.14, which this machine lacks, and 0.4.0's virtualenv is
# 1.4 GB (ray, mlflow, wandb, datasets) for a check against an older release.  Needs Python 3.12 or
# 3.13 (nemo-gym 0.4.0 requires >= 3.12): give it as PYTHON, e.g.
#
#   PYTHON=/root/.pyenv/versions/3.13.0/bin/python bash scripts/setup_nemo_gym_venv.sh
#
# Usage: scripts/setup_nemo_gym_venv.sh [--no-test] [VENV_DIR]   (default: .venv-nemo-gym in the repository root)
set -euo pipefail

run_tests=1
if [ "${1:-}" = "--no-test" ]; then run_tests=0; shift; fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-nemo-gym}"
python="${PYTHON:-python3.13}"
stamp="$venv/.ragen-bench-nemo-gym-installed"
wanted="$(cat "$repo_root/pyproject.toml" "$repo_root/plugins/nemo-gym/pyproject.toml" "${BASH_SOURCE[0]}" \
    | sha256sum | cut -d' ' -f1)"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    echo "setup_nemo_gym_venv: needs Python >= 3.12 as PYTHON (got '$python')" >&2
    exit 2
fi
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    echo "setup_nemo_gym_venv: $venv is up to date"
else
    test -x "$venv/bin/python" || "$python" -m venv "$venv"
    (cd "$repo_root" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -e . -e plugins/nemo-gym "pytest>=8")
    "$venv/bin/python" - <<'PY'
import importlib.metadata as metadata
import sys
print(f"setup_nemo_gym_venv: nemo-gym {metadata.version('nemo-gym')}, Python {sys.version.split()[0]}")
PY
    echo "$wanted" > "$stamp"
fi

if [ "$run_tests" = 1 ]; then
    cd "$repo_root/plugins/nemo-gym"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests
fi
