"""The OpenSpiel games (``RAGEN/OS-*-v0``): registration, seeds and chance, masks, text views, bad actions,
the chat layer, the MCTS opponent and the card's strength figures.

PettingZoo's ``api_test``/``seed_test`` and the panels run over every game in tests/test_games_api.py and
tests/test_games_panels.py.  The MCTS-vs-random sweep of every game is marked slow; the default run
measures the cheap games.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspiel")
pytest.importorskip("shimmy")

from ragen_bench.chat import AgentReply, GameChatConfig, GameMatch, play_matches  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from ragen_bench.games import GAME_ENTRIES, make_multiagent  # noqa: E402
from ragen_bench.games.board import IllegalMoveError  # noqa: E402
from ragen_bench.games.opponents import OPPONENTS, MCTSPlayer, RandomPlayer  # noqa: E402
from ragen_bench.games.strength import match  # noqa: E402
from tests.conftest import REPO_ROOT, run_python  # noqa: E402

OS_IDS = tuple(row.id for row in GAME_ENTRIES if row.family == "openspiel")
CARD = REPO_ROOT / "data" / "openspiel" / "README.md"
# Games whose MCTS-vs-random panel takes under a few seconds on one core; the rest run in the slow sweep.
CHEAP = ("RAGEN/OS-KuhnPoker-v0", "RAGEN/OS-LeducPoker-v0", "RAGEN/OS-Nim-v0", "RAGEN/OS-DotsAndBoxes-v0", "RAGEN/OS-Clobber-v0")


def play_out(env_id, seed, players):
    """Play ``env_id`` on ``seed`` through env() with scripted ``players`` (seat -> player); the raw game."""
    env = make_multiagent(env_id)
    env.reset(seed=seed)
    raw = env.unwrapped
    while not raw.game_over:
        seat = raw.agent_selection
        env.step(players[seat].choose(raw, seat))
    return raw


def test_there_are_at_least_eight_two_player_games_with_the_mcts_default():
    assert len(OS_IDS) >= 8
    assert all(re.fullmatch(r"RAGEN/OS-[A-Za-z]+-v0", env_id) for env_id in OS_IDS)
    for row in GAME_ENTRIES:
        if row.family == "openspiel":
            assert (row.extra, row.default_opponent, row.parallel) == ("openspiel", "mcts", False)
            assert make_multiagent(row.id).unwrapped.possible_agents == ["player_0", "player_1"]
    assert set(OPPONENTS["openspiel"]) == {"random", "mcts"}


def test_registration_does_not_load_pyspiel_until_an_id_is_made():
    out = run_python(
        "import sys, json, ragen_bench\n"
        "from ragen_bench.games import GAME_IDS\n"
        "before = [m for m in ('pyspiel', 'shimmy', 'pettingzoo') if m in sys.modules]\n"
        "ragen_bench.make_multiagent('RAGEN/OS-KuhnPoker-v0')\n"
        "print(json.dumps([before, 'pyspiel' in sys.modules, sum(i.startswith('RAGEN/OS-') for i in GAME_IDS)]))"
    )
    assert json.loads(out) == [[], True, len(OS_IDS)]


def test_a_missing_extra_is_one_error_naming_it():
    out = run_python(
        "import sys\n"
        "sys.modules['pyspiel'] = None  # as if open-spiel were not installed\n"
        "import ragen_bench\n"
        "try:\n"
        "    ragen_bench.make_multiagent('RAGEN/OS-Hex-v0')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    assert out == "RAGEN/OS-Hex-v0: needs the 'openspiel' extra: pip install 'ragen-bench[openspiel]'\n"


def test_missing_extra_names_the_extra_without_importing_it(monkeypatch):
    import importlib.util

    from ragen_bench.games import game_entry

    assert game_entry("RAGEN/OS-Nim-v0").missing_extra() is None
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "shimmy" else real(name, *rest))
    assert game_entry("RAGEN/OS-Nim-v0").missing_extra() == "needs the 'openspiel' extra: pip install 'ragen-bench[openspiel]'"
    assert game_entry("RAGEN/TicTacToe-v0").missing_extra() is None


_HISTORIES = """
import json
from ragen_bench.games import make_multiagent
from ragen_bench.games.opponents import MCTSPlayer, RandomPlayer
out = {}
for env_id in %r:
    for seed in (3, 4):
        env = make_multiagent(env_id)
        env.reset(seed=seed)
        raw = env.unwrapped
        players = {"player_0": MCTSPlayer(), "player_1": RandomPlayer()}
        while not raw.game_over:
            env.step(players[raw.agent_selection].choose(raw, raw.agent_selection))
        out[f"{env_id}/{seed}"] = [raw.game_state.history(), raw.game_state.returns()]
