"""The ``hf`` agent's stop strings and its LoRA-adapter checkpoints (tiny model, no downloads).

Stop strings are checked against a brute-force oracle: a reply generated with no stop
strings is recorded token by token, and with stop strings the same request (same seed,
same batch) must end at the shortest token prefix whose decoded text contains one of them.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.agents.hf import HFAgent  # noqa: E402
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings  # noqa: E402
from ragen_bench.chat import AgentError, AgentRequest  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from tests.conftest import one_line_error  # noqa: E402

MAX_NEW_TOKENS = 24
PROMPT_MARK = "zebra</answer>quartz"  # in every prompt below, so a stop string taken from it must not fire


class RecordingAgent(HFAgent):
    """An ``hf`` agent that keeps each reply's token ids (up to where the reply ended)."""

    def _reply(self, new_ids, prompt_tokens, *, string_end=None):
        reply = super()._reply(new_ids, prompt_tokens, string_end=string_end)
        self.ids.append(new_ids[: reply.completion_tokens])
        return reply


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _requests(n: int = 4) -> list[AgentRequest]:
    return [
        AgentRequest(
            messages=[{"role": "user", "content": f"State {i}: # _ O X P {PROMPT_MARK}. Your move?"}],
            episode_key=f"RAGEN/Bandit-v0/test/{i}/0",
            turn=1,
        )
        for i in range(n)
    ]


def _run(tiny, stop_strings, *, temperature=1.0):
    """(replies, ids per reply) for the same four requests in one batch."""
    model, tokenizer = tiny
    sampling = SamplingSettings(temperature=temperature, max_new_tokens=MAX_NEW_TOKENS, sampling_seed=7)
    agent = RecordingAgent(model, tokenizer, sampling=sampling, generate_batch=4, stop_strings=stop_strings)
    agent.ids = []
    return agent.act(_requests()), agent.ids


@pytest.fixture(scope="module")
def free(tiny):
    """The replies without stop strings, and their ids."""
    return _run(tiny, ())


def _text(tokenizer, ids, *, special=False):
    return tokenizer.decode(ids, skip_special_tokens=not special, clean_up_tokenization_spaces=False)


def _oracle_length(tokenizer, ids, stops):
    """The length of the shortest prefix of ``ids`` whose text contains a stop string, else None."""
    for n in range(1, len(ids) + 1):
        if any(stop in _text(tokenizer, ids[:n], special=True) for stop in stops):
            return n
    return None


def _assert_matches_oracle(tokenizer, free, stopped, stops):
    (free_replies, free_ids), (replies, ids) = free, stopped
    for row, (free_reply, row_ids, reply, got) in enumerate(zip(free_replies, free_ids, replies, ids, strict=True)):
        end = _oracle_length(tokenizer, row_ids, stops)
        if end is None:
            assert reply == free_reply, f"row {row} holds no stop string and must be unchanged"
        else:
            assert got == row_ids[:end], f"row {row} must end right after the token completing a stop string"
            assert reply.completion_tokens == end and reply.finish_reason == "stop"
            assert reply.text == _text(tokenizer, row_ids[:end])


def _split_stop_string(tokenizer, ids):
    """A stop string that starts inside one token and ends inside the next (never seen earlier), and where."""
    pieces = [_text(tokenizer, [token], special=True) for token in ids]
    for k in range(len(pieces) - 1):
        left, right = pieces[k], pieces[k + 1]
        if len(left) >= 2 and len(right) >= 2 and "\ufffd" not in left + right:
            stop = left[-1] + right[:-1]
            if _oracle_length(tokenizer, ids, [stop]) == k + 2:
                return stop, k + 2
    return None


def test_a_stop_string_split_across_tokens_ends_the_reply_after_the_token_completing_it(tiny, free):
    tokenizer = tiny[1]
    found = [(row, _split_stop_string(tokenizer, ids)) for row, ids in enumerate(free[1])]
    found = [(row, hit) for row, hit in found if hit is not None]
    assert found, "the tiny model's replies have multi-character tokens to split a stop string across"
    row, (stop, end) = found[0]
    stopped = _run(tiny, [stop])
    replies, ids = stopped
    assert replies[row].completion_tokens == end < free[0][row].completion_tokens
    assert replies[row].finish_reason == "stop"
    # The reply's text runs through the whole completing token, so it may run past the stop string.
    assert stop in replies[row].text and stop not in _text(tokenizer, ids[row][:-1])
    _assert_matches_oracle(tokenizer, free, stopped, [stop])


