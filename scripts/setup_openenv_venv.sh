#!/usr/bin/env bash
# Create (or reuse) .venv-openenv: a virtualenv holding OpenEnv 0.10 (`ragen-bench serve` and the
# RAGEN/Remote-v0 client), then run the OpenEnv-side tests (tests_openenv/) in it.  Kept apart from
# .venv because openenv needs mcp < 2 and pulls gradio and fastmcp.  No torch: the server plays envs
# through the chat layer only.
# Idempotent: the install is skipped while the stamp matches pyproject.toml and this script.
#
# Usage: scripts/setup_openenv_venv.sh [--no-test] [VENV_DIR]   (default: .venv-openenv in the repository root)
set -euo pipefail

run_tests=1
if [ "${1:-}" = "--no-test" ]; then run_tests=0; shift; fi
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-openenv}"
python="${PYTHON:-python3}"
stamp="$venv/.ragen-bench-openenv-installed"
wanted="$(cat "$repo_root/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
    echo "setup_openenv_venv: $venv is up to date"
else
    test -x "$venv/bin/python" || "$python" -m venv "$venv"
    pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
    # games, rg, twx: the families the client's parity test samples (a game, a reasoning-gym id, a
    # TextWorld-Express id); pytest and pytest-benchmark alone of the test extra (no browser, no build);
    # httpx, which the tests call the server's HTTP routes with.  mcp: `serve --mcp` shares openenv's mcp < 2.
    (cd "$repo_root" && "${pip[@]}" -e '.[openenv,mcp,games,rg,twx]' "pytest>=8" "pytest-benchmark>=4" httpx)
    "$venv/bin/python" - <<'PY'
import importlib.metadata as metadata
version = metadata.version("openenv")
assert version.startswith("0.10."), f"unexpected openenv {version}"
for name in ("openenv-core", "torch"):
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        continue
    raise SystemExit(f"setup_openenv_venv: {name} must not be installed here")
print(f"setup_openenv_venv: openenv {version}, mcp {metadata.version('mcp')}")
PY
    echo "$wanted" > "$stamp"
fi

if [ "$run_tests" = 1 ]; then
    cd "$repo_root"
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests_openenv
fi
