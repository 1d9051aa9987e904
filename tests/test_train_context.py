"""RAGEN-2's context modes in training: per-turn rows built from the prompts the policy saw.

Real Sokoban episodes of the tiny model go through ``run_lockstep`` under each mode; the checks
compare the rows with what the eval harness's ``hf`` agent would have been sent at each turn,
and the episode-level pieces (filter inputs, GRPO) with hand-computed numbers.
"""

from __future__ import annotations

import copy
import json

import gymnasium
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import ragen_bench  # noqa: E402,F401  (registers the env ids)
from ragen_bench.agents.hf import HFAgent  # noqa: E402
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path  # noqa: E402
from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep  # noqa: E402
from ragen_bench.chat.context import history_window  # noqa: E402
from ragen_bench.starpo.advantages import compute_grpo  # noqa: E402
from ragen_bench.train import config as train_config  # noqa: E402
from ragen_bench.train.batch import RolloutBatch, build_batch, episode_rows, episode_totals  # noqa: E402
from ragen_bench.train.config import TrainConfigError  # noqa: E402
from ragen_bench.train.policy_agent import PolicyAgent  # noqa: E402

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
TURNS = 4
MODES = {"full": ("full", -1), "limited_multi_turn k=2": ("limited_multi_turn", 2), "single_turn": ("single_turn", 1)}


@pytest.fixture(scope="module")
def tiny():
    return load_model(resolve_model_path("tiny"))


class _Recorder:
    """Passes requests to ``agent`` and keeps each turn's messages: what the eval harness sends."""

    def __init__(self, agent):
        self.agent = agent
        self.name = agent.name
        self.messages = {}

    def close(self):
        self.agent.close()

    def act(self, requests):
        for request in requests:
            self.messages[request.episode_key, request.turn] = request.messages
        return self.agent.act(requests)


@pytest.fixture(scope="module", params=list(MODES))
def rollout(request, tiny):
    """Two groups of two 4-turn Sokoban episodes under one context mode, with each turn's messages."""
    model, tokenizer = tiny
    window = history_window(*MODES[request.param])
    agent = PolicyAgent(model, tokenizer, extend_context=window is None,
                        sampling=SamplingSettings(max_new_tokens=6, temperature=1.0, sampling_seed=3))
    chat = ChatConfig(max_turns=TURNS, max_actions_per_episode=TURNS * 5, history_window=window)
    episodes = [ChatEpisode(gymnasium.make(SOKOBAN), chat, env_id=SOKOBAN, seed=seed, sample=j, split="train")
                for seed in (11, 12) for j in range(2)]
    recorder = _Recorder(agent)
    trajectories = run_lockstep(episodes, recorder)
    samples = agent.pop_samples(t.episode_key for t in trajectories)
    assert all(t.num_turns == TURNS for t in trajectories)  # the tiny model's replies never solve the level
    hf = HFAgent(model, copy.deepcopy(tokenizer), sampling=SamplingSettings())

    def eval_ids(messages):
        """The ids the ``hf`` agent feeds its model for ``messages`` (its own render and encoding)."""
        return hf.tokenizer(hf.render(messages), add_special_tokens=False)["input_ids"]

    return request.param, window, tokenizer, recorder.messages, trajectories, samples, eval_ids


def test_each_turn_trains_on_the_prompt_train_and_eval_both_build(rollout):
    mode, window, tokenizer, messages, trajectories, samples, eval_ids = rollout
    for trajectory in trajectories:
        turns = samples[trajectory.episode_key]
        for turn, sample in enumerate(turns, start=1):
            if window is None and turn > 1:
                # Full history: the context extends the ids sampled before, never re-encoded (its text is
                # eval's prompt: test_starpo_rollout.py::test_each_turn_prompt_is_a_prefix_of_the_row...).
                before = turns[turn - 2]
                assert sample.prompt_ids[: len(before.prompt_ids) + len(before.response_ids)] == (
                    before.prompt_ids + before.response_ids)
            else:
                assert list(sample.prompt_ids) == eval_ids(messages[trajectory.episode_key, turn]), (mode, turn)


def test_rows_are_episodes_in_full_mode_and_turns_with_exactly_the_windowed_history_otherwise(rollout):
    mode, window, tokenizer, _, trajectories, samples, _ = rollout
    batch = build_batch(trajectories, samples, pad_id=0, per_turn=window is not None)
    if window is None:  # one row per episode, and the filter's episode view is the batch itself
        assert batch.episode_ids == list(range(len(trajectories)))
        scores, groups, lengths = episode_totals(batch)
        assert torch.equal(scores, batch.scores) and groups == batch.group_ids
        assert torch.equal(lengths, batch.response_mask.sum(dim=1))
        kept = torch.tensor([0, 2, 3])
        assert torch.equal(episode_rows(batch, kept), kept)
        return
    assert len(batch.group_ids) == TURNS * len(trajectories)
    assert batch.episode_ids == [e for e in range(len(trajectories)) for _ in range(TURNS)]
    for row in range(len(batch.group_ids)):
        episode, turn = batch.episode_ids[row], row % TURNS + 1
        sample = samples[trajectories[episode].episode_key][turn - 1]
        ids = batch.input_ids[row][batch.attention_mask[row].bool()].tolist()
        assert ids == [*sample.prompt_ids, *sample.response_ids]  # the ids as sampled, nothing re-encoded
        assert batch.response_mask[row].sum() == len(sample.response_ids)
        assert batch.old_log_probs[row][batch.response_mask[row]].tolist() == pytest.approx(list(sample.log_probs))
        prompt = tokenizer.decode(list(sample.prompt_ids), skip_special_tokens=False)
        shown = [k for k in range(1, TURNS + 1) if f"Turn {k}:" in prompt]
        assert shown == list(range(max(1, turn - window + 1), turn + 1)), (mode, turn)  # the last k turns only
        earlier_replies = prompt.count("<|im_start|>assistant") - 1  # minus the generation prompt
        assert earlier_replies == min(turn, window) - 1
        # RAGEN-2's credit: each turn's row holds its episode's total score on its last token.
        assert batch.rewards[row].nonzero().flatten().tolist() == [len(ids) - 1]
        assert batch.rewards[row, len(ids) - 1] == pytest.approx(trajectories[episode].total_reward)
        assert batch.scores[row] == pytest.approx(trajectories[episode].total_reward)
        assert batch.group_ids[row] == trajectories[episode].seed