print(json.dumps(out))
"""


def test_seeded_games_with_chance_and_mcts_are_identical_across_processes():
    code = _HISTORIES % (("RAGEN/OS-KuhnPoker-v0", "RAGEN/OS-LeducPoker-v0", "RAGEN/OS-Pig-v0", "RAGEN/OS-Nim-v0"),)
    first = json.loads(run_python(code, hash_seed="1"))
    assert first == json.loads(run_python(code, hash_seed="2"))
    # The seed matters: the deals (the first chance outcomes) of seeds 3 and 4 differ somewhere.
    assert any(first[f"{g}/3"][0][:2] != first[f"{g}/4"][0][:2] for g in ("RAGEN/OS-KuhnPoker-v0", "RAGEN/OS-LeducPoker-v0"))


@pytest.mark.parametrize("seed", [0, 7, 123])
def test_a_seeds_deals_do_not_depend_on_the_players(seed):
    """Chance has a stream of its own: a different line of play, or other draws from np_random, see the same cards."""
    public = []
    for first_move, drain in ((1, 0), (2, 5)):  # Call or Raise, then Call: round 2 deals the public card
        env = make_multiagent("RAGEN/OS-LeducPoker-v0")
        env.reset(seed=seed)
        raw = env.unwrapped
        raw.np_random.integers(10, size=drain)  # an opponent's tie-breaks
        deal = raw.game_state.history()[:2]
        env.step(first_move)
        env.step(1)
        public.append((deal, raw.game_state.history()[-1]))  # round 2's public card
    assert public[0] == public[1]


@pytest.mark.parametrize("env_id", OS_IDS)
def test_unseeded_resets_run_on_from_the_last_seeded_one(env_id):
    def deals(env):
        env.reset(seed=5)
        seen = [str(env.unwrapped.game_state)]
        for _ in range(3):
            env.reset()
            seen.append(str(env.unwrapped.game_state))
        return seen, int(env.unwrapped.np_random.integers(2**31))

    assert deals(make_multiagent(env_id)) == deals(make_multiagent(env_id))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(env_id=st.sampled_from(OS_IDS), seed=st.integers(0, 2**64 - 1))
def test_random_play_keeps_masks_names_views_and_returns_consistent(env_id, seed):
    env = make_multiagent(env_id)
    env.reset(seed=seed)
    raw = env.unwrapped
    moves = 0
    while not raw.game_over:
        seat = raw.agent_selection
        other = "player_1" if seat == "player_0" else "player_0"
        legal = raw.legal_moves(seat)
        observation = env.observe(seat)
        assert list(np.flatnonzero(observation["action_mask"])) == legal and legal
        assert not env.observe(other)["action_mask"].any() and raw.legal_moves(other) == []
        assert observation["observation"].shape == env.observation_space(seat)["observation"].shape
        # The prompt lists the legal moves by OpenSpiel's own strings (the mover's tag cut).
        names = [raw.action_names[m] for m in legal]
        assert raw.text_observation(seat).endswith("It is your move. Legal moves: " + ", ".join(f'"{n}"' for n in names) + ".")
        assert raw.text_observation(other).endswith("It is your opponent's move.")
        spiel = [raw.game_state.action_to_string(raw.game_state.current_player(), m) for m in legal]
        assert [re.sub(raw.spec.mover_tag, "", s) if raw.spec.mover_tag else s for s in spiel] == names
        env.step(RandomPlayer().choose(raw, seat))
        moves += 1
    assert moves <= raw.max_seat_moves
    returns = raw.game_state.returns()
    assert sum(returns) == 0  # all curated games are zero-sum
    assert raw.winner == (None if returns[0] == returns[1] else f"player_{int(returns[1] > returns[0])}")
    for seat in ("player_0", "player_1"):
        assert "The game is over: " in raw.text_observation(seat)
        assert not env.observe(seat)["action_mask"].any()


def test_a_seat_sees_its_own_card_only():
    env = make_multiagent("RAGEN/OS-KuhnPoker-v0")
    for seed in range(20):
        env.reset(seed=seed)
        raw = env.unwrapped
        cards = [("Jack", "Queen", "King")[c] for c in raw.game_state.history()[:2]]
        for seat, own, hidden in (("player_0", *cards), ("player_1", *cards[::-1])):
            text = raw.text_observation(seat)
            assert f"Your card: {own}." in text and (own == hidden or hidden not in text)
        assert not np.array_equal(env.observe("player_0")["observation"], env.observe("player_1")["observation"])


@pytest.mark.parametrize("action", [True, np.True_, None, 1.5, "Bet", np.array([0, 1]), 2, -1])
def test_a_non_move_is_refused_through_env_and_changes_nothing(action):
    for game in (make_multiagent("RAGEN/OS-KuhnPoker-v0"), make_multiagent("RAGEN/OS-KuhnPoker-v0").unwrapped):
        game.reset(seed=0)
        game.step(0)
        with pytest.raises(IllegalMoveError, match=r"ragen_openspiel_kuhn_poker_v0: player_1's action must be "):
            game.step(action)
        assert game.agent_selection == "player_1" and not any(game.terminations.values())
        game.step(1)
        assert len(game.unwrapped.game_state.history()) == 4  # the deal and the two moves


def test_a_masked_move_ends_the_game_through_env_and_is_refused_by_the_raw_env():
    env = make_multiagent("RAGEN/OS-Othello-v0")
    env.reset(seed=0)
    env.step(0)  # a1: no disc outflanked (PettingZoo logs "Illegal move made")
    assert all(env.terminations.values()) and env.rewards == {"player_0": -1, "player_1": 0}
    raw = make_multiagent("RAGEN/OS-Othello-v0").unwrapped
    raw.reset(seed=0)
    with pytest.raises(IllegalMoveError, match=r"player_0 may not play 0 \(a1\); legal: \[19, 26, 37, 44\]"):
        raw.step(0)
    assert raw.game_state.history() == []


class Says:
    """Replies with the texts given, in turn (the last one again once they run out)."""

    def __init__(self, *texts: str) -> None:
        self.name, self.texts, self.calls = "says", list(texts), 0

    def act(self, requests):
        replies = [AgentReply(self.texts[min(self.calls, len(self.texts) - 1)]) for _ in requests]
        self.calls += 1
        return replies


def test_an_llm_seat_plays_by_openspiels_action_strings_through_the_chat_layer():
    # Nim, seed 2: the agent moves first; 'PILE:4, TAKE:7;' (any case) is a legal move.
    agent = Says("<think>empty the big pile</think><answer>PILE:4, TAKE:7;</answer>")
    (result,) = play_matches([GameMatch("RAGEN/OS-Nim-v0", {"player_0": agent, "player_1": RandomPlayer()},
                                        GameChatConfig(), seed=2)])
    first = result.trajectories["player_0"]
    names = make_multiagent("RAGEN/OS-Nim-v0").unwrapped.action_names
    assert result.moves[0] == ("player_0", names.index("pile:4, take:7;")) and first.turns[0].valid
    prompt = first.messages[1]["content"]
    assert "misere Nim" in prompt and '"pile:4, take:7;"' in prompt and "You are player_0: you move first." in prompt


def test_hostile_replies_cost_the_penalty_and_forfeit_without_crashing():
    hostile = Says("<answer>Bet || Pass</answer>", "<answer>\x00\u212aing</answer>", "<think>x</think><answer>Raise</answer>")
    config = GameChatConfig(max_retries=2, on_illegal="forfeit")
    (result,) = play_matches([GameMatch("RAGEN/OS-KuhnPoker-v0", {"player_0": hostile, "player_1": MCTSPlayer()},
                                        config, seed=0)])
    assert result.forfeit == "player_0" and result.winner == "player_1" and result.moves == []
    assert [t.valid for t in result.trajectories["player_0"].turns] == [False, False, False]


def test_cli_eval_plays_an_openspiel_game_against_mcts(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["eval", "env=RAGEN/OS-KuhnPoker-v0", "agent=random", "opponent=mcts", "limit=4", f"out={out}",
                 "progress=false"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"RAGEN/OS-KuhnPoker-v0\s+test\s+mcts\s+4\s", printed)
    summary = json.loads((out / "summary.json").read_text())
    (games,) = summary["games"]
    assert games["games"] == 4 and games["illegal_move_rate"] == 0.0 and games["seat_player_0_games"] == 2
    # The record replays: same seed, same deal, the recorded moves legal again (ragen-bench render's frames).
    from ragen_bench.eval import rundir
    from ragen_bench.render import replay_frames

    for record in rundir.read_episodes(out / rundir.EPISODES):
        frames = replay_frames(record, {})
        assert len(frames) == len(record["game"]["moves"]) + 1


def card_figures() -> dict[str, tuple[int, int, int]]:
    """``env id -> (wins, draws, losses)`` of mcts vs random as the card's table states them."""
    rows = re.findall(r"^\| `(RAGEN/OS-\w+-v0)` \| random \| (\d+) / (\d+) / (\d+) \|", CARD.read_text(), re.MULTILINE)
    return {env_id: tuple(map(int, counts)) for env_id, *counts in rows}


