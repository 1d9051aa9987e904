"""Supervised warm-start data (ragen_bench.train.sft_data) and loss (ragen_bench.starpo.sft).

Records are checked against what is independently observable: the eval harness's own
episodes, a replay of the recorded replies through a fresh chat episode, the frozen
panels' held-out levels, ``datasets.load_dataset`` reading the files back, and token
layouts written out by hand for the tiny model's ChatML template.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from itertools import islice

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import one_line_error

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)  # the tiny model gains nothing from threads, and they contend on a loaded machine

import ragen_bench  # noqa: E402,F401  (registers the env ids)
from ragen_bench import panels  # noqa: E402
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path  # noqa: E402
from ragen_bench.chat import AgentReply, AgentRequest, ChatConfig, ChatEpisode, Trajectory, run_lockstep  # noqa: E402
from ragen_bench.chat.parser import parse_response  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from ragen_bench.eval import run_eval  # noqa: E402
from ragen_bench.eval.compose import compose_config  # noqa: E402
from ragen_bench.starpo.sft import sft_loss  # noqa: E402
from ragen_bench.train.policy_agent import PolicyAgent  # noqa: E402
from ragen_bench.train.sft_data import export_sft, sft_records, tokenize_sft  # noqa: E402

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
# Families with different reply shapes: several actions per turn, stochastic moves, one
# arm name, free-text answers.
REPLAY_ENVS = (SOKOBAN, "RAGEN/FrozenLake-4x4-v0", "RAGEN/Bandit-v0", "RAGEN/Countdown-v0", "RAGEN/MathQA-v0")


@pytest.fixture(scope="module")
def tiny():
    return load_model(resolve_model_path("tiny"))


def _train_seeds(env_id: str, count: int) -> list[int]:
    return list(islice(panels.decontaminated_train_seeds(env_id), count))


class ReplayAgent:
    """Sends each episode's recorded replies in order; sees only the chat, never the env."""

    name = "replay"

    def __init__(self, replies: dict[str, list[str]]) -> None:
        self.replies = replies

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [AgentReply(self.replies[r.episode_key][r.turn - 1]) for r in requests]

    def close(self) -> None:
        pass


def _replay(records: list[dict], config: ChatConfig) -> list[Trajectory]:
    episodes = [
        ChatEpisode(gymnasium.make(r["env_id"]), config, env_id=r["env_id"], seed=r["seed"], split="train")
        for r in records
    ]
    replies = {
        episode.key: [m["content"] for m in record["messages"] if m["role"] == "assistant"]
        for episode, record in zip(episodes, records)
    }
    return run_lockstep(episodes, ReplayAgent(replies))


# -- records ---------------------------------------------------------------------------------


@pytest.mark.parametrize("think", [True, False], ids=["think", "no-think"])
@pytest.mark.parametrize("env_id", REPLAY_ENVS)
def test_records_replay_to_the_same_rewards_and_prompts(env_id, think):
    config = ChatConfig(think=think)
    records = sft_records(env_id, _train_seeds(env_id, 12), config, only_successful=False)
    assert len(records) == 12
    for record, replayed in zip(records, _replay(records, config)):
        assert (replayed.total_reward, replayed.success, replayed.num_turns) == (
            record["total_reward"],
            record["success"],
            record["turns"],
        )
        # The replay's prompts are the record's: the replies were the parser's own text.
        assert replayed.training_messages() == record["messages"]
        assert all(turn.valid and turn.format_penalty == 0.0 for turn in replayed.turns)
        for message in record["messages"]:
            if message["role"] == "assistant":
                assert message["content"].startswith("<think>") is think
                assert parse_response(message["content"], think=think).normalized == message["content"]


def test_records_are_the_eval_harness_episodes_of_the_optimal_agent(tmp_path):
    """Prompts byte-identical to the harness's: its run of train-panel seeds has the records' messages."""
    run_eval(compose_config("eval", [f"env={SOKOBAN}", "split=train", "limit=6", f"out={tmp_path}", "progress=false"]))
    episodes = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    by_seed = {episode["seed"]: episode for episode in episodes}
    records = sft_records(SOKOBAN, sorted(by_seed), ChatConfig(), only_successful=False)
    assert len(records) == 6
    for record in records:
        episode = by_seed[record["seed"]]
        last_reply = max(i for i, m in enumerate(episode["messages"]) if m["role"] == "assistant")
        assert record["messages"] == episode["messages"][: last_reply + 1]
        assert (record["total_reward"], record["success"]) == (episode["total_reward"], episode["success"])


