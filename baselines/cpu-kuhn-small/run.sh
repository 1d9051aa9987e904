#!/usr/bin/env bash
# cpu-kuhn-small: does RL against a fixed opponent make a model win more Kuhn poker games than its own
# warm start, on CPU?  The `small` model (a 4-layer Llama built here, ~3.3M parameters, nothing
# downloaded), a format-only warm start (the random player's games against `random`, every game kept,
# so its moves carry no preference), then StarPO-S with GRPO advantages against `random` on
# RAGEN/OS-KuhnPoker-v0; the reward is the chat layer's +1 a win / -1 a loss.  One torch thread
# throughout (2 cores shared with other jobs).  Run from the repository root;
# PHASE=sft|rl|test|transfer|all (default all), or mcts.  Results, times and the pre-registered choice: README.md.
#
# Re-scoring the committed pair on streams of your own (no training needed):
#   START=baselines/cpu-kuhn-small/checkpoints/start TRAINED=baselines/cpu-kuhn-small/checkpoints/trained \
#   STREAMS="11 12 greedy" PHASE=test OUT=runs/my-streams baselines/cpu-kuhn-small/run.sh
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
OUT=${OUT:-runs/baselines/cpu-kuhn-small}
PHASE=${PHASE:-all}
GAME="env=RAGEN/OS-KuhnPoker-v0 opponent=random chat.think=false rollout.max_new_tokens=16 threads=1 sampling_threads=1"

# 1. Warm start: the random player's games against random on the first 512 decontaminated train seeds,
#    every game (sft.agent=random keeps lost games too), 2 epochs in batches of 16: 64 steps.
if [[ $PHASE == sft || $PHASE == all ]]; then
  $RB train $GAME algo=sft model=small sft.agent=random sft.episodes=512 sft.epochs=2 sft.batch=16 sft.lr=2e-3 \
    actor.micro_batch=16 val.every=0 test.split=null out=$OUT/sft
fi
START=${START:-$OUT/sft/checkpoints/step-000064/model}

# 2. RL against random: 8 seeds x 8 games a step at T = 1, StarPO-S's filter keeping the half of the
#    groups whose outcomes spread most, GRPO advantages, format penalty -1, a light KL (0.01, k3) to the
#    warm start.  Validation on the whole validation panel (256 seeds) at T = 0.5 before training and
#    every 15 steps, on the trainer's own eval stream; it is reported, it chooses nothing: the scored
#    checkpoint is the last step, fixed in README.md before any RL ran.
if [[ $PHASE == rl || $PHASE == all ]]; then
  $RB train preset=starpo-s $GAME model=$START advantage.estimator=grpo filter.ratio=0.5 rollout.groups=8 \
    rollout.group_size=8 rollout.temperature=1.0 actor.lr=${RL_LR:-1e-3} actor.mini_batch=32 actor.micro_batch=16 \
    chat.format_penalty=-1.0 kl.coef=0.01 actor.entropy_coef=0 collapse_detection.compute_freq=0 \
    steps=${STEPS:-30} val.every=15 val.limit=null val.before_train=true checkpoint.every=15 checkpoint.keep=10 \
    test.split=null out=$OUT/rl
fi
TRAINED=${TRAINED:-$OUT/rl/checkpoints/step-0000${STEPS:-30}/model}

# 3. The protocol (docs/train.md, "Claiming a gain"): both checkpoints on the whole test panel (256
#    seeds, seats alternating) against random, on test streams k of the recipe's seed (0) at T = 0.5
#    plus greedy, then the pooled paired test on wins.  SIDES="start" (or "trained"): one side only.
if [[ $PHASE == test || $PHASE == all ]]; then
  EVAL="env=RAGEN/OS-KuhnPoker-v0 opponent=random split=test agent=hf agent.num_threads=1 agent.max_new_tokens=16 \
    chat.think=false progress=false"
  pairs=()
  for k in ${STREAMS:-1 2 3 greedy}; do
    if [[ $k == greedy ]]; then stream="agent.temperature=0"
    else stream="agent.temperature=0.5 sampling_seed=\${test_stream:0,$k}"; fi
    for side in ${SIDES:-start trained}; do
      model=$START; [[ $side == trained ]] && model=$TRAINED
      $RB eval $EVAL $stream agent.model=$model out=$OUT/test/$side-$k
    done
    pairs+=($OUT/test/start-$k $OUT/test/trained-$k)
  done
  if [[ -z ${SIDES:-} ]]; then $RB compare --paired "${pairs[@]}"; fi
fi

# 4. Transfer: the same two checkpoints on a single-agent id (stream 1, the whole test panel).
if [[ $PHASE == transfer || $PHASE == all ]]; then
  for side in start trained; do
    model=$START; [[ $side == trained ]] && model=$TRAINED
    $RB eval env=${TRANSFER_ENV:-RAGEN/Bandit-v0} split=test agent=hf agent.num_threads=1 agent.max_new_tokens=16 \
      chat.think=false agent.temperature=0.5 'sampling_seed=${test_stream:0,1}' progress=false agent.model=$model \
      out=$OUT/transfer/$side
  done
  $RB compare --paired $OUT/transfer/start $OUT/transfer/trained
fi

# 5. (Added after the result, not pre-registered.)  Both checkpoints against the stronger mcts opponent,
#    the whole test panel, stream 1.
if [[ $PHASE == mcts ]]; then
  for side in start trained; do
    model=$START; [[ $side == trained ]] && model=$TRAINED
    $RB eval env=RAGEN/OS-KuhnPoker-v0 opponent=mcts split=test agent=hf agent.num_threads=1 agent.max_new_tokens=16 \
      chat.think=false agent.temperature=0.5 'sampling_seed=${test_stream:0,1}' progress=false agent.model=$model \
      out=$OUT/mcts/$side-1
  done
  $RB compare --paired $OUT/mcts/start-1 $OUT/mcts/trained-1
fi
