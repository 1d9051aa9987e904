"""veRL's own FSDP actor engine on a CPU, in one process, for the tests that check rows against it.

veRL 0.9.1 has no CPU platform (``plugin/platform/platform_manager.py`` falls back to
``nvidia``), so :func:`use_cpu_platform` registers one before the engine module is imported
(``workers/engine/fsdp/transformer_impl.py`` reads the device name when it is imported):
device ``cpu``, collectives on gloo, and a ``torch.cuda``-like module that does nothing.  The
engine is registered for cuda and npu only; ``VERL_ENGINE_DEVICE=cuda`` makes veRL's registry
hand it out anyway (``workers/engine/base.py``).  The configs are those veRL's actor worker
builds, with what a CPU needs: ``sdpa`` attention (the default is flash-attention 2), fp32
parameters (the default bf16 would move log-probs by ~1e-2), FSDP2 (FSDP1 refuses CPU
parameters with ``sync_module_states``).

Run as ``python -m tests_verl.cpu_engine CHECK MICRO_BATCH`` (a fresh process: the platform and
the process group are global); it prints one JSON line.  ``score``: the collapse diagnostics'
:class:`ragen_bench.integrations.verl.collapse.WorkerScorer` through a worker group whose
``compute_log_prob`` is the engine's ``infer_batch`` on the stored rows, as veRL's actor worker
runs it, against the local trainer's forward.  ``update``: veRL's actor loss (``ppo_loss``)
and its gradient through the engine against the local trainer's ``policy_loss`` on the same rows.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any


def use_cpu_platform() -> None:
    """Register veRL's CPU stand-in platform and a one-process gloo group (call before importing the engine)."""
    import torch
    import torch.distributed as dist
    from verl.plugin.platform import set_platform
    from verl.plugin.platform.platform_cuda import PlatformCUDA

    class NoDevice:
        """What the engine asks of ``torch.cuda``: nothing to do on a CPU."""

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):  # not a device call (abc asks for __isabstractmethod__)
                raise AttributeError(name)
            if name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
                return lambda *args, **kwargs: 0
            if name == "mem_get_info":
                return lambda *args, **kwargs: (0, 0)
            if name in ("manual_seed", "manual_seed_all"):
                return torch.manual_seed
            if name == "is_available":
                return lambda: True
            if name == "current_device":
                return lambda: "cpu"
            if name == "device_count":
                return lambda: 1
            return lambda *args, **kwargs: None

    class PlatformCPU(PlatformCUDA):
        device_name = "cpu"
        vendor_name = "cpu"
        device_module = NoDevice()

        def is_available(self) -> bool:
            return True

        def current_device(self) -> str:
            return "cpu"

        def device_count(self) -> int:
            return 1

        def set_device(self, device_index: Any) -> None:
            pass

        def synchronize(self, device_index: Any = None) -> None:
            pass

        def manual_seed(self, seed: int) -> None:
            torch.manual_seed(seed)

        manual_seed_all = manual_seed

        def set_allocator_settings(self, settings: Any) -> None:
            pass

        def empty_cache(self) -> None:
            pass

        def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
            return None, None

        def communication_backend_name(self) -> str:
            return "gloo"

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      VERL_ENGINE_DEVICE="cuda")
    dist.init_process_group(backend="gloo", rank=0, world_size=1)
    set_platform(PlatformCPU())


def build_engine(model_path: str, micro_batch: int) -> Any:
    """veRL's actor engine (``FSDPEngineWithLMHead``) on the model, built and initialised as its worker does."""
    from verl.trainer.config import CheckpointConfig
    from verl.workers.config import FSDPEngineConfig, FSDPOptimizerConfig, HFModelConfig
    from verl.workers.engine import EngineRegistry

    model_config = HFModelConfig(path=model_path, override_config={"attn_implementation": "sdpa"},
                                 use_remove_padding=True, enable_gradient_checkpointing=False)
    engine_config = FSDPEngineConfig(strategy="fsdp2", forward_only=False, model_dtype="fp32",
                                     mixed_precision={"param_dtype": "fp32", "reduce_dtype": "fp32",
                                                      "buffer_dtype": "fp32"},
                                     use_torch_compile=False, use_dynamic_bsz=False, micro_batch_size_per_gpu=micro_batch,
                                     infer_micro_batch_size_per_gpu=micro_batch, fsdp_size=-1)
    engine_config.use_remove_padding = True
    engine_config.use_fused_kernels = False
    model_config.model_type = "language_model"
    engine = EngineRegistry.new(model_type="language_model", backend="fsdp2", model_config=model_config,
                                engine_config=engine_config, optimizer_config=FSDPOptimizerConfig(lr=1e-6),
                                checkpoint_config=CheckpointConfig())
    engine.initialize()
    return engine