def test_only_successful_drops_exactly_the_lost_episodes():
    # Slippery ice: the optimal policy falls into holes on some seeds.
    env_id = "RAGEN/FrozenLake-4x4-v0"
    seeds = _train_seeds(env_id, 20)
    every = sft_records(env_id, seeds, ChatConfig(), only_successful=False)
    won = sft_records(env_id, seeds, ChatConfig())
    assert 0 < len(won) < len(every)
    assert won == [record for record in every if record["success"]]


def test_the_optimal_agent_follows_the_configs_separator_and_per_turn_limit():
    config = ChatConfig(action_separator=";", max_actions_per_turn=2)
    records = sft_records(SOKOBAN, _train_seeds(SOKOBAN, 6), config)
    answers = [parse_response(m["content"], separator=";", max_actions=99) for r in records for m in r["messages"]
               if m["role"] == "assistant"]
    assert answers and all(a.well_formed and 1 <= len(a.actions) <= 2 and "||" not in a.answer for a in answers)
    assert any(len(a.actions) == 2 for a in answers)
    assert all(t.success for t in _replay(records, config))


def test_random_agent_records_replay_too_and_an_unknown_agent_is_refused():
    seeds = _train_seeds(SOKOBAN, 8)
    records = sft_records(SOKOBAN, seeds, ChatConfig(), agent="random", only_successful=False)
    assert [r["seed"] for r in records] == seeds
    replayed = _replay(records, ChatConfig())
    assert [t.total_reward for t in replayed] == [r["total_reward"] for r in records]
    assert all(turn.valid for t in replayed for turn in t.turns)
    with pytest.raises(ValueError, match="optimal or random agent, got 'hf'"):
        sft_records(SOKOBAN, seeds, ChatConfig(), agent="hf")


# -- export ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    return out, export_sft(SOKOBAN, out, limit=60)


def test_export_never_uses_a_val_or_test_seed_or_level(exported):
    _, manifest = exported
    held_out_seeds = {s for split in ("val", "test") for s in panels.load(SOKOBAN, split).seeds}
    held_out_levels = {h for split in ("val", "test") for h in panels.load(SOKOBAN, split).obs_sha256}
    played = manifest["seeds_played"]
    assert len(played) == 60 and set(manifest["seeds"]) <= set(played)
    assert not held_out_seeds & set(played)
    levels = {hashlib.sha256(panels.initial_observation(SOKOBAN, seed).encode()).hexdigest() for seed in played}
    assert not levels & held_out_levels
    # 6x6 rooms repeat test levels among train seeds: some of the first seeds must have been skipped.
    first = panels.load(SOKOBAN, "train").seed_start
    assert played[0] >= first and played[-1] - first + 1 > len(played)


def test_export_files_load_with_datasets_and_equal_the_records(exported, tmp_path):
    datasets = pytest.importorskip("datasets")
    out, manifest = exported
    expected = sft_records(SOKOBAN, _train_seeds(SOKOBAN, 60), ChatConfig())
    assert manifest["count"] == len(expected) == len(manifest["seeds"])
    for kind, name in (("json", "sft.jsonl"), ("parquet", "sft.parquet")):
        loaded = datasets.load_dataset(kind, data_files=str(out / name), split="train", cache_dir=str(tmp_path / kind))
        assert loaded.to_list() == expected, kind
        assert manifest["files"][name]["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest()
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8")) == manifest
    assert (manifest["env_id"], manifest["split"], manifest["package_version"]) == (SOKOBAN, "train", ragen_bench.__version__)
    assert ChatConfig(**manifest["chat_config"]) == ChatConfig()
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "sft.jsonl", "sft.parquet"]  # no temp files left