def _single_byte_run(tokenizer, ids, length=4):
    """A stop string spelled by ``length`` one-byte tokens in a row (never seen earlier), and where it ends."""
    pieces = [_text(tokenizer, [token], special=True) for token in ids]
    for end in range(length, len(ids) + 1):
        run = pieces[end - length : end]
        if all(len(piece.encode()) == 1 for piece in run) and _oracle_length(tokenizer, ids, ["".join(run)]) == end:
            return "".join(run), end
    return None


def test_a_stop_string_of_one_byte_tokens_is_found_whole(tiny, free):
    # The hardest case for a decoded tail: one token per byte of the stop string.
    tokenizer = tiny[1]
    found = [(row, _single_byte_run(tokenizer, ids)) for row, ids in enumerate(free[1])]
    found = [(row, hit) for row, hit in found if hit is not None]
    assert found, "the tiny model's replies have runs of one-byte tokens"
    row, (stop, end) = found[0]
    replies, _ = _run(tiny, [stop])
    assert replies[row].completion_tokens == end and replies[row].finish_reason == "stop"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rows_stop_independently_at_the_first_of_several_stop_strings(tiny, free, data):
    tokenizer = tiny[1]
    texts = [_text(tokenizer, ids, special=True) for ids in free[1]]
    stops = []
    for _ in range(data.draw(st.integers(1, 3), label="how many")):
        text = texts[data.draw(st.integers(0, len(texts) - 1), label="row")]
        start = data.draw(st.integers(0, len(text) - 1), label="start")
        length = data.draw(st.integers(1, 6), label="length")
        stops.append(text[start : start + length])
    _assert_matches_oracle(tokenizer, free, _run(tiny, stops), stops)


def test_several_stop_strings_the_first_completed_wins_whatever_its_place_in_the_list(tiny, free):
    tokenizer = tiny[1]
    ids = free[1][0]
    early, late = _text(tokenizer, ids[:2], special=True), _text(tokenizer, ids, special=True)[-3:]
    assert _oracle_length(tokenizer, ids, [late]) > 2, "the late stop string does not occur in the first two tokens"
    for stops in ([late, early], [early, late]):
        replies, got = _run(tiny, stops)
        assert got[0] == ids[:2] and replies[0].finish_reason == "stop"


@pytest.mark.parametrize("stop", [PROMPT_MARK, "</answer>", "<|im_start|>assistant\n", "assistant"])
def test_a_stop_string_in_the_prompt_does_not_stop_the_reply(tiny, free, stop):
    tokenizer = tiny[1]
    assert all(stop not in _text(tokenizer, ids, special=True) for ids in free[1]), "precondition"
    replies, _ = _run(tiny, [stop])
    assert replies == free[0]


def test_stop_strings_work_with_greedy_decoding(tiny):
    tokenizer = tiny[1]
    free_greedy = _run(tiny, (), temperature=0.0)
    text = _text(tokenizer, free_greedy[1][1], special=True)
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    _assert_matches_oracle(tokenizer, free_greedy, _run(tiny, [stop], temperature=0.0), [stop])


def test_an_empty_list_turns_stop_strings_off_and_the_default_is_the_answer_tag(tiny):
    # Stop strings at the very first token would end every reply after one token; [] must not.
    replies, _ = _run(tiny, [])
    assert any(reply.completion_tokens > 1 for reply in replies)
    agent = make_agent("hf", model="tiny", max_new_tokens=4)
    assert agent._stop_strings.strings == ("</answer>",)


@pytest.mark.parametrize("bad", ["</answer>", [""], ["</answer>", 3], [None]])
def test_malformed_stop_strings_are_one_agent_error(bad):
    with pytest.raises(AgentError, match="stop_strings") as error:
        make_agent("hf", model="tiny", stop_strings=bad)
    assert "\n" not in str(error.value)


