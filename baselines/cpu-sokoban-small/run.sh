#!/usr/bin/env bash
# cpu-sokoban-small: a 4-layer Llama built here from random weights (the `small` alias, ~3.3M
# parameters, nothing downloaded), a supervised warm start on the optimal agent's train-seed
# episodes, then StarPO-S and, with the same budget, StarPO without the filter, on
# RAGEN/Sokoban-6x6-v0.  Run from the repository root; PHASE=sft|starpo-s|starpo|all (default all).
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
OUT=${OUT:-runs/baselines/cpu-sokoban-small}
PHASE=${PHASE:-all}
COMMON="env=RAGEN/Sokoban-6x6-v0 chat.think=false rollout.max_new_tokens=24 threads=${THREADS:-2}"

if [[ $PHASE == sft || $PHASE == all ]]; then
  $RB train preset=starpo-s algo=sft model=small sft.agent=optimal sft.episodes=${SFT_EPISODES:-1024} \
    sft.epochs=${SFT_EPOCHS:-2} sft.batch=16 sft.lr=2e-3 actor.micro_batch=16 $COMMON val.every=0 out=$OUT/sft
fi
START=$OUT/sft/checkpoints/$(cat $OUT/sft/checkpoints/latest)/model
# RL from the warm start: 8 groups x 8 episodes per step, one optimiser step per batch.
RL="model=$START $COMMON rollout.groups=8 rollout.group_size=8 actor.lr=${RL_LR:-1e-4} critic.lr=1e-3 \
  actor.mini_batch=64 actor.micro_batch=8 steps=${STEPS:-20} val.every=10 val.limit=64"
if [[ $PHASE == starpo-s || $PHASE == all ]]; then
  $RB train preset=starpo-s $RL filter.ratio=0.25 out=$OUT/starpo-s
fi
if [[ $PHASE == starpo || $PHASE == all ]]; then
  $RB train preset=starpo-s $RL filter.ratio=1.0 out=$OUT/starpo
fi
