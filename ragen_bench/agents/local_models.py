"""Local transformers models: loading them offline, and the decoding rules every sampler shares.

Used by the ``hf`` agent (:mod:`ragen_bench.agents.hf`), the trainer (its policy agent,
sampler, stop rule and checkpoints) and the veRL agent loop, so a model is loaded, cut off
and sampled the same way wherever it runs:

* :func:`load_model` -- (model, tokenizer) from an alias (``smollm2-135m``, ``tiny``), a
  checkpoint directory, or a peft LoRA adapter directory (one with ``adapter_config.json``,
  as ``ragen-bench train`` saves with ``lora.rank > 0``): its ``base_model_name_or_path`` is
  resolved like ``model`` itself, the adapter is applied and merged into the base weights,
  so generation costs what the base model costs;
* :func:`load_for_sampling` -- the same plus checked :class:`SamplingSettings`;
* :func:`stop_token_ids`, :class:`StopStrings`, :data:`DEFAULT_STOP_STRINGS` -- where a reply ends;
* :func:`keep_top_p` -- nucleus truncation of a probability row.

torch, transformers and peft are imported inside the functions that need them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path
from ragen_bench.chat.protocol import AgentError

# num_threads: choose from the cores other processes leave free when the agent starts.
AUTO_THREADS = "auto"

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

DEFAULT_STOP_STRINGS = ("</answer>",)
ADAPTER_CONFIG = "adapter_config.json"


def keep_top_p(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """Zero all but the smallest set of most likely tokens whose mass reaches ``top_p``."""
    import torch

    sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
    mass_before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
    sorted_probs = torch.where(mass_before < top_p, sorted_probs, torch.zeros_like(sorted_probs))
    return torch.zeros_like(probs).scatter(-1, order, sorted_probs)


class StopStrings:
    """Tells whether the last token of a growing reply completes one of ``stop_strings``.

    Only a tail of the reply is decoded: every token holds at least one byte, so the last
    ``window`` tokens (the longest stop string's length in bytes, plus one token for
    tokenizers that drop a leading space when decoding) cover any stop string the last
    token completed.  A stop string completed earlier would have ended the reply there.
    """

    def __init__(self, tokenizer: Any, stop_strings: Sequence[str], *, context: str = "") -> None:
        if isinstance(stop_strings, str) or any(not isinstance(stop, str) or not stop for stop in stop_strings):
            raise ValueError(f"{context}stop_strings must be non-empty strings in a list, got {stop_strings!r}")
        self.tokenizer = tokenizer
        self.strings = tuple(stop_strings)
        self.window = max((len(stop.encode()) for stop in self.strings), default=0) + 1

    def completed_by_last(self, reply_ids: Sequence[int]) -> bool:
        if not self.strings or not reply_ids:
            return False
        tail = self.tokenizer.decode(list(reply_ids[-self.window :]), skip_special_tokens=False)
        return any(stop in tail for stop in self.strings)


def stop_token_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """Token ids that end a reply: the model's configured eos id(s) and the tokenizer's."""
    configured = getattr(model.generation_config, "eos_token_id", None)
    ids = set(configured if isinstance(configured, list) else [configured])
    ids.add(tokenizer.eos_token_id)
    ids.discard(None)
    if not ids:
        raise ValueError("neither the model nor the tokenizer defines an end-of-sequence token")
    return frozenset(ids)


def load_model(model: str | Path, *, dtype: str = "float32") -> tuple[Any, Any]:
    """Load (model, tokenizer) offline from an alias, a checkpoint directory or a LoRA adapter directory."""
    import torch
    from transformers import AutoModelForCausalLM

    quiet_loading()

    adapter = adapter_config(model)
    if adapter is not None:
        return _load_adapter(Path(model).expanduser(), adapter["base_model_name_or_path"], dtype=dtype)
    path = resolve_model_path(model)
    tokenizer = load_tokenizer(path)
    loaded = AutoModelForCausalLM.from_pretrained(str(path), dtype=getattr(torch, dtype), local_files_only=True)
    return loaded, tokenizer


def load_tokenizer(path: Path) -> PreTrainedTokenizerBase:
    """The tokenizer saved in ``path``, offline.

    A saved ``clean_up_tokenization_spaces=True`` on a BPE tokenizer is turned off where transformers
    skips that clean-up for BPE anyway (it then warns at the first decode, into the eval's progress
    lines): the decoded text is the same.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    skipped = getattr(tokenizer, "clean_up_tokenization_spaces_for_bpe_even_though_it_will_corrupt_output", None) is False
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if skipped and backend is not None and type(backend.model).__name__ == "BPE":
        tokenizer.clean_up_tokenization_spaces = False
    return tokenizer