class EngineWorkers:
    """veRL's actor worker group as our trainer calls it, one rank: ``compute_log_prob`` reads the stored rows
    (every field, with the batch's ``extra_info``, as veRL's TransferQueue bridge does), runs the engine's
    ``infer_batch`` under the worker's default keys, and stores ``log_probs`` back."""

    def __init__(self, engine: Any, rows: dict, micro_batch: int) -> None:
        self.engine, self.rows, self.micro_batch = engine, rows, micro_batch
        self._dispatch_info = {"actor": [0]}
        self.batches: list[int] = []

    def compute_log_prob(self, meta: Any) -> Any:
        import torch
        from tensordict import TensorDict
        from verl.utils import tensordict_utils as tu

        stored = [self.rows[(meta.partition_id, key)] for key in meta.keys]
        data = TensorDict({name: torch.nested.as_nested_tensor([row[name] for row in stored], layout=torch.jagged)
                           for name in stored[0]}, batch_size=[len(stored)])
        tu.assign_non_tensor(data, **meta.extra_info)
        tu.assign_non_tensor(data, use_remove_padding=True, use_dynamic_bsz=False, max_token_len_per_gpu=None,
                             micro_batch_size_per_gpu=self.micro_batch, use_fused_kernels=False)
        with self.engine.eval_mode(disable_auto_offload=False):
            output = self.engine.infer_batch(data, loss_function=None)
        for row, log_probs in zip(stored, output["model_output"]["log_probs"].unbind(), strict=True):
            row["log_probs"] = log_probs.float()
        self.batches.append(len(stored))
        return meta


def score_check(micro_batch: int) -> dict[str, Any]:
    """The collapse diagnostics' :class:`WorkerScorer` through the engine against the local forward."""
    import torch
    import transfer_queue
    from tensordict import TensorDict
    from transformers import AutoModelForCausalLM

    from ragen_bench.agents.sampling import resolve_model_path
    from ragen_bench.integrations.verl import collapse
    from ragen_bench.train.collapse_probe import model_scorer

    model_path = str(resolve_model_path("tiny"))
    rows: dict = {}

    def put(keys, partition_id, fields, tags=None):
        for n, key in enumerate(keys):
            rows[(partition_id, key)] = {name: fields[name].unbind()[n] for name in fields.keys()}

    def get(keys, partition_id, select_fields):
        return TensorDict({name: torch.nested.as_nested_tensor([rows[(partition_id, k)][name] for k in keys],
                                                               layout=torch.jagged) for name in select_fields},
                          batch_size=[len(keys)])

    def clear(keys, partition_id):
        for key in keys:
            del rows[(partition_id, key)]

    transfer_queue.kv_batch_put, transfer_queue.kv_batch_get, transfer_queue.kv_clear = put, get, clear
    workers = EngineWorkers(build_engine(model_path, micro_batch), rows, micro_batch)

    generator = torch.Generator().manual_seed(0)
    contexts = [torch.randint(3, 500, (int(n),), generator=generator).tolist() for n in (40, 25, 33)]
    contexts.append(list(contexts[1]))  # a repeated prompt: scored once, its column copied
    reasonings = [torch.randint(3, 500, (int(n),), generator=generator).tolist() for n in (9, 1, 14, 5, 7)]
    multiple = 3 * micro_batch
    mean, total = collapse.WorkerScorer(workers, temperature=0.7, multiple=multiple, step=1)(contexts, reasonings)
    model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True, dtype=torch.float32).eval()
    local_mean, local_total = model_scorer(model, temperature=0.7, micro_batch=2, pad_id=0)(contexts, reasonings)
    return {
        "max_abs_total": float((total - local_total).abs().max()),
        "max_abs_mean": float((mean - local_mean).abs().max()),
        "batches": workers.batches, "multiple": multiple, "left_in_queue": len(rows),
        "repeated_column_equal": bool(torch.equal(total[:, 1], total[:, 3])),
    }


