"""Cost of the entropy filter metrics' no-grad forward (Trainer._episode_entropies) against the whole step.

Runs a short grpo training with filter.metric=entropy; any train overrides go on the command line:

    nice -n 19 .venv/bin/python scripts/measure_entropy_filter.py model=tiny env=RAGEN/Sokoban-6x6-v0 \
        rollout.groups=8 rollout.group_size=4 rollout.max_new_tokens=32 chat.max_turns=2 \
        actor.mini_batch=32 actor.micro_batch=4 steps=2
"""
import json
import sys
import tempfile
import time
from pathlib import Path
from ragen_bench.train import config as train_config, trainer

spent = []
real = trainer.Trainer._episode_entropies
def timed(self, batch):
    t = time.perf_counter(); out = real(self, batch); spent.append(time.perf_counter() - t); return out
trainer.Trainer._episode_entropies = timed
out = Path(tempfile.mkdtemp()) / "run"
args = sys.argv[1:] + [f"out={out}", "filter.mode=rollout", "filter.metric=entropy", "filter.strategy=top_k",
                       "filter.value=0.5", "val.every=0", "test.split=null", "log.progress=false",
                       "collapse_detection.compute_freq=0", "threads=1"]
trainer.train(train_config.from_preset("grpo", args))
rows = [json.loads(l) for l in (out / "metrics.jsonl").read_text().splitlines()]
for row, s in zip(rows, spent):
    print(f"step {row['step']}: entropy forward {s:.3f} s of step {row['time/step']:.3f} s "
          f"({100 * s / row['time/step']:.1f} %), rollout {row['time/rollout']:.3f} s, update {row.get('time/update', 0):.3f} s")
