"""The veRL agent loop on a two-player game: the policy's seat against the loop's scripted opponent."""

from __future__ import annotations

import asyncio

import pytest
from omegaconf import OmegaConf

from ragen_bench.chat import AgentReply, ChatConfig
from ragen_bench.integrations.verl.game_seat import GameSeatEpisode
from ragen_bench.train.batch import build_batch
from ragen_bench.train.policy_agent import TurnSample
from tests_verl.test_agent_loop import ScriptedServer, make_loop, runs, setup  # noqa: F401  (setup: a fixture)

GAME = "RAGEN/TicTacToe-v0"
# Every cell in order, again and again: a taken cell is an illegal reply, retried with the next one.
CELLS = [f"<think>x</think><answer>{row}{col}</answer>" for row in "ABC" for col in "123"] * 4


def game_loop(setup, **entry):  # noqa: F811
    merged = OmegaConf.merge(setup["entry"], {"opponent": "random", "game": {"max_retries": 8}, **entry})
    server = ScriptedServer(setup["tokenizer"], CELLS)
    return make_loop(setup, server, entry=merged), server


def play_game(loop, seed):
    row = {"extra_info": {"index": 0, "env_id": GAME, "seed": seed, "split": "train"}, "session_id": 0}
    return asyncio.run(loop.run({"temperature": 1.0, "logprobs": True}, **row))


@pytest.mark.parametrize("seed", [10000, 10001])
def test_a_game_row_is_the_local_trainers_row_of_the_policy_seat(setup, seed):  # noqa: F811
    tokenizer = setup["tokenizer"]
    loop, server = game_loop(setup)
    out = play_game(loop, seed)
    spans = runs(out.response_mask)
    assert len(spans) == len(server.calls) == len(out.extra_fields["turns"])
    # Replayed through the local trainer's game episode with the same replies: the same score and row.
    episode = GameSeatEpisode(GAME, ChatConfig(**setup["config"].chat), opponent="random", game={"max_retries": 8},
                              seed=seed)
    assert episode.seat == ("player_0" if seed % 2 == 0 else "player_1")
    samples = []
    for start, end in spans:  # each reply as the loop kept it: cut at </answer>, closed with the end id
        ids = out.response_ids[start:end]
        ended = ids[-1] == tokenizer.eos_token_id
        samples.append(TurnSample(tuple(out.prompt_ids + out.response_ids[:start]), tuple(ids), (-0.5,) * len(ids),
                                  "stop" if ended else "length", ended))
        text = tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        episode.step(AgentReply(text=text, completion_tokens=len(ids)))
    assert episode.done == (not out.extra_fields["stopped_early"])
    trajectory = episode.trajectory()
    assert out.reward_score == pytest.approx(trajectory.total_reward)
    local = build_batch([trajectory], {trajectory.episode_key: samples}, pad_id=tokenizer.eos_token_id)
    p, n = len(out.prompt_ids), len(out.response_ids)
    assert local.input_ids[0, : p + n].tolist() == out.prompt_ids + out.response_ids
    assert local.response_mask[0, : p + n].tolist() == [False] * p + [bool(b) for b in out.response_mask]
    assert float(local.rewards[0, p + n - 1]) == pytest.approx(out.reward_score)
    # The opponent moved first on odd seeds, so the first prompt already shows its move.
    assert (episode.match.moves[0][0] == episode.seat) == (seed % 2 == 0)
    fresh = GameSeatEpisode(GAME, ChatConfig(**setup["config"].chat), opponent="random", seed=seed)
    assert tokenizer.apply_chat_template(fresh.messages, add_generation_prompt=True, tokenize=False) == \
        tokenizer.decode(out.prompt_ids)


def test_a_game_row_without_an_opponent_or_with_a_window_is_a_clear_error(setup):  # noqa: F811
    loop, _ = game_loop(setup, opponent=None)
    with pytest.raises(ValueError, match="two-player game; the loop's config names no opponent"):
        play_game(loop, 1)
    loop, _ = game_loop(setup, chat={"history_window": 1})
    with pytest.raises(ValueError, match="full history"):
        play_game(loop, 1)