def update_check(micro_batch: int, preset: str = "starpo-s") -> dict[str, Any]:
    """veRL's actor update step (its ``ppo_loss`` through the engine's forward-backward) against the local
    trainer's ``policy_loss`` on the same multi-turn rows (replies with observation gaps between them), the
    same old log-probs and advantages, under the train ``preset``'s settings as the recipe maps them."""
    from functools import partial

    import torch
    from tensordict import TensorDict
    from transformers import AutoModelForCausalLM
    from verl.utils import tensordict_utils as tu
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.utils.losses import ppo_loss

    from ragen_bench.agents.sampling import resolve_model_path
    from ragen_bench.integrations.verl import job, recipe
    from ragen_bench.starpo.forward import token_log_probs
    from ragen_bench.starpo.losses import policy_loss
    from tests_verl.conftest import train_config

    model_path = str(resolve_model_path("tiny"))
    engine = build_engine(model_path, micro_batch)
    # The clipped surrogate only (kl.coef=0): the KL terms are compared on tensors in test_core_algos_parity.py.
    verl_config = job.compose_verl(recipe.verl_overrides(train_config(preset, ["model=tiny", "kl.coef=0"])))
    actor = omega_conf_to_dataclass(verl_config.actor_rollout_ref.actor)
    temperature = float(verl_config.actor_rollout_ref.rollout.temperature)

    generator = torch.Generator().manual_seed(1)
    specs = [(6, [1, 1, 1, 0, 0, 1, 1]), (4, [1, 1, 1, 1, 1]), (5, [1, 0, 1, 1, 0, 0, 1, 1, 1]), (3, [1, 1, 0, 1])]
    rows = [(p, torch.randint(3, 400, (p + len(mask),), generator=generator), torch.tensor(mask)) for p, mask in specs]
    width = max(len(ids) for _, ids, _ in rows)
    input_ids = torch.zeros(len(rows), width, dtype=torch.long)
    attention = torch.zeros_like(input_ids)
    response = torch.zeros_like(input_ids, dtype=torch.bool)
    for b, (p, ids, mask) in enumerate(rows):
        input_ids[b, : len(ids)], attention[b, : len(ids)], response[b, p : len(ids)] = ids, 1, mask.bool()

    # The local trainer's loss and gradient.
    model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True, dtype=torch.float32).train()
    with torch.no_grad():
        start, _ = token_log_probs(model, input_ids, attention, response, temperature, with_entropy=False)
    old = start + 0.3 * torch.randn(start.shape, generator=generator) * response  # some ratios clip
    advantages = torch.randn(start.shape, generator=generator) * response
    new, _ = token_log_probs(model, input_ids, attention, response, temperature, with_entropy=False)
    loss, _ = policy_loss(new, old, advantages, response, actor.clip_ratio_low, actor.clip_ratio_high, actor.clip_ratio_c,
                          agg=actor.loss_agg_mode)
    loss.backward()
    local = [param.grad for param in model.parameters()]

    # veRL's: the rows in its layout (old log-probs and advantages over the response), one forward-backward.
    def jagged(items):
        return torch.nested.as_nested_tensor(list(items), layout=torch.jagged)

    data = TensorDict({
        "prompts": jagged(ids[:p] for p, ids, _ in rows), "responses": jagged(ids[p:] for p, ids, _ in rows),
        "response_mask": jagged(mask for _, _, mask in rows), "loss_mask": jagged(mask for _, _, mask in rows),
        "input_ids": jagged(ids for _, ids, _ in rows), "attention_mask": jagged(torch.ones_like(ids) for _, ids, _ in rows),
        "position_ids": jagged(torch.arange(len(ids)) for _, ids, _ in rows),
        "old_log_probs": jagged(old[b, p : len(ids)] for b, (p, ids, _) in enumerate(rows)),
        "advantages": jagged(advantages[b, p : len(ids)] for b, (p, ids, _) in enumerate(rows)),
    }, batch_size=[len(rows)])
    tu.assign_non_tensor(data, calculate_entropy=False, compute_loss=True, temperature=temperature,
                         global_batch_size=len(rows), use_remove_padding=True, use_dynamic_bsz=False,
                         micro_batch_size_per_gpu=micro_batch, use_fused_kernels=False)
    engine.optimizer_zero_grad()
    with engine.train_mode():
        output = engine.forward_backward_batch(data, partial(ppo_loss, config=actor), forward_only=False)
        theirs = [param.grad.full_tensor() if hasattr(param.grad, "full_tensor") else param.grad
                  for param in engine.module.parameters()]
        worst = max(float((a - b).abs().max() / b.abs().max().clamp(min=1e-12)) for a, b in zip(theirs, local, strict=True))
    return {"local_loss": float(loss), "verl_loss": float(sum(output["loss"])), "max_relative_grad_diff": worst,
            "agg": actor.loss_agg_mode, "clipped": float(((new - old).exp() - 1).abs().gt(0.2).float()[response].mean())}


def main() -> None:
    use_cpu_platform()
    import torch

    torch.set_num_threads(1)
    check, micro_batch, *preset = sys.argv[1:]
    print(json.dumps({"score": score_check, "update": update_check}[check](int(micro_batch), *preset)))


if __name__ == "__main__":
    main()