def test_an_export_without_a_winning_episode_is_refused_and_writes_nothing(tmp_path):
    # 8x8 levels need at least 4 actions (train panel's optimal lengths); the budget is 3.
    env_id = "RAGEN/Sokoban-8x8-v0"
    assert min(panels.load(env_id, "train").optimal_length[:10]) > 3
    with pytest.raises(ValueError, match=f"won none of the 3 {env_id} train seeds"):
        export_sft(env_id, tmp_path / "out", limit=3, chat_config=ChatConfig(max_actions_per_episode=3))
    assert not (tmp_path / "out").exists()


# -- tokens and mask -------------------------------------------------------------------------

HAND_RECORD = {
    "messages": [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "U1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "U2"},
        {"role": "assistant", "content": "A2"},
        {"role": "user", "content": "final state, never trained on"},
    ]
}


def test_the_mask_covers_exactly_each_reply_and_its_end_token(tiny):
    _, tokenizer = tiny
    encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    # The tiny model's ChatML, written out: prompt | reply + end | bridge | reply + end.
    pieces = [
        (encode("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU1<|im_end|>\n<|im_start|>assistant\n"), False),
        ([*encode("A1"), end], True),
        (encode("\n<|im_start|>user\nU2<|im_end|>\n<|im_start|>assistant\n"), False),
        ([*encode("A2"), end], True),
    ]
    batch = tokenize_sft([HAND_RECORD], tokenizer, max_length=1000)
    assert batch["input_ids"][0].tolist() == [i for ids, _ in pieces for i in ids]
    assert batch["loss_mask"][0].tolist() == [m for ids, m in pieces for _ in ids]
    assert batch["attention_mask"][0].tolist() == [1] * sum(len(ids) for ids, _ in pieces)
    assert tokenizer.decode(batch["input_ids"][0][batch["loss_mask"][0]]) == "A1<|im_end|>A2<|im_end|>"


def test_rows_are_laid_out_as_the_policy_agent_builds_its_context(tiny):
    model, tokenizer = tiny
    agent = PolicyAgent(model, tokenizer, sampling=SamplingSettings())
    messages = sft_records(SOKOBAN, _train_seeds(SOKOBAN, 40), ChatConfig())
    record = next(r for r in messages if r["turns"] >= 2)
    chat = record["messages"]
    # The agent's turn-1 prompt, then per reply: its ids, the end id, the agent's bridge to the next prompt.
    expected = tokenizer.encode(agent.render(chat[:2]), add_special_tokens=False)
    for index in range(2, len(chat), 2):
        expected += [*tokenizer.encode(chat[index]["content"], add_special_tokens=False), agent.end_id]
        if index + 2 < len(chat):
            expected += agent._bridge_ids(chat[: index + 2], ended=True)
    assert tokenize_sft([record], tokenizer, max_length=4096)["input_ids"][0].tolist() == expected


def test_rows_and_masks_are_the_chat_layers_tokenization(tiny):
    """The trajectory record's tokenization (chat/trajectory.py) is the same layout: the same rows and masks."""
    _, tokenizer = tiny
    config = ChatConfig()
    records = sft_records(SOKOBAN, _train_seeds(SOKOBAN, 10), config)
    batch = tokenize_sft(records, tokenizer, max_length=4096)
    for row, trajectory in enumerate(_replay(records, config)):
        reference = trajectory.tokenize(tokenizer)
        n = len(reference["input_ids"])
        assert reference["loss_mask"][-1] == 1 and reference["input_ids"][-1] == tokenizer.eos_token_id
        assert batch["input_ids"][row, :n].tolist() == reference["input_ids"]
        assert batch["loss_mask"][row, :n].tolist() == [bool(m) for m in reference["loss_mask"]]
        assert not batch["attention_mask"][row, n:].any() and not batch["loss_mask"][row, n:].any()
        assert (batch["input_ids"][row, n:] == tokenizer.pad_token_id).all()


_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="<|>"), max_size=12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=4), _TEXT)
def test_any_conversation_decodes_back_to_its_template_text_and_masks_its_replies(tiny, turns, system):
    _, tokenizer = tiny
    messages = [{"role": "system", "content": system}]
    for user, reply in turns:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    batch = tokenize_sft([{"messages": messages}], tokenizer, max_length=10_000)
    ids, mask = batch["input_ids"][0], batch["loss_mask"][0]
    # The row is the template's text through the last end token (byte-level BPE: every text round-trips).
    whole = tokenizer.apply_chat_template(messages, tokenize=False)
    assert tokenizer.decode(ids) + "\n" == whole
    assert tokenizer.decode(ids[mask]) == "".join(reply + "<|im_end|>" for _, reply in turns)
    assert int(mask.sum()) == sum(len(tokenizer.encode(reply, add_special_tokens=False)) + 1 for _, reply in turns)


