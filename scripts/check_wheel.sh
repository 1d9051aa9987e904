#!/usr/bin/env bash
# `pip install ragen-bench` must give the whole benchmark.  Build the wheel, install it
# into a fresh virtualenv (.venv-wheel), and from a folder outside the checkout verify
# every frozen panel and run a short eval from the packaged configs.
#
# Usage: scripts/check_wheel.sh   (uses .venv's python to build; needs no network beyond PyPI)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_python="$repo_root/.venv/bin/python"
venv="$repo_root/.venv-wheel"
dist="$(mktemp -d)"
outside="$(mktemp -d)"
trap 'rm -rf "$dist" "$outside"' EXIT

# In-tree builds reuse build/; a stale one could ship files the checkout no longer has.
rm -rf "$repo_root/build"
"$build_python" -m pip wheel --quiet --quiet --no-deps --no-build-isolation --wheel-dir "$dist" "$repo_root"
wheel="$(ls "$dist"/ragen_bench-*.whl)"

rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"

cd "$outside"
# The installed package must not see the checkout.
"$venv/bin/python" - "$repo_root" <<'PY'
import sys, ragen_bench
assert not ragen_bench.__file__.startswith(sys.argv[1] + "/ragen_bench/"), ragen_bench.__file__
PY
# The core install verifies every single-agent panel and names the extra the games need.
"$venv/bin/ragen-bench" envs verify | tee verify.log
grep -q "^skip RAGEN/TicTacToe-v0: .*ragen-bench\[games\]" verify.log
"$venv/bin/ragen-bench" eval env=RAGEN/Sokoban-6x6-v0 agent=optimal limit=4 out=run progress=false
"$venv/bin/ragen-bench" eval suite=ragen-bandit-generalization-v0 agent=random limit=2 out=suite-run progress=false
"$venv/bin/ragen-bench" compare run suite-run
# With the games extra: the game panels regenerate and a game evaluates.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel[games]"
"$venv/bin/ragen-bench" envs verify RAGEN/TicTacToe-v0 RAGEN/ConnectFour-v0 RAGEN/PrisonersDilemma-v0
"$venv/bin/ragen-bench" eval env=RAGEN/TicTacToe-v0 agent=random opponent=minimax limit=4 out=game-run progress=false
echo "check_wheel: $(basename "$wheel") installs and runs outside the checkout"
