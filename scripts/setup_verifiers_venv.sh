#!/usr/bin/env bash
# Create (or reuse) .venv-verifiers: a virtualenv holding verifiers 0.4.0 and the ragen-bench-vf
# plugin (plugins/ragen-bench-vf: the taskset id vf-eval loads), then run the verifiers-side tests
# (tests_verifiers/) in it.  Kept apart from .venv and .venv-openenv because verifiers pins
# mcp==2.0.0 and openai<3 (openenv needs mcp < 2).  No torch, no uv: the plugin's harness runs in
# process, so verifiers never bootstraps uv or a sandbox.
# Idempotent: the install is skipped while the stamp matches pyproject.toml, the plugin's, this script and venv_lib.sh.
#
# Usage: scripts/setup_verifiers_venv.sh [--no-test] [VENV_DIR]   (default: .venv-verifiers in the repository root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_init verifiers "$@"

install() {
    # ragen-bench without extras (the tests play built-in ids only), the plugin (which pins
    # verifiers), and pytest with pytest-benchmark (pyproject's addopts name its flag).
    (cd "$repo_root" && "${venv_pip[@]}" -e . -e plugins/ragen-bench-vf "pytest>=8" "pytest-benchmark>=4")
    "$venv/bin/python" - <<'PY'
import importlib.metadata as metadata
version = metadata.version("verifiers")
assert version == "0.4.0", f"unexpected verifiers {version}"
from verifiers.v1.utils.loaders import taskset_class
import ragen_bench_vf
assert taskset_class("ragen-bench-vf") is ragen_bench_vf.RagenTaskset
print(f"setup_verifiers_venv: verifiers {version}, mcp {metadata.version('mcp')}, openai {metadata.version('openai')}")
PY
}
venv_install_once install plugins/ragen-bench-vf/pyproject.toml

venv_pytest . tests_verifiers