def test_records_longer_than_max_length_are_dropped_whole_and_counted(tiny):
    _, tokenizer = tiny
    short = {"messages": [{"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}]}
    full = tokenize_sft([HAND_RECORD, short], tokenizer, max_length=1000)
    long_length, short_length = full["attention_mask"].sum(dim=1).tolist()
    assert short_length < long_length
    cut = tokenize_sft([HAND_RECORD, short], tokenizer, max_length=long_length - 1)
    assert cut["dropped"] == 1 and cut["input_ids"].shape == (1, short_length)
    assert cut["input_ids"][0].tolist() == full["input_ids"][1, :short_length].tolist()
    assert tokenize_sft([HAND_RECORD, short], tokenizer, max_length=long_length)["dropped"] == 0


# -- loss ------------------------------------------------------------------------------------


class OracleModel(torch.nn.Module):
    """A causal LM whose hidden state at t is ``input_ids[t + shift]`` one-hot (NaN where ``poison``), its head a scale.

    ``shift=1`` predicts each next token with certainty; ``shift=0`` repeats the current one.
    """

    def __init__(self, vocab: int, shift: int, poison: torch.Tensor | None = None) -> None:
        super().__init__()
        self.vocab, self.shift, self.poison = vocab, shift, poison
        self.scale = torch.nn.Parameter(torch.tensor(20.0))

    def get_decoder(self):
        def backbone(input_ids, attention_mask):
            hidden = torch.nn.functional.one_hot(torch.roll(input_ids, -self.shift, dims=1), self.vocab).float()
            if self.poison is not None:
                hidden = torch.where(self.poison[..., None], torch.nan, hidden)
            return type("Out", (), {"last_hidden_state": hidden})()

        return backbone

    def get_output_embeddings(self):
        return lambda hidden: hidden * self.scale


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=6, max_size=6), min_size=1, max_size=3))
def test_the_loss_scores_position_t_from_the_logits_at_t_minus_1_on_masked_tokens_only(rows):
    mask = torch.tensor(rows)
    mask[:, 0] = False  # position 0 has no earlier logits
    mask[0, -1] = True  # at least one scored token
    ids = torch.arange(mask.numel()).reshape(mask.shape) % 7
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "loss_mask": mask}
    # Hidden states at unscored positions are NaN: they must not reach the loss.
    poison = torch.ones_like(mask)
    poison[:, :-1] = ~mask[:, 1:]
    loss, metrics = sft_loss(OracleModel(7, shift=1, poison=poison), batch)
    assert metrics["token_accuracy"] == 1.0 and metrics["tokens"] == int(mask.sum()) and loss.item() < 1e-6
    unshifted_loss, unshifted = sft_loss(OracleModel(7, shift=0), batch)
    # Each row's ids are distinct neighbours, so predicting the current token is always wrong.
    assert unshifted["token_accuracy"] == 0.0 and unshifted_loss.item() > 19


def test_the_loss_equals_plain_cross_entropy_over_the_full_logits(tiny):
    """The response-only head and the shared-prefix pass change nothing but the cost."""
    model, tokenizer = tiny
    batch = tokenize_sft(sft_records(SOKOBAN, _train_seeds(SOKOBAN, 3), ChatConfig()), tokenizer, max_length=4096)
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
    scored = batch["loss_mask"][:, 1:]
    targets = batch["input_ids"][:, 1:][scored]
    expected = torch.nn.functional.cross_entropy(logits[scored], targets)
    loss, metrics = sft_loss(model, batch)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert metrics["token_accuracy"] == pytest.approx((logits[scored].argmax(-1) == targets).float().mean().item())


