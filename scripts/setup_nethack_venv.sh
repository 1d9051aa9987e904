#!/usr/bin/env bash
# Create (or reuse) .venv-nethack: a virtualenv holding the 'nethack' extra (nle 1.3.0, minihack 1.0.2)
# for the RAGEN/MiniHack-*-v0 and RAGEN/NetHack-v0 ids, then run their tests in it (tests/test_nethack.py and
# the every-id tests on these ids).  Kept apart from
# .venv because nle pins gymnasium 1.2.0 and the main install takes the newest gymnasium below 2.
# Idempotent: the install is skipped while the stamp matches pyproject.toml and this script.
#
# Usage: scripts/setup_nethack_venv.sh [--no-test] [VENV_DIR]   (default: .venv-nethack in the repository root)
set -euo pipefail

run_tests=1
if [ "${1:-}" = "--no-test" ]; then run_tests=0; shift; fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-nethack}"
python="${PYTHON:-python3}"
stamp="$venv/.ragen-bench-nethack-installed"
wanted="$(cat "$repo_root/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    echo "setup_nethack_venv: $venv is up to date"
else
    test -x "$venv/bin/python" || "$python" -m venv "$venv"
    # test: pytest, hypothesis and the benchmark plugin the family's tests and benchmark use.
    (cd "$repo_root" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test,nethack]')
    "$venv/bin/python" -c "import gymnasium, nle, minihack; print('setup_nethack_venv: nle', nle.__version__, 'gymnasium', gymnasium.__version__)"
    echo "$wanted" > "$stamp"
fi

if [ "$run_tests" = 1 ]; then
    cd "$repo_root"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_nethack.py tests/test_env_contract_every_id.py \
        tests/test_chat_budgets.py tests/test_pictures.py tests/test_cli_envs.py -k "MiniHack or NetHack or nethack"
fi
