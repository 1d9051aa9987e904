#!/usr/bin/env bash
# cpu-sokoban-grpo: does RL raise multi-turn success over its own warm start, on 2 CPU cores, in
# 60 minutes?  The `small` model (a 4-layer Llama built here, ~3.3M parameters, nothing
# downloaded), a supervised warm start on the optimal agent's train-seed episodes, then StarPO-S
# with group-normalised (GRPO) advantages on RAGEN/Sokoban-6x6-v0.  Run from the repository root;
# PHASE=sft|start-test|rl|test|generalization|all (default all).  Results and wall times: README.md here.
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
OUT=${OUT:-runs/baselines/cpu-sokoban-grpo}
PHASE=${PHASE:-all}
# RAGEN's chat limits (<= 5 turns, <= 5 actions per turn, <= 10 per episode), no-think template.
COMMON="env=RAGEN/Sokoban-6x6-v0 chat.think=false rollout.max_new_tokens=24"

# 1. Warm start: the optimal agent's won episodes on the first 1,024 decontaminated train seeds.
if [[ $PHASE == sft || $PHASE == all ]]; then
  $RB train preset=starpo-s algo=sft model=small sft.agent=optimal sft.episodes=1024 sft.epochs=2 \
    sft.batch=16 sft.lr=2e-3 actor.micro_batch=16 $COMMON threads=${THREADS:-2} val.every=0 test.split=null out=$OUT/sft
fi
START=$OUT/sft/checkpoints/$(cat $OUT/sft/checkpoints/latest)/model

# 2. The warm start on the whole test panel, with the trainer's validation sampling (T = 0.5, its
#    eval sampling seed), so `ragen-bench compare --paired` pairs it with the RL checkpoint's test run.
if [[ $PHASE == start-test || $PHASE == all ]]; then
  $RB train preset=starpo-s model=$START $COMMON threads=${THREADS:-2} steps=0 val.every=0 val.before_train=false out=$OUT/start
fi

# 3. RL: 16 seed groups x 8 episodes per step; keep the groups whose scores spread most (StarPO-S's
#    filter), advantages normalised within each group (GRPO: no critic to train).  Two settings
#    hold the format (README.md, "Why attempts 1-7 fell apart"): a format penalty of -1 (RAGEN's
#    -0.1 costs less than one wasted move) and a KL term to the warm start (0.05, k3) in place of
#    the entropy bonus.  These are attempt 9 of README.md, recorded with RL_THREADS=1 beside
#    another run; attempt 1 was PENALTY=-0.1 KL=0 ENTROPY=0.001 STEPS=30.
if [[ $PHASE == rl || $PHASE == all ]]; then
  $RB train preset=starpo-s model=$START $COMMON threads=${RL_THREADS:-1} advantage.estimator=grpo \
    filter.ratio=${KEEP:-0.25} rollout.temperature=${TEMP:-1.0} rollout.groups=16 rollout.group_size=8 \
    actor.lr=${RL_LR:-2e-4} actor.mini_batch=${MINI:-32} actor.micro_batch=16 \
    chat.format_penalty=${PENALTY:--1.0} kl.coef=${KL:-0.05} actor.entropy_coef=${ENTROPY:-0} \
    steps=${STEPS:-80} val.every=20 val.limit=128 val.before_train=false checkpoint.every=20 checkpoint.keep=10 \
    test.split=null out=$OUT/rl
fi
TRAINED=${TRAINED:-$OUT/rl/checkpoints/$(cat $OUT/rl/checkpoints/latest 2>/dev/null || true)/model}
EVAL="split=test agent=hf agent.temperature=0.5 agent.max_new_tokens=24 chat.think=false sampling_seed=2949865141 progress=false"

# 4. The test panel, paired: the RL checkpoint and its warm start with the same sampling settings and
#    seed (the format penalty changes rewards, not success, so these use eval's default chat).
if [[ $PHASE == test || $PHASE == all ]]; then
  for model in ${MODELS:-rl:$TRAINED start:$START}; do
    $RB eval env=RAGEN/Sokoban-6x6-v0 $EVAL agent.model=${model#*:} out=$OUT/test/${model%%:*}
  done
  $RB compare --paired $OUT/test/rl $OUT/test/start
fi

# 5. Generalization, as the paper asks: the held-out members of the Sokoban suite (larger rooms,
#    another symbol set, another env), whole test panels, for the RL checkpoint and its warm start,
#    with the same sampling settings and seed as the test runs above, so each pair is paired.
if [[ $PHASE == generalization || $PHASE == all ]]; then
  for env in RAGEN/Sokoban-8x8-v0 RAGEN/Sokoban-6x6-AltVocab-v0 RAGEN/FrozenLake-4x4-v0; do
    for model in ${MODELS:-rl:$TRAINED start:$START}; do
      $RB eval env=$env $EVAL agent.model=${model#*:} out=$OUT/generalization/$(basename $env)-${model%%:*}
    done
  done
fi
