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
source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_init nemo-gym "$@"
python="${PYTHON:-python3.13}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    echo "setup_nemo_gym_venv: needs Python >= 3.12 as PYTHON (got '$python')" >&2
    exit 2
fi

install() {
    (cd "$repo_root" && "${venv_pip[@]}" -e . -e plugins/nemo-gym "pytest>=8")
    "$venv/bin/python" - <<'PY'
import importlib.metadata as metadata
import sys
print(f"setup_nemo_gym_venv: nemo-gym {metadata.version('nemo-gym')}, Python {sys.version.split()[0]}")
PY
}
venv_install_once install plugins/nemo-gym/pyproject.toml

venv_pytest plugins/nemo-gym tests