def quiet_loading() -> None:
    """No "Loading weights" bar per model load: it says nothing a user acts on, and it lands
    among the eval's and the trainer's own progress lines."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


def free_cores() -> int:
    """The cores this process may run on, less those other processes keep busy (the 1-minute
    load average, rounded), and at least one.

    Measured when an agent starts, before its model runs, so the load is the others'.  Decoding
    runs many small matrix products: on two threads beside another busy process every product
    waits for the descheduled thread (up to 10x slower, docs/performance.md), while on an idle
    machine two threads win.
    """
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system: every core
        return cores
    return max(1, min(cores, round(cores - load)))


def resolve_threads(num_threads: int | str | None) -> int | None:
    """``num_threads`` of a local model agent as a thread count: ``"auto"`` is :func:`free_cores`,
    None leaves torch's default (every core), a number is itself; anything else is an AgentError."""
    if num_threads == AUTO_THREADS:
        return free_cores()
    if num_threads is None:
        return None
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise AgentError(f"num_threads must be a number of threads >= 1, {AUTO_THREADS!r} or null, got {num_threads!r}")
    return num_threads


def adapter_config(model: str | Path) -> dict[str, Any] | None:
    """``model``'s peft adapter config when it names a LoRA adapter directory, else None.

    The config must name its base model (``base_model_name_or_path``: an alias or a path,
    resolved like ``model``); a broken one is an :class:`AgentError` naming the file.
    """
    import json

    config_file = Path(model).expanduser() / ADAPTER_CONFIG
    if not config_file.is_file():
        return None
    try:
        config = json.loads(config_file.read_text())
        base_name = config["base_model_name_or_path"]
    except (ValueError, KeyError, TypeError) as broken:
        raise AgentError(f"{config_file}: not a peft adapter config with a base_model_name_or_path") from broken
    if not isinstance(base_name, str) or not base_name:
        raise AgentError(f"{config_file}: base_model_name_or_path must name the base model, got {base_name!r}")
    return config


def has_tokenizer(adapter: Path) -> bool:
    """Whether an adapter directory carries its own tokenizer (``ragen-bench train`` saves one beside it)."""
    return (adapter / "tokenizer_config.json").is_file()


def _load_adapter(adapter: Path, base_name: str, *, dtype: str) -> tuple[Any, Any]:
    """The adapter's base model with the adapter merged in, and the adapter's tokenizer (else the base's)."""
    config_file = adapter / ADAPTER_CONFIG
    try:
        from peft import PeftModel
    except ImportError as missing:
        raise AgentError(f"{adapter} is a LoRA adapter, which needs peft: pip install 'ragen-bench[train]'") from missing
    try:
        base, tokenizer = load_model(base_name, dtype=dtype)
    except FileNotFoundError as unknown:
        raise AgentError(f"{config_file}: base model not found: {unknown}") from unknown
    if has_tokenizer(adapter):
        tokenizer = load_tokenizer(adapter)
    return PeftModel.from_pretrained(base, str(adapter)).merge_and_unload(), tokenizer


def load_for_sampling(
    model: str | Path, *, temperature: float, top_p: float, max_new_tokens: int, sampling_seed: int,
    num_threads: int | str | None, dtype: str,
) -> tuple[Any, Any, SamplingSettings]:
    """What a sampling agent's factory needs: (model, tokenizer, checked sampling settings).

    The settings are checked before the model loads; ``num_threads`` (:func:`resolve_threads`)
    sets torch's intra-op thread count, process-wide.
    """
    import torch

    sampling = SamplingSettings(
        temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, sampling_seed=sampling_seed
    )
    threads = resolve_threads(num_threads)
    if threads is not None:
        torch.set_num_threads(threads)
    loaded_model, tokenizer = load_model(model, dtype=dtype)
    return loaded_model, tokenizer, sampling