def test_the_card_states_a_figure_for_every_game():
    assert sorted(card_figures()) == sorted(OS_IDS)


def _check_card(env_id: str) -> None:
    result = match(make_multiagent(env_id), MCTSPlayer(), RandomPlayer(), 32)
    assert (result["win"], result["draw"], result["loss"]) == card_figures()[env_id][:3]
    assert f"| {result['mean_return']:+.3f} | {result['mean_moves']} |" in CARD.read_text()


@pytest.mark.parametrize("env_id", CHEAP)
def test_mcts_against_random_gives_the_cards_figures(env_id):
    _check_card(env_id)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(set(OS_IDS) - set(CHEAP)))
def test_mcts_against_random_gives_the_cards_figures_for_the_slow_games(env_id):
    _check_card(env_id)


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "figures"), [
    ("RAGEN/OS-KuhnPoker-v0", (126, 0, 130, 0.172)), ("RAGEN/OS-LeducPoker-v0", (128, 20, 108, 0.883)),
])
def test_over_256_hands_is_mcts_wins_chips_as_the_card_says(env_id, figures):
    result = match(make_multiagent(env_id), MCTSPlayer(), RandomPlayer(), 256)
    assert (result["win"], result["draw"], result["loss"], result["mean_return"]) == figures
    assert f"{figures[0]} / {figures[1]} / {figures[2]}" in CARD.read_text()
