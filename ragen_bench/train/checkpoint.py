"""Checkpoints of a training run: save, find the latest, restore, and the run folder's identity.

``OUT/checkpoints/step-NNNNNN/`` holds ``model/`` (``save_pretrained`` of the policy and its
tokenizer: a full checkpoint, or a LoRA adapter whose ``base_model_name_or_path`` is the
``model`` setting, e.g. the alias ``smollm2-135m``, so it loads on any machine), ``critic.pt``,
``optimizers.pt`` and ``state.json`` (step, RNG states).  Each is written into a temporary
folder that is renamed into place, then ``OUT/checkpoints/latest`` names it, so a run killed
at any moment resumes from a complete checkpoint.  ``ragen-bench eval agent=hf
agent.model=OUT/checkpoints/step-NNNNNN/model`` evaluates one directly.

``OUT/config.json`` is the resolved config; resuming with a different one (other than in
the free keys ``steps``, ``out``, ``threads``, ``sampling_threads``, ``log`` and ``collapse_detection``: :data:`~ragen_bench.train.config.FREE_KEYS`)
is refused, naming the first differing key.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ragen_bench import runfiles
from ragen_bench.eval.rundir import RunDirError, read_json
from ragen_bench.train.config import FREE_KEYS, CheckpointError, TrainConfig
from ragen_bench.train.models import with_lora

CHECKPOINTS = "checkpoints"
LATEST = "latest"
CONFIG = "config.json"


def model_dir(checkpoint: Path) -> Path:
    return checkpoint / "model"


def latest(out: Path) -> Path | None:
    pointer = out / CHECKPOINTS / LATEST
    if not pointer.exists():
        return None
    checkpoint = out / CHECKPOINTS / pointer.read_text().strip()
    if not (checkpoint / "state.json").exists():
        raise CheckpointError(f"{pointer} names {checkpoint.name}, which is missing or incomplete")
    return checkpoint


def check_out(out: Path, config: TrainConfig) -> None:
    """Refuse ``out`` unless it is new, empty or a run of the same config; writes nothing."""
    path = out / CONFIG
    if path.exists():
        previous = runfiles.identity(with_later_keys(_read_config(path)), FREE_KEYS)
        wanted = runfiles.identity(config.recorded(), FREE_KEYS)
        runfiles.require_same_config(out, previous, wanted, error=CheckpointError)
    elif out.exists() and any(out.iterdir()):
        raise CheckpointError(f"{out} is not empty and holds no training run; out= must name a new or empty folder")


def with_later_keys(recorded: dict[str, Any]) -> dict[str, Any]:
    """``recorded`` plus, at their defaults, the keys added to :class:`TrainConfig` after it was written.

    A key is only ever added with a default that computes what the trainer computed before it
    existed, so a run started then resumes now.  ``chat`` holds only the keys given, and
    stays as recorded.
    """
    return _fill(TrainConfig().to_dict(), recorded)


def _fill(defaults: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    filled = dict(recorded)
    for key, default in defaults.items():
        if key not in filled:
            filled[key] = default
        elif isinstance(default, dict) and isinstance(filled[key], dict) and key != "chat":
            filled[key] = _fill(default, filled[key])
    return filled


def prepare_out(out: Path, config: TrainConfig) -> None:
    """Create ``out`` with ``config.json``, or check that an existing run has the same config."""
    check_out(out, config)
    out.mkdir(parents=True, exist_ok=True)
    runfiles.write_json_atomic(out / CONFIG, config.recorded())


def _read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.json`` (read like the eval run files); a bad one is named, with the way on."""
    way_on = f"to resume, fix or restore it; to start a new run, use another out= (or delete {path.parent})"
    try:
        recorded = read_json(path)
    except RunDirError as error:
        raise CheckpointError(f"{error}; {way_on}") from None
    if not isinstance(recorded, dict):
        raise CheckpointError(f"{path}: corrupt, not a training run's config (a JSON object is expected); {way_on}")
    return recorded


