#!/usr/bin/env bash
# Create (or reuse) .venv-nethack: a virtualenv holding the 'nethack' extra (nle 1.3.0, minihack 1.0.2)
# for the RAGEN/MiniHack-*-v0 and RAGEN/NetHack-v0 ids, then run their tests in it (tests/test_nethack.py and
# the every-id tests on these ids).  Kept apart from
# .venv because nle pins gymnasium 1.2.0 and the main install takes the newest gymnasium below 2.
# The other balrog-v0 extras (babyai, crafter, textworld) and leaderboard join it, so the whole suite is
# played here; their 24 panels regenerate to their checksums under gymnasium 1.2.0 (envs verify, 2026-12-03).
# Idempotent: the install is skipped while the stamp matches pyproject.toml, this script and venv_lib.sh.
#
# Usage: scripts/setup_nethack_venv.sh [--no-test] [VENV_DIR]   (default: .venv-nethack in the repository root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_init nethack "$@"

install() {
    # test: pytest, hypothesis and the benchmark plugin the family's tests and benchmark use.
    (cd "$repo_root" && "${venv_pip[@]}" -e '.[test,nethack,babyai,crafter,textworld,leaderboard]')
    "$venv/bin/python" -c "import gymnasium, nle, minihack, minigrid, crafter, textworld; print('setup_nethack_venv: nle', nle.__version__, 'gymnasium', gymnasium.__version__)"
}
venv_install_once install

venv_pytest . tests/test_nethack.py tests/test_env_contract_every_id.py \
    tests/test_chat_budgets.py tests/test_pictures.py tests/test_cli_envs.py tests/test_baseline_agent.py -k "MiniHack or NetHack or nethack"
