"""Training on a two-player game: against a named scripted opponent, by self-play, and its warm start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from ragen_bench.train import config as train_config  # noqa: E402
from ragen_bench.train import games  # noqa: E402
from ragen_bench.train.config import TrainConfigError  # noqa: E402
from tests.conftest import one_line_error  # noqa: E402

GAME = "RAGEN/TicTacToe-v0"
SMALL = [
    "model=tiny", f"env={GAME}", "rollout.groups=4", "rollout.group_size=2", "rollout.max_new_tokens=6",
    "actor.mini_batch=4", "actor.micro_batch=2", "val.every=0", "test.split=null", "log.progress=false", "threads=1",
    "sampling_threads=1", "collapse_detection.compute_freq=0",
]


def small(*extra: str, out: Path | None = None) -> train_config.TrainConfig:
    return train_config.from_preset("starpo-s", [*SMALL, *([f"out={out}"] if out else []), *extra])


# -- config ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, names", [
    (["opponent=null"], ["opponent:", "two-player game", "minimax, random", "self"]),
    (["opponent=grandmaster"], ["opponent:", "grandmaster", "minimax, random"]),
    (["opponent=random", "env=RAGEN/Bandit-v0"], ["opponent:", "single-agent env"]),
    (["opponent=random", "+game.retries=3"], ["game.retries", "max_retries"]),
    (["opponent=random", "game.on_illegal=shrug"], ["game:", "on_illegal", "shrug"]),
    (["opponent=random", "chat.history_window=1"], ["chat.history_window", "game"]),
    (["opponent=random", "algo=sft", "sft.agent=optimal"], ["sft.agent", "minimax", "optimal"]),
    (["opponent=self", "algo=sft", "sft.agent=minimax"], ["opponent:", "warm start", "self"]),
    (["opponent=random", "backend=verl"], ["backend:", "two-player game", "backend=local"]),
    (["env=RAGEN/TA-ThreePlayerTicTacToe-v0", "opponent=self"], ["opponent:", "3 seats", "self-play", "random"]),
])
def test_bad_game_settings_are_one_error_naming_the_key(overrides, names):
    with pytest.raises(TrainConfigError) as refused:
        small(*overrides)
    for name in names:
        assert name in str(refused.value)


def test_the_cli_refuses_an_unknown_opponent_in_one_line(tmp_path, capsys):
    from ragen_bench.cli import main

    assert main(["train", f"env={GAME}", "opponent=grandmaster", "model=tiny", f"out={tmp_path / 'run'}"]) == 2
    one_line_error(capsys, "opponent", "grandmaster")
    assert not (tmp_path / "run").exists()


def test_the_plan_names_the_opponent_and_who_validation_plays():
    from ragen_bench.train.schedule import describe

    fixed = "\n".join(describe(small("opponent=random")))
    assert "against random, the policy's seat alternating" in fixed and "validation/test against random" in fixed
    selfplay = "\n".join(describe(small("opponent=self")))
    assert "self-play" in selfplay and "validation/test against minimax" in selfplay  # the game's default opponent


# -- rollouts --------------------------------------------------------------------------------------


@pytest.fixture
def played_matches(monkeypatch):
    """Every match a rollout plays, with its result."""
    import ragen_bench.chat as chat

    seen = []
    real = chat.play_matches

    def spy(matches, **kwargs):
        results = real(matches, **kwargs)
        seen.extend(zip(matches, results))
        return results

    monkeypatch.setattr(chat, "play_matches", spy)
    return seen


def _weights(model) -> dict:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def test_a_short_run_plays_the_named_opponent_in_both_seats_and_changes_the_weights(tmp_path, played_matches):
    from ragen_bench.agents.local_models import load_model
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    result = train(small("opponent=random", "steps=1", "actor.lr=1e-3", "val.every=1", "val.limit=2", out=out))
    rollout = [(m, r) for m, r in played_matches if m.split == "train"]
    assert len(rollout) == 8  # 4 seeds x 2 games
    policy_seats = set()
    for match, _ in rollout:
        scripted = {seat: p for seat, p in match.players.items() if not hasattr(p, "act")}
        assert [p.name for p in scripted.values()] == ["random"]
        (policy_seat,) = set(match.players) - set(scripted)
        assert policy_seat == ("player_0" if match.seed % 2 == 0 else "player_1")
        policy_seats.add(policy_seat)
    assert policy_seats == {"player_0", "player_1"}
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert row["filter/groups"] == 4 and -1.0 - 3 * 0.1 - 1e-6 <= row["rollout/reward_mean"] <= 1.0
    # Validation played the val panel against the same opponent, seats alternating.
    val = [json.loads(line) for line in (out / "val" / "step-000001" / "episodes.jsonl").read_text().splitlines()]
    assert sorted((r["seed"], r["split"], r["game"]["opponent"], r["game"]["agent_seat"]) for r in val) == [
        (1000, "val", "random", "player_0"), (1001, "val", "random", "player_1")]
    start, _ = load_model("tiny", dtype="float32")
    trained, _ = load_model(str(result.final_checkpoint / "model"), dtype="float32")
    before, after = _weights(start), _weights(trained)
    assert any(not (before[name] == after[name]).all() for name in before)


def test_self_play_seats_the_policy_in_both_seats_and_trains_both(tmp_path, played_matches, monkeypatch):
    from ragen_bench.train import trainer as trainer_module
    from ragen_bench.train.trainer import Trainer

    batches = []
    real = trainer_module.build_batch

    def spy(trajectories, samples, **kwargs):
        batch = real(trajectories, samples, **kwargs)
        batches.append((list(trajectories), batch))
        return batch

    monkeypatch.setattr(trainer_module, "build_batch", spy)
    # A random move is played for an illegal reply, so the tiny model's games reach both seats.
    config = small("opponent=self", "game.on_illegal=random", "steps=1", out=tmp_path / "run")
    Trainer(config, tmp_path / "run").starpo_step()
    for match, _ in played_matches:
        assert match.players["player_0"] is match.players["player_1"] and hasattr(match.players["player_0"], "act")
    trajectories, batch = batches[0]
    seats = {(t.seed, t.sample % 2) for t in trajectories}
    assert seats == {(seed, seat) for seed in {t.seed for t in trajectories} for seat in (0, 1)}
    # One group per (seed, seat): 4 seeds x 2 seats, each seat's two games.
    assert len(set(batch.group_ids)) == 8
    assert all(batch.group_ids.count(g) == 2 for g in set(batch.group_ids))


def test_the_two_roles_baselines_are_kept_apart():
    """Self-play's groups are per (seed, seat): a first-mover edge is no advantage of either seat's moves."""
    import torch

    from ragen_bench.starpo.algorithms import compute_advantages
    from ragen_bench.train.sections import AdvantageConfig

    class T:  # the fields group_of reads
        def __init__(self, seed, sample):
            self.seed, self.sample = seed, sample

    # Seed 7, two games: player_0 (samples 0, 2) won both, player_1 (samples 1, 3) lost both; seed 8: 1-1 each way.
    played = [T(7, 0), T(7, 1), T(7, 2), T(7, 3), T(8, 0), T(8, 1), T(8, 2), T(8, 3)]
    returns = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    rewards = torch.zeros(8, 3)
    rewards[:, -1] = returns
    mask = torch.ones(8, 3, dtype=torch.bool)
    config = AdvantageConfig(estimator="grpo")
    per_seat = [games.group_of(t, games.SELF_PLAY) for t in played]
    assert len(set(per_seat)) == 4
    advantages, _ = compute_advantages(config, rewards, None, mask, per_seat, list(range(8)))
    # Each seat's returns on seed 7 equal its own baseline: nothing to learn from a seat's fixed edge ...
    assert advantages[:4].abs().max() < 1e-5
    # ... while on seed 8 the game each seat won is pushed up and the one it lost down.
    assert (advantages[4:, -1] * returns[4:] > 0).all()
    mixed, _ = compute_advantages(config, rewards, None, mask, [t.seed for t in played], list(range(8)))
    assert mixed[:4].abs().max() > 0.5  # one baseline for both roles would credit the seat, not the moves


# -- the warm start ----------------------------------------------------------------------------------


def test_the_warm_start_plays_the_scripted_player_and_keeps_its_games_it_did_not_lose():
    config = small("opponent=random", "algo=sft", "sft.agent=minimax", "chat.think=false")
    records = games.sft_records(config, [10000, 10001, 10002, 10003])
    assert 1 <= len(records) <= 4 and {r["env_id"] for r in records} == {GAME}
    for record in records:
        assert record["messages"][-1]["role"] == "assistant"
        assert all(m["content"].startswith("<answer>") for m in record["messages"] if m["role"] == "assistant")
        assert record["total_reward"] >= 0  # minimax never loses; only won and drawn games are kept


def test_the_random_warm_start_keeps_its_lost_games_too():
    seeds = list(range(10000, 10016))
    kept = games.sft_records(small("opponent=random", "algo=sft", "sft.agent=random", "chat.think=false"), seeds)
    assert len(kept) == len(seeds)  # a format-only warm start: every game, whatever its outcome
    assert min(r["total_reward"] for r in kept) < 0  # random loses some of 16 games to random


def test_the_warm_start_on_a_free_text_game_answers_with_the_move_s_text():
    pytest.importorskip("textarena")
    config = small("env=RAGEN/TA-KuhnPoker-v0", "opponent=random", "algo=sft", "sft.agent=random", "chat.think=false")
    records = games.sft_records(config, [0, 1])  # TextArena's games have no action names: the move is its text
    replies = [m["content"] for r in records for m in r["messages"] if m["role"] == "assistant"]
    assert len(records) == 2 and replies
    assert all(reply.startswith("<answer>[") and reply.endswith("]</answer>") for reply in replies), replies


# -- the episode veRL's agent loop plays -----------------------------------------------------------------


def test_the_verl_loops_game_episode_is_the_policy_seat_against_the_opponent():
    from ragen_bench.chat import AgentReply, ChatConfig
    from ragen_bench.integrations.verl.game_seat import GameSeatEpisode

    chat = ChatConfig(think=False)
    for seed in (10000, 10001):
        episode = GameSeatEpisode(GAME, chat, opponent="random", seed=seed)
        assert episode.seat == ("player_0" if seed % 2 == 0 else "player_1")
        # The opponent already moved when the policy sits second.
        assert len(episode.match.moves) == seed % 2 and episode.turn == 1
        assert episode.messages[-1]["role"] == "user"
        while not episode.done:
            legal = episode.match.game.legal_moves(episode.seat)
            episode.step(AgentReply(text=f"<answer>{episode.match.game.action_names[legal[0]]}</answer>"))
        trajectory = episode.trajectory()
        assert all(turn.valid for turn in trajectory.turns)
        assert trajectory.total_reward == {"win": 1.0, "draw": 0.0, "loss": -1.0}[
            episode.match.result().outcome(episode.seat)]
    with pytest.raises(ValueError, match="no scripted player 'grandmaster'"):
        GameSeatEpisode(GAME, chat, opponent="grandmaster", seed=1)


def test_a_game_of_three_seats_seats_the_policy_round_the_seats_and_a_scripted_opponent_at_each_other(played_matches):
    pytest.importorskip("textarena")
    from ragen_bench.chat import AgentReply

    class Centre:
        name = "centre"

        def act(self, requests):
            return [AgentReply("<think>ok</think><answer>[12]</answer>") for _ in requests]

    c = small("env=RAGEN/TA-ThreePlayerTicTacToe-v0", "opponent=random", "rollout.group_size=1")
    agent = Centre()
    trajectories = games.play(c, [123, 124, 125], agent)
    assert [t.seed for t in trajectories] == [123, 124, 125]
    seats = []
    for match, result in played_matches:
        policy = [seat for seat, player in match.players.items() if player is agent]
        scripted = [player for player in match.players.values() if player is not agent]
        assert len(policy) == 1 and len(scripted) == 2 and len({id(p) for p in scripted}) == 2
        assert all(player.name == "random" for player in scripted)
        seats.append(policy[0])
        assert result.trajectories[policy[0]].turns  # the policy's seat was asked
    assert seats == ["player_0", "player_1", "player_2"]  # the seed's seat: 123 mod 3, 124 mod 3, 125 mod 3
