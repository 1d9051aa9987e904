#!/usr/bin/env bash
# Create (or reuse) .venv-openenv: a virtualenv holding OpenEnv 0.10 (`ragen-bench serve` and the
# RAGEN/Remote-v0 client), then run the OpenEnv-side tests (tests_openenv/) in it.  Kept apart from
# .venv because openenv needs mcp < 2 and pulls gradio and fastmcp.  No torch: the server plays envs
# through the chat layer only.
# Idempotent: the install is skipped while the stamp matches pyproject.toml, this script and venv_lib.sh.
#
# Usage: scripts/setup_openenv_venv.sh [--no-test] [VENV_DIR]   (default: .venv-openenv in the repository root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_init openenv "$@"

install() {
    # games, rg, twx: the families the client's parity test samples (a game, a reasoning-gym id, a
    # TextWorld-Express id); pytest and pytest-benchmark alone of the test extra (no browser, no build);
    # httpx, which the tests call the server's HTTP routes with.  mcp: `serve --mcp` shares openenv's mcp < 2.
    (cd "$repo_root" && "${venv_pip[@]}" -e '.[openenv,mcp,games,rg,twx]' "pytest>=8" "pytest-benchmark>=4" httpx)
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
}
venv_install_once install

venv_pytest . tests_openenv
