#!/usr/bin/env bash
# cpu-tictactoe-small: does RL against a fixed opponent raise the win rate over its own warm start, on CPU?
# The `small` model (a 4-layer Llama built here, ~3.3M parameters, nothing downloaded), a supervised
# warm start on the minimax player's won and drawn games against `random` (train seeds, seats
# alternating), then StarPO-S with GRPO advantages against `random` on RAGEN/TicTacToe-v0.  One torch
# thread throughout (2 cores shared with other jobs).  Run from the repository root;
# PHASE=sft|rl|streams|transfer|all (default all).  Results, times and choices: README.md here.
set -euo pipefail
RB=${RB:-.venv/bin/ragen-bench}
OUT=${OUT:-runs/baselines/cpu-tictactoe-small}
PHASE=${PHASE:-all}
GAME="env=RAGEN/TicTacToe-v0 opponent=random chat.think=false rollout.max_new_tokens=16 threads=1 sampling_threads=1"

# 1. Warm start: minimax's games against random on the first 512 decontaminated train seeds (it never
#    loses, so every game is kept), batches of 16.  The recorded run was stopped after its step-40
#    checkpoint (1.25 of the 2 epochs, 44 s a step on the loaded machine) so that RL could start in time:
#    the warm start is step 40 (the same weights a full run writes at step 40: data order and sampling
#    depend on the seed only).
if [[ $PHASE == sft || $PHASE == all ]]; then
  $RB train $GAME algo=sft model=small sft.agent=minimax sft.episodes=512 sft.epochs=2 sft.batch=16 sft.lr=2e-3 \
    actor.micro_batch=16 val.every=0 test.split=null checkpoint.keep=10 out=$OUT/sft
fi
START=${START:-$OUT/sft/checkpoints/step-000040/model}

# 2. RL against random: 4 seeds x 8 games per step, StarPO-S keeps the half of the groups whose
#    outcomes spread most, GRPO advantages, a format penalty of -1 and a KL term to the warm start (the
#    two settings that held the format in cpu-sokoban-grpo).  Validation on the first 64 val seeds
#    against random every 5 steps (sized for a machine where this run got a fifth of a core).
if [[ $PHASE == rl || $PHASE == all ]]; then
  $RB train preset=starpo-s $GAME model=$START advantage.estimator=grpo filter.ratio=0.5 rollout.groups=4 \
    rollout.group_size=8 actor.lr=${RL_LR:-2e-4} actor.mini_batch=16 actor.micro_batch=16 chat.format_penalty=-1.0 \
    kl.coef=0.05 actor.entropy_coef=0 collapse_detection.compute_freq=0 steps=${STEPS:-20} val.every=5 \
    val.limit=64 val.before_train=false checkpoint.every=5 checkpoint.keep=10 test.split=null out=$OUT/rl
fi
TRAINED=${TRAINED:-baselines/cpu-tictactoe-small/trained}

# 3. The protocol (docs/train.md, "Claiming a gain"): the warm start and the chosen checkpoint on the
#    test panel against random, on test streams 1-3 of the recipe's seed (0) at T = 0.5 plus greedy,
#    then the pooled paired test (wins: success is a win).  STREAM_LIMIT: the first N test seeds.
if [[ $PHASE == streams || $PHASE == all ]]; then
  EVAL="env=RAGEN/TicTacToe-v0 opponent=random split=test agent=hf agent.max_new_tokens=16 chat.think=false \
    budget=none progress=false limit=${STREAM_LIMIT:-null}"
  PAIRS=()
  for k in ${STREAMS:-1 2 3 greedy}; do
    if [[ $k == greedy ]]; then STREAM="agent.temperature=0"
    else STREAM="agent.temperature=0.5 sampling_seed=\${test_stream:0,$k}"; fi
    for model in ${SIDES:-start:$START trained:$TRAINED}; do  # SIDES: one side only (the other later)
      $RB eval $EVAL $STREAM agent.model=${model#*:} out=$OUT/streams/${model%%:*}-$k
      PAIRS+=("$OUT/streams/${model%%:*}-$k")
    done
  done
  if [[ -z ${SIDES:-} ]]; then $RB compare --paired "${PAIRS[@]}"; fi
fi

# 4. Transfer: the same two checkpoints on a single-agent id, stream 1.
if [[ $PHASE == transfer || $PHASE == all ]]; then
  for model in start:$START trained:$TRAINED; do
    $RB eval env=${TRANSFER_ENV:-RAGEN/Bandit-v0} split=test agent=hf agent.max_new_tokens=16 chat.think=false \
      agent.temperature=0.5 'sampling_seed=${test_stream:0,1}' progress=false limit=${TRANSFER_LIMIT:-null} \
      agent.model=${model#*:} out=$OUT/transfer/${model%%:*}
  done
  $RB compare --paired $OUT/transfer/start $OUT/transfer/trained
fi