# -- the episode view: filter inputs and GRPO, by hand ----------------------------------------------------


def _turn_batch(episode_ids, group_ids, scores, response_tokens):
    """A per-turn batch of one-token prompts: row r has ``response_tokens[r]`` reply tokens and its episode's score."""
    width = 1 + max(response_tokens)
    mask = torch.zeros(len(episode_ids), width, dtype=torch.bool)
    rewards = torch.zeros(len(episode_ids), width)
    for row, n in enumerate(response_tokens):
        mask[row, 1 : 1 + n] = True
        rewards[row, n] = scores[row]
    return RolloutBatch(input_ids=torch.zeros_like(mask, dtype=torch.long), attention_mask=mask.long(),
                        response_mask=mask, old_log_probs=torch.zeros(mask.shape), rewards=rewards,
                        scores=torch.tensor(scores), group_ids=group_ids, prompt_lengths=[1] * len(episode_ids),
                        episode_ids=episode_ids)


def test_the_filter_sees_each_episode_once_with_all_its_turns_tokens():
    # Episodes 4 (2 turns, group 7), 5 (1 turn, group 7), 9 (3 turns, group 8).
    batch = _turn_batch([4, 4, 5, 9, 9, 9], [7, 7, 7, 8, 8, 8], [1.0, 1.0, 0.0, 0.5, 0.5, 0.5], [2, 3, 1, 1, 1, 4])
    scores, groups, lengths = episode_totals(batch)
    assert scores.tolist() == [1.0, 0.0, 0.5] and groups == [7, 7, 8] and lengths.tolist() == [5, 1, 6]
    assert episode_rows(batch, torch.tensor([0, 2])).tolist() == [0, 1, 3, 4, 5]
    assert episode_rows(batch, torch.tensor([1])).tolist() == [2]


def test_grpo_counts_an_episode_of_many_turns_once():
    # Group 7: episode 4 (score 1, two turns) and episode 5 (score 0, one turn): mean 0.5, std sqrt(0.5).
    batch = _turn_batch([4, 4, 5, 9], [7, 7, 7, 8], [1.0, 1.0, 0.0, 0.5], [2, 2, 2, 2])
    advantages, _ = compute_grpo(batch.rewards, batch.response_mask, batch.group_ids, episode_ids=batch.episode_ids)
    per_row = [float(advantages[row][batch.response_mask[row]][0]) for row in range(4)]
    expected = 0.5 / (0.5**0.5 + 1e-6)
    assert per_row == pytest.approx([expected, expected, -expected, 0.0])
    # Counted per row instead, the long episode would pull the mean to 2/3.
    plain, _ = compute_grpo(batch.rewards, batch.response_mask, batch.group_ids)
    assert float(plain[2][batch.response_mask[2]][0]) == pytest.approx(-(2 / 3) / (1 / 3) ** 0.5, rel=1e-4)
    # One row per episode: the same advantages with or without episode_ids.
    whole = _turn_batch([0, 1, 2, 3], [7, 7, 8, 8], [1.0, 0.0, 0.3, 0.1], [2, 1, 3, 2])
    assert torch.equal(compute_grpo(whole.rewards, whole.response_mask, whole.group_ids)[0],
                       compute_grpo(whole.rewards, whole.response_mask, whole.group_ids, episode_ids=[0, 1, 2, 3])[0])


# -- the config and a run ---------------------------------------------------------------------------------


def test_train_takes_windowed_modes_and_refuses_what_per_turn_rows_cannot_hold():
    single = train_config.from_preset("grpo", ["context_window_mode=single_turn", "max_context_window=1"])
    assert single.chat_config.history_window == 1
    limited = train_config.from_preset("grpo", ["context_window_mode=limited_multi_turn", "max_context_window=2"])
    assert limited.chat_config.history_window == 2
    with pytest.raises(TrainConfigError, match=r"^advantage.score_placement: must be last with a context window"):
        train_config.from_preset("grpo", ["context_window_mode=single_turn", "max_context_window=1",
                                          "advantage.score_placement=turn"])
    with pytest.raises(TrainConfigError, match=r"^chat.history_window: must be null with algo=sft"):
        train_config.from_preset("grpo", ["algo=sft", "chat.history_window=2"])


def test_a_single_turn_run_trains_on_every_turn(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    train(train_config.from_preset("starpo-s", [
        "model=tiny", f"env={SOKOBAN}", "rollout.groups=2", "rollout.group_size=2", "rollout.max_new_tokens=6",
        "chat.max_turns=2", "filter.ratio=1", "actor.mini_batch=8", "actor.micro_batch=4", "val.every=0",
        "test.split=null", "log.progress=false", "threads=1", "collapse_detection.compute_freq=0", "steps=1",
        "context_window_mode=single_turn", "max_context_window=1", f"out={out}"]))
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert row["rollout/turns"] == 2 and row["filter/kept_groups"] == 2
    assert row["critic/vf_loss"] >= 0 and "actor/pg_loss" in row
    assert json.loads((out / "config.json").read_text())["chat"]["history_window"] == 1
