"""Served episodes are the local ones, byte for byte, and the ones ``ragen-bench eval`` plays.

* ``RAGEN/Remote-v0`` (a session on ``ragen-bench serve``) and ``RAGEN/Chat-v0`` (the same session
  in-process) give equal observations, rewards, terminated/truncated and info -- compared as values
  and as canonical JSON bytes -- on a sample of ids from every family, by panel item and by seed,
  through valid, malformed and illegal replies;
* a panel item served is eval's episode of it: eval's recorded replies, sent to the server, give
  eval's transcript, rewards and success.
"""

from __future__ import annotations

import json

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers RAGEN/Chat-v0 and RAGEN/Remote-v0)
from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat.protocol import AgentRequest, LiveEnvView
from ragen_bench.eval import compose_config, run_eval
from ragen_bench.games.registry import GAME_IDS
from ragen_bench.integrations.openenv.session import ServeError, chat_config
from tests_openenv.conftest import SAMPLE_IDS

MALFORMED = "I think I should move up."
NO_SUCH_ACTION = "<think>try something</think> <answer>Fly</answer>"


def same(local: object, remote: object) -> None:
    """Equal as values and as canonical JSON bytes (so a float or a type that differs shows)."""
    assert remote == local
    assert json.dumps(remote, sort_keys=True).encode() == json.dumps(local, sort_keys=True).encode()


def next_reply(env: gymnasium.Env, env_id: str, turn: int, junk_turns: int) -> str:
    """The reply for this turn: ``junk_turns`` junk ones first, then the optimal agent's (a game: its first legal move)."""
    if turn < junk_turns:
        return (MALFORMED, NO_SUCH_ACTION)[turn % 2]
    session = env.unwrapped._session  # the local session's live game or episode: the privileged view
    if env_id in GAME_IDS:
        game, seat = session._match.game, session._seat
        return f"<think>first legal move</think> <answer>{game.action_names[game.legal_moves(seat)[0]]}</answer>"
    episode = session._episode
    config = episode.config
    agent = OptimalAgent(think=config.think, max_actions_per_turn=config.max_actions_per_turn,
                         separator=config.action_separator)
    request = AgentRequest(messages=episode.messages, episode_key=episode.key, turn=episode.turn,
                           actions_left=config.max_actions_per_episode - episode.trajectory().num_actions,
                           live_env=LiveEnvView(episode.env))
    return agent.act([request])[0].text


def play_both(local: gymnasium.Env, remote: gymnasium.Env, env_id: str, junk_turns: int, **reset: object) -> int:
    """One episode on both envs, compared after every call; the number of steps."""
    local_start, remote_start = local.reset(**reset), remote.reset(**reset)
    same(local_start, remote_start)
    steps, done, rewards = 0, False, []
    while not done:
        reply = next_reply(local, env_id, steps, junk_turns)
        local_step, remote_step = local.step(reply), remote.step(reply)
        same(local_step, remote_step)
        assert type(remote_step[1]) is float
        done, steps = local_step[2] or local_step[3], steps + 1
        rewards.append(remote_step[1])
    # The steps' rewards are the turns' of the episode's record, which add up to its total.
    session = local.unwrapped._session
    if env_id in GAME_IDS:
        record = session._match.result().trajectories[session._seat]
    else:
        record = session._episode.trajectory()
    assert rewards == [turn.reward for turn in record.turns] and sum(rewards) == record.total_reward
    return steps


@pytest.mark.parametrize("env_id", SAMPLE_IDS)
def test_remote_episodes_equal_local_ones(sample_server: str, env_id: str) -> None:
    local = gymnasium.make("RAGEN/Chat-v0", env_id=env_id)
    remote = gymnasium.make("RAGEN/Remote-v0", url=sample_server, env_id=env_id)
    try:
        assert play_both(local, remote, env_id, 0, options={"split": "test", "index": 0}) >= 1
        assert play_both(local, remote, env_id, 2, options={"split": "test", "index": 1}) >= 1
        assert play_both(local, remote, env_id, 2, seed=987_654) >= 1
        if env_id in GAME_IDS:  # three bad replies in a row forfeit the game
            assert play_both(local, remote, env_id, 3, seed=11) == 3
            assert local.unwrapped._session._match.forfeit is not None
        # A refused request is refused alike on both sides.
        for env in (local, remote):
            with pytest.raises(ServeError, match="is over: call reset"):
                env.step("<answer>anything</answer>")
        if env_id not in GAME_IDS:
            # The prompt's state is the id's own observation for that seed.
            state, _ = gymnasium.make(env_id).reset(seed=987_654)
            assert f"State:\n{state}\n" in remote.reset(seed=987_654)[0]
    finally:
        local.close()
        remote.close()


def test_remote_info_says_what_a_trainer_needs(sample_server: str) -> None:
    remote = gymnasium.make("RAGEN/Remote-v0", url=sample_server, env_id="RAGEN/Sokoban-6x6-v0")
    try:
        observation, info = remote.reset(options={"split": "test", "index": 17})
        assert (info["env_id"], info["split"], info["index"], info["seed"]) == ("RAGEN/Sokoban-6x6-v0", "test", 17, 140)
        assert observation == info["messages"][-1]["content"] and "Turn 1:" in observation
        observation, reward, terminated, truncated, info = remote.step(MALFORMED)
        assert (reward, terminated, truncated) == (-0.1, False, False)
        assert (info["valid"], info["format_penalty"], info["action_ids"], info["success"]) == (False, -0.1, [], False)
        _, reward, _, _, info = remote.step("<think>up</think> <answer>Up</answer>")
        assert info["valid"] and info["parsed_actions"] == ["Up"] and info["action_ids"] == [0]
        assert reward == sum(info["env_rewards"]) and info["turns"] == 2
    finally:
        remote.close()


@pytest.mark.parametrize("env_id", ["RAGEN/Sokoban-6x6-v0", "RAGEN/Countdown-v0"])
def test_a_served_panel_item_is_evals_episode(sample_server: str, tmp_path, env_id: str) -> None:
    # Eval with the id's chat budget (what the server plays), so both play the same settings.
    budget = [f"chat.{key}={value}" for key, value in chat_config(env_id).to_dict().items()
              if key in ("max_turns", "max_actions_per_turn", "max_actions_per_episode")]
    out = tmp_path / "run"
    run_eval(compose_config("eval", [f"env={env_id}", "agent=optimal", "limit=3", f"out={out}", "progress=false",
                                     *budget]))
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    remote = gymnasium.make("RAGEN/Remote-v0", url=sample_server, env_id=env_id)
    try:
        for index, record in enumerate(records):
            _, info = remote.reset(options={"split": "test", "index": index})
            assert info["seed"] == record["seed"]
            total = 0.0
            for turn in record["turns"]:
                _, reward, terminated, truncated, info = remote.step(turn["raw_response"])
                assert reward == sum(turn["env_rewards"]) + turn["format_penalty"]
                total += reward
            assert info["messages"] == record["messages"]
            assert (total, info["success"], terminated, truncated) == (
                record["total_reward"], record["success"], record["terminated"], record["truncated"])
    finally:
        remote.close()