def test_the_loss_falls_on_a_fixed_batch_of_optimal_episodes(tiny):
    model, tokenizer = load_model(resolve_model_path("tiny"))  # a fresh copy: this test trains it
    batch = tokenize_sft(sft_records(SOKOBAN, _train_seeds(SOKOBAN, 3), ChatConfig()), tokenizer, max_length=4096)
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    history = []
    for _ in range(30):
        optimiser.zero_grad()
        loss, metrics = sft_loss(model, batch)
        loss.backward()
        optimiser.step()
        history.append(metrics)
    assert history[-1]["loss"] < 0.4 * history[0]["loss"]
    assert history[-1]["token_accuracy"] > history[0]["token_accuracy"] + 0.3
    assert history[0]["tokens"] == int(batch["loss_mask"][:, 1:].sum())


# -- hostile inputs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([], "at least one record"),
        ([{"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}], "record 0: no assistant"),
        ([HAND_RECORD, {"text": "no messages"}], "record 1: 'messages'"),
        ([{"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "A"}]}], "record 0: 'messages'"),
        ([{"messages": [{"role": "assistant", "content": "A"}]}], "record 0: starts with an assistant"),
        (["not a record"], "record 0: 'messages'"),
    ],
    ids=["empty", "no-assistant", "no-messages", "non-text-content", "reply-first", "not-a-dict"],
)
def test_bad_records_are_refused_naming_the_record(tiny, records, message):
    with pytest.raises(ValueError, match=message):
        tokenize_sft(records, tiny[1], max_length=100)


def test_a_max_length_no_record_fits_is_refused(tiny):
    with pytest.raises(ValueError, match="every record is longer than max_length=3"):
        tokenize_sft([HAND_RECORD], tiny[1], max_length=3)


def test_a_batch_without_masked_tokens_is_refused():
    ids = torch.zeros((1, 4), dtype=torch.long)
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "loss_mask": torch.zeros((1, 4), dtype=torch.bool)}
    with pytest.raises(ValueError, match="no loss-masked tokens"):
        sft_loss(OracleModel(3, shift=1), batch)


@pytest.mark.parametrize(
    ("env_id", "message"),
    [("RAGEN/Nope-v0", "unknown env id 'RAGEN/Nope-v0'"), ("RAGEN/TicTacToe-v0", "multi-agent game")],
)
def test_unknown_envs_and_games_are_refused(tmp_path, env_id, message):
    with pytest.raises(ValueError, match=message):
        sft_records(env_id, [10_000], ChatConfig())
    with pytest.raises(ValueError, match=message):
        export_sft(env_id, tmp_path / "out", limit=1)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("split", ["test", "val", ""])
def test_only_the_train_split_is_exported(tmp_path, split):
    with pytest.raises(ValueError, match=f"train split only, not {split!r}"):
        export_sft(SOKOBAN, tmp_path / "out", split=split, limit=1)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("limit", [0, -3, 2.5, True])
def test_a_bad_limit_is_refused(tmp_path, limit):
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        export_sft(SOKOBAN, tmp_path, limit=limit)


def test_bad_seeds_and_a_history_window_are_refused():
    with pytest.raises(ValueError, match="non-negative ints"):
        sft_records(SOKOBAN, [10_000, -1], ChatConfig())
    with pytest.raises(ValueError, match="history_window=None"):
        sft_records(SOKOBAN, [10_000], ChatConfig(history_window=2))


def test_the_cli_exports_and_refuses_in_one_line(tmp_path, capsys):
    assert main(["data", "sft", SOKOBAN, "--out", str(tmp_path / "ok"), "--limit", "4", "--no-think"]) == 0
    manifest = json.loads((tmp_path / "ok" / "manifest.json").read_text(encoding="utf-8"))
    assert str(manifest["count"]) in capsys.readouterr().out and manifest["chat_config"]["think"] is False
    for argv, names in (
        (["--split", "test"], ("'test'", "train split only")),
        (["--limit", "0"], ("limit must be an int >= 1",)),
    ):
        assert main(["data", "sft", SOKOBAN, "--out", str(tmp_path / "no"), *argv]) == 2
        one_line_error(capsys, *names)
    assert main(["data", "sft", "RAGEN/TicTacToe-v0", "--out", str(tmp_path / "no")]) == 2
    one_line_error(capsys, "multi-agent game")
    assert not (tmp_path / "no").exists()