def save(out: Path, trainer: Any) -> Path:
    """Write the trainer's state as ``step-NNNNNN``, point ``latest`` at it, keep the newest ``checkpoint.keep``."""
    root = out / CHECKPOINTS
    name = f"step-{trainer.step:06d}"
    final = root / name
    temporary = root / f".{name}.tmp"
    shutil.rmtree(temporary, ignore_errors=True)
    (temporary / "model").mkdir(parents=True)
    if is_adapter_model(trainer.policy):
        # No embedding layers in the adapter, and so no hub lookup of the base (offline).
        trainer.policy.save_pretrained(temporary / "model", save_embedding_layers=False)
    else:
        trainer.policy.save_pretrained(temporary / "model")
    trainer.tokenizer.save_pretrained(temporary / "model")
    if trainer.critic is not None:
        torch.save(trainer.critic.state_dict(), temporary / "critic.pt")
    optimizers = {"actor": trainer.actor_optimizer.state_dict()}
    if trainer.critic_optimizer is not None:
        optimizers["critic"] = trainer.critic_optimizer.state_dict()
    torch.save(optimizers, temporary / "optimizers.pt")
    torch.save({"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
               temporary / "rng.pt")
    runfiles.write_json_atomic(temporary / "state.json", {"step": trainer.step, "model": trainer.config.model})
    runfiles.fsync_tree(temporary)
    if final.exists():
        shutil.rmtree(final)
    os.replace(temporary, final)
    runfiles.fsync_dir(root)
    runfiles.write_text_atomic(root / LATEST, name)
    for old in sorted(p for p in root.glob("step-*") if p.is_dir())[: -trainer.config.checkpoint.keep]:
        shutil.rmtree(old)
    return final


def is_adapter_model(model: Any) -> bool:
    return hasattr(model, "peft_config")


def is_adapter(path: Path) -> bool:
    return (path.expanduser() / "adapter_config.json").is_file()


def load_policy(source: str | Path, config: TrainConfig) -> tuple[Any, Any]:
    """(policy, tokenizer) to train from ``source``: a checkpoint's model or the starting model.

    A LoRA adapter directory (with ``lora.rank > 0``) is trained further as it is, on the
    base it names, so the result stays one adapter on that base (a format warm start and
    the RL run after it share one adapter).  Anything else is loaded as full weights and,
    with ``lora.rank > 0``, given a fresh adapter.
    """
    from ragen_bench.agents.local_models import load_model

    if config.lora.rank == 0 or not is_adapter(Path(source)):
        model, tokenizer = load_model(source, dtype=config.dtype)
        return with_lora(model, config.lora, base_name=config.model), tokenizer
    from peft import PeftConfig, PeftModel
    from transformers import AutoTokenizer

    base_name = PeftConfig.from_pretrained(str(source)).base_model_name_or_path
    base, _ = load_model(base_name, dtype=config.dtype)
    base.config.name_or_path = base_name
    policy = PeftModel.from_pretrained(base, str(source), is_trainable=True)
    return policy, AutoTokenizer.from_pretrained(str(source), local_files_only=True)


def restore(checkpoint: Path, trainer: Any) -> int:
    """Load the critic, the optimisers and the RNG states into ``trainer``; return the checkpoint's step."""
    # The step first: a corrupt state.json is refused naming it, before any state is loaded.
    state_file = checkpoint / "state.json"
    state = read_json(state_file)
    step = state.get("step") if isinstance(state, dict) else None
    if type(step) is not int or step < 0:
        raise CheckpointError(f"{state_file}: corrupt, no step count (got {str(state)[:80]})")
    if trainer.critic is not None:
        trainer.critic.load_state_dict(torch.load(checkpoint / "critic.pt", weights_only=True))
    optimizers = torch.load(checkpoint / "optimizers.pt", weights_only=False)
    trainer.actor_optimizer.load_state_dict(optimizers["actor"])
    if trainer.critic_optimizer is not None:
        trainer.critic_optimizer.load_state_dict(optimizers["critic"])
    states = torch.load(checkpoint / "rng.pt", weights_only=False)
    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])
    return step
