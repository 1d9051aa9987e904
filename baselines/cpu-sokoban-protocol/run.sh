#!/usr/bin/env bash
# cpu-sokoban-protocol: does RL beat its own warm start on Sokoban-6x6 by the protocol of
# docs/train.md ("Claiming a gain"): attempts and checkpoints chosen on the validation panel only,
# the test panel scored once per chosen checkpoint on three sampling streams fixed in advance
# (stream_seed(0, k), k = 1, 2, 3) plus greedy, the claim the pooled paired sign test.
# The `small` model (4-layer Llama, 3.3M parameters, built here), cpu-sokoban-grpo's warm start,
# then StarPO-S with GRPO advantages.  Run from the repository root;
# PHASE=sft|rl|test|generalization|all (default all).  Results, curves and times: README.md here.
#
# Re-scoring the committed pair on streams of your own (no training needed):
#   START=baselines/cpu-sokoban-protocol/checkpoints/start \
#   TRAINED=baselines/cpu-sokoban-protocol/checkpoints/trained \
#   STREAMS="11 12 13 greedy" PHASE=test OUT=runs/my-streams baselines/cpu-sokoban-protocol/run.sh
# scores both on streams stream_seed(0, 11..13) plus greedy and prints the pooled paired test.
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
OUT=${OUT:-runs/baselines/cpu-sokoban-protocol}
PHASE=${PHASE:-all}
COMMON="env=RAGEN/Sokoban-6x6-v0 chat.think=false rollout.max_new_tokens=24"

# 1. Warm start: cpu-sokoban-grpo's, the optimal agent's won episodes on 1,024 train seeds.
if [[ $PHASE == sft || $PHASE == all ]]; then
  $RB train preset=starpo-s algo=sft model=small sft.agent=optimal sft.episodes=1024 sft.epochs=2 \
    sft.batch=16 sft.lr=2e-3 actor.micro_batch=16 $COMMON threads=${THREADS:-2} val.every=0 test.split=null out=$OUT/sft
fi
START=${START:-$OUT/sft/checkpoints/$(cat $OUT/sft/checkpoints/latest 2>/dev/null || true)/model}

# 2. RL: cpu-sokoban-grpo's attempt 9 (GRPO, StarPO-S's filter keeping 4 of 16 groups, format
#    penalty -1, KL 0.05 to the warm start), run longer.  Validation on the whole validation panel
#    (256 seeds, one sample each) at T = 0.5 every 20 steps, from the trainer's own eval stream
#    (derived_seed(0, "eval")), which is none of the test streams; checkpoints are chosen there.
if [[ $PHASE == rl || $PHASE == all ]]; then
  $RB train preset=starpo-s model=$START $COMMON threads=${RL_THREADS:-1} advantage.estimator=${ESTIMATOR:-grpo} \
    filter.ratio=0.25 rollout.temperature=1.0 rollout.groups=16 rollout.group_size=8 \
    actor.lr=${RL_LR:-2e-4} actor.mini_batch=32 actor.micro_batch=16 critic.lr=${CRITIC_LR:-1e-5} \
    chat.format_penalty=-1.0 kl.coef=0.05 actor.entropy_coef=0 \
    steps=${STEPS:-160} val.every=20 val.limit=null val.samples=${VAL_SAMPLES:-1} val.before_train=${VAL0:-true} \
    checkpoint.every=20 checkpoint.keep=10 test.split=null out=$OUT/${RUN:-rl}
fi
# The checkpoint chosen on validation (README.md, "Choosing"): TRAINED=path/to/model.
TRAINED=${TRAINED:-$OUT/rl/checkpoints/$(cat $OUT/rl/checkpoints/latest 2>/dev/null || true)/model}
EVAL="split=test agent=hf agent.num_threads=1 agent.max_new_tokens=24 chat.think=false progress=false"

# 3. The test panel, once per model: streams k of the recipe's seed 0 at T = 0.5, and greedy.
#    SIDES="start" (or "trained") scores one model only; the pooled test runs once both are there.
if [[ $PHASE == test || $PHASE == all ]]; then
  pairs=()
  for k in ${STREAMS:-1 2 3 greedy}; do
    if [[ $k == greedy ]]; then stream="agent.temperature=0"; else stream="agent.temperature=0.5 sampling_seed=\${test_stream:0,$k}"; fi
    for side in ${SIDES:-start trained}; do
      model=$START; [[ $side == trained ]] && model=$TRAINED
      $RB eval env=RAGEN/Sokoban-6x6-v0 $EVAL agent.model=$model $stream out=$OUT/test/$side-$k
    done
    pairs+=($OUT/test/start-$k $OUT/test/trained-$k)
  done
  if [[ -z ${SIDES:-} ]]; then $RB compare --paired "${pairs[@]}"; fi
fi

# 4. Generalization, stream 1: the held-out symbol set and the larger rooms.
if [[ $PHASE == generalization || $PHASE == all ]]; then
  for env in RAGEN/Sokoban-6x6-AltVocab-v0 RAGEN/Sokoban-8x8-v0; do
    for side in ${SIDES:-start trained}; do
      model=$START; [[ $side == trained ]] && model=$TRAINED
      $RB eval env=$env $EVAL agent.model=$model agent.temperature=0.5 'sampling_seed=${test_stream:0,1}' \
        out=$OUT/generalization/$(basename $env)-$side
    done
  done
fi
