#!/usr/bin/env bash
# trl-sokoban-grpo: cpu-sokoban-grpo's task (RAGEN/Sokoban-6x6-v0 from its warm start) trained by TRL's
# GRPOTrainer through ragen_bench.integrations.trl, then the test panel paired with the warm start.
# Needs the trl extra.  Run from the repository root; results and wall times: README.md here.
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
PY=${PY:-.venv/bin/python}
OUT=${OUT:-runs/baselines/trl-sokoban-grpo}
# 1. The warm start, built by cpu-sokoban-grpo's own phase 1 (2-3 minutes), unless START names one.
if [[ -z ${START:-} ]]; then
  OUT=$OUT/warm PHASE=sft RB="$RB" bash baselines/cpu-sokoban-grpo/run.sh
  START=$OUT/warm/sft/checkpoints/$(cat $OUT/warm/sft/checkpoints/latest)/model
fi
# 2. GRPO in TRL: GROUPS seeds x 8 episodes a step, STEPS steps (the recorded run: 5 x 8, README.md).
$PY baselines/trl-sokoban-grpo/train.py "$START" "$OUT" --steps "${STEPS:-5}" --groups "${GROUPS:-8}"
# 3. The first LIMIT test seeds with cpu-sokoban-grpo's eval settings, for the TRL model and its start, paired.
EVAL="env=RAGEN/Sokoban-6x6-v0 split=test limit=${LIMIT:-128} agent=hf agent.temperature=0.5 agent.max_new_tokens=24
  chat.think=false sampling_seed=2949865141 progress=false"
$RB eval $EVAL agent.model=$OUT/model out=$OUT/test/trl
$RB eval $EVAL agent.model=$START out=$OUT/test/start
$RB compare --paired $OUT/test/trl $OUT/test/start