# -- LoRA adapters and full checkpoints ---------------------------------------------------------


def _save_adapter(folder, *, base="tiny", with_tokenizer=True):
    """A random (not zero-initialised) LoRA adapter on the tiny model saved in ``folder``; returns the merged model."""
    from peft import LoraConfig, get_peft_model

    model, tokenizer = load_model("tiny")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        lora = LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        wrapped = get_peft_model(model, lora)
    wrapped.peft_config["default"].base_model_name_or_path = base
    wrapped.save_pretrained(folder, save_embedding_layers=False)  # no hub lookup of the base
    if with_tokenizer:
        tokenizer.save_pretrained(folder)
    return wrapped.merge_and_unload()


def _greedy_texts(model, tokenizer):
    sampling = SamplingSettings(temperature=0.0, max_new_tokens=12)
    return [r.text for r in HFAgent(model, tokenizer, sampling=sampling, stop_strings=()).act(_requests())]


@pytest.mark.parametrize("with_tokenizer", [True, False])
def test_an_adapter_directory_generates_what_the_merged_model_generates(tmp_path, tiny, with_tokenizer):
    merged = _save_adapter(tmp_path / "adapter", with_tokenizer=with_tokenizer)
    expected = _greedy_texts(merged, tiny[1])
    assert expected != _greedy_texts(*tiny), "the adapter changes the model's replies"
    agent = make_agent("hf", model=str(tmp_path / "adapter"), temperature=0.0, max_new_tokens=12, stop_strings=[])
    assert [r.text for r in agent.act(_requests())] == expected
    assert not any("lora" in name for name, _ in agent.model.named_parameters()), "the adapter is merged"


def test_an_adapter_and_a_full_checkpoint_evaluate_alike_from_the_cli(tmp_path, tiny, capsys):
    merged = _save_adapter(tmp_path / "adapter")
    merged.save_pretrained(tmp_path / "full")
    tiny[1].save_pretrained(tmp_path / "full")
    records = {}
    for kind in ("adapter", "full"):
        out = tmp_path / f"run-{kind}"
        args = ["env=RAGEN/Bandit-v0", "limit=2", "agent=hf", f"agent.model={tmp_path / kind}",
                "agent.max_new_tokens=8", "progress=false", f"out={out}"]
        assert main(["eval", *args]) == 0, capsys.readouterr().err
        lines = (out / "episodes.jsonl").read_text().splitlines()
        records[kind] = sorted((r["seed"], [t["raw_response"] for t in r["turns"]]) for r in map(json.loads, lines))
    assert records["adapter"] == records["full"] and len(records["adapter"]) == 2


def _adapter_config(folder, **fields):
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps(fields))
    return folder


def test_an_adapter_whose_base_is_missing_is_one_line_naming_the_base(tmp_path, capsys):
    adapter = _adapter_config(tmp_path / "adapter", base_model_name_or_path=str(tmp_path / "gone"))
    with pytest.raises(AgentError, match="base model not found") as error:
        make_agent("hf", model=str(adapter))
    assert "\n" not in str(error.value) and "gone" in str(error.value)
    out = tmp_path / "run"
    assert main(["eval", "env=RAGEN/Bandit-v0", "limit=1", "agent=hf", f"agent.model={adapter}", f"out={out}"]) == 2
    one_line_error(capsys, "adapter_config.json", "gone")


@pytest.mark.parametrize("fields", [{}, {"base_model_name_or_path": None}, {"base_model_name_or_path": 3}])
def test_an_adapter_config_without_a_base_is_one_agent_error(tmp_path, fields):
    with pytest.raises(AgentError, match="adapter_config.json.*base_model_name_or_path"):
        make_agent("hf", model=str(_adapter_config(tmp_path / "adapter", **fields)))


def test_an_adapter_without_peft_says_how_to_install_it(tmp_path, monkeypatch):
    adapter = _adapter_config(tmp_path / "adapter", base_model_name_or_path="tiny")
    monkeypatch.setitem(sys.modules, "peft", None)  # makes `import peft` fail
    with pytest.raises(AgentError, match=r"LoRA adapter, which needs peft: pip install 'ragen-bench\[train\]'"):
        make_agent("hf", model=str(adapter))
