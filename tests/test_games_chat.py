"""Games played as chats: per-seat transcripts, illegal moves, messages, self-play records."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pettingzoo")

from ragen_bench.chat import AgentError, AgentReply, ChatConfig, Trajectory  # noqa: E402
from ragen_bench.chat import GameChatConfig, GameMatch, format_reward, play_matches  # noqa: E402
from ragen_bench.games.opponents import MinimaxPlayer, OPPONENTS, RandomPlayer, TitForTat  # noqa: E402

TTT, C4, PD = "RAGEN/TicTacToe-v0", "RAGEN/ConnectFour-v0", "RAGEN/PrisonersDilemma-v0"
_LEGAL = re.compile(r"Legal moves: ([^\n]*)\.")


class FirstLegal:
    """Answers the first legal move its prompt lists (or ``cooperate``), counting its calls."""

    name = "first-legal"

    def __init__(self, message: str = "") -> None:
        self.calls, self.message = 0, message

    def act(self, requests):
        self.calls += 1
        replies = []
        for request in requests:
            found = _LEGAL.findall(request.messages[-1]["content"])
            move = found[-1].split(", ")[0] if found else "cooperate"
            replies.append(AgentReply(f"<think>ok</think><answer>{move}</answer>{self.message}"))
        return replies


class Says:
    """Always replies with the same text."""

    def __init__(self, text: str) -> None:
        self.name, self.text = "says", text

    def act(self, requests):
        return [AgentReply(self.text) for _ in requests]


def test_self_play_gives_one_exact_trajectory_per_seat():
    agent = FirstLegal()
    (result,) = play_matches([GameMatch(TTT, {"player_0": agent, "player_1": agent}, GameChatConfig(), seed=5)])
    # First-legal play: X A1, O A2, X A3, O B1, X B2, O B3, X C1 -- X completes A3-B2-C1.
    assert [move for _, move in result.moves] == [0, 1, 2, 3, 4, 5, 6]
    assert result.winner == "player_0" and result.outcome("player_1") == "loss"
    x, o = result.trajectories["player_0"], result.trajectories["player_1"]
    assert (x.num_turns, o.num_turns, x.success, o.success) == (4, 3, True, False)
    assert [t.env_rewards for t in x.turns] == [[0.0], [0.0], [0.0], [1.0]]
    assert [t.env_rewards for t in o.turns] == [[0.0], [0.0], [-1.0]]  # the loss lands on O's last move
    assert (x.total_reward, o.total_reward) == (1.0, -1.0)
    assert [m["role"] for m in o.messages] == ["system", "user"] + ["assistant", "user"] * 3
    assert all("You play O" in m["content"] for m in o.messages[1::2][:-1] if m["role"] == "user")
    assert "Reward: -1.0\n\nFinal state:\nYou play O" in o.messages[-1]["content"]
    assert "B2 is the centre" in x.messages[1]["content"]
    assert set(result.seat_keys.values()) == {f"{TTT}//5/0/player_0", f"{TTT}//5/0/player_1"}
    assert Trajectory.from_dict(o.to_dict()) == o


def test_illegal_replies_cost_the_penalty_then_forfeit():
    config = GameChatConfig(chat=ChatConfig(format_penalty=-0.25), max_retries=2, on_illegal="forfeit")
    match = GameMatch(TTT, {"player_0": Says("<think>x</think><answer>Z9</answer>"), "player_1": MinimaxPlayer()},
                      config, seed=1)
    (result,) = play_matches([match])
    trajectory = result.trajectories["player_0"]
    assert result.forfeit == "player_0" and result.winner == "player_1" and result.moves == []
    assert [t.valid for t in trajectory.turns] == [False, False, False]
    assert trajectory.total_reward == pytest.approx(3 * -0.25 - 1)
    notes = [m["content"] for m in trajectory.messages if "attempt(s) left" in m["content"]]
    assert [re.search(r"\((\d) attempt", n)[1] for n in notes] == ["2", "1"]


def test_a_reply_without_content_is_an_illegal_turn_recorded_with_the_servers_account():
    class Refuses:
        name = "refuses"

        def act(self, requests):
            return [AgentReply("", finish_reason="stop", null_content=True, refusal="No.") for _ in requests]

    config = GameChatConfig(max_retries=1, on_illegal="forfeit")
    (result,) = play_matches([GameMatch(TTT, {"player_0": Refuses(), "player_1": MinimaxPlayer()}, config, seed=1)])
    turns = result.trajectories["player_0"].turns
    assert result.forfeit == "player_0" and len(turns) == 2
    assert all(not t.valid and t.format_penalty == config.chat.format_penalty for t in turns)
    assert all((t.null_content, t.refusal, t.finish_reason) == (True, "No.", "stop") for t in turns)


def test_random_fallback_plays_a_legal_move_after_the_retries():
    config = GameChatConfig(max_retries=0, on_illegal="random")
    match = GameMatch(C4, {"player_0": Says("no idea"), "player_1": RandomPlayer()}, config, seed=3)
    (result,) = play_matches([match])
    trajectory = result.trajectories["player_0"]
    assert result.forfeit is None and result.winner is not None  # the game was played out
    assert all(t.info == {"fallback": "random"} and len(t.action_ids) == 1 for t in trajectory.turns)
    assert trajectory.num_actions == len(trajectory.turns) == sum(1 for seat, _ in result.moves if seat == "player_0")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=80), min_size=1, max_size=4), st.sampled_from([TTT, C4, PD]),
       st.sampled_from(["forfeit", "random"]))
def test_no_reply_text_can_crash_a_game(texts, env_id, on_illegal):
    class Cycle:
        name = "cycle"
        count = 0

        def act(self, requests):
            self.count += 1
            return [AgentReply(texts[(self.count + i) % len(texts)]) for i, _ in enumerate(requests)]

    agent = Cycle()
    config = GameChatConfig(max_retries=1, on_illegal=on_illegal)
    (result,) = play_matches([GameMatch(env_id, {"player_0": agent, "player_1": agent}, config, seed=0)])
    assert set(result.trajectories) == {"player_0", "player_1"}
    for trajectory in result.trajectories.values():
        assert all(t.valid or t.format_penalty == -0.1 for t in trajectory.turns)
        assert shown_rewards(trajectory) == [format_reward(t.reward) for t in trajectory.turns]


def shown_rewards(trajectory: Trajectory) -> list[str]:
    """The reward the user message after each turn states (messages: system, user, then assistant/user pairs)."""
    return [re.match(r"Reward: (\S+)\n", m["content"])[1] for m in trajectory.messages[3::2]]


class ThenSays:
    """Answers with ``first`` replies in turn, then ``rest`` for ever."""

    name = "then-says"

    def __init__(self, first: list[str], rest: str) -> None:
        self.first, self.rest = list(first), rest

    def act(self, requests):
        return [AgentReply(self.first.pop(0) if self.first else self.rest) for _ in requests]


def test_a_forfeit_after_a_move_is_charged_to_the_turn_that_forfeited():
    agent = ThenSays(["<think>x</think><answer>B2</answer>"], "garbage")
    (result,) = play_matches([GameMatch(TTT, {"player_0": agent, "player_1": MinimaxPlayer()},
                                        GameChatConfig(max_retries=1), seed=0)])
    trajectory = result.trajectories["player_0"]
    assert result.forfeit == "player_0"
    assert [t.reward for t in trajectory.turns] == [0.0, -0.1, pytest.approx(-1.1)]
    assert shown_rewards(trajectory) == ["0.0", "-0.1", "-1.1"]


def test_a_seat_still_asked_when_the_other_forfeits_sees_its_win():
    # Prisoner's Dilemma, round 1: player_1 defects against a cooperator (+5).  Round 2: player_0's
    # invalid reply forfeits (seats answer in order) while player_1 is still asked; its +1 lands on its
    # round-1 turn, and the reward line is written again in place of the question.
    loser = ThenSays(["<think>x</think><answer>cooperate</answer>"], "garbage")
    winner = ThenSays([], "<think>x</think><answer>defect</answer>")
    match = GameMatch(PD, {"player_0": loser, "player_1": winner}, GameChatConfig(max_retries=0), seed=0)
    (result,) = play_matches([match])
    trajectory = result.trajectories["player_1"]
    assert result.forfeit == "player_0" and [t.reward for t in trajectory.turns] == [6.0]
    assert shown_rewards(trajectory) == ["6.0"] and "Final state:" in trajectory.messages[-1]["content"]
    assert "Turn 2:" not in trajectory.messages[-1]["content"]  # the unanswered question is gone


def test_messages_reach_the_other_seat_flattened_and_bounded():
    talker = FirstLegal(message="<message>Let us both\ncooperate. " + "x" * 500 + "</message>")
    listener = FirstLegal()
    match = GameMatch(PD, {"player_0": talker, "player_1": listener}, GameChatConfig(), seed=2)
    (result,) = play_matches([match])
    heard = result.trajectories["player_1"].messages[3]["content"]
    assert 'The other player says: "Let us both cooperate. xxx' in heard
    said = re.search(r'says: "([^"]*)"', heard)[1]
    assert len(said) == 200
    assert "says" not in result.trajectories["player_0"].messages[3]["content"].replace("sent no message", "")
    assert result.winner is None and result.totals == {"player_0": 3.0 * match.game.rounds, "player_1": 3.0 * match.game.rounds}
    assert "<message>your text</message>" in result.trajectories["player_0"].messages[1]["content"]
    own = result.trajectories["player_0"].messages[2]["content"]
    assert own == f"<think>ok</think><answer>cooperate</answer><message>{said}</message>"


def test_lock_step_batches_one_call_per_agent_per_step():
    agent = FirstLegal()
    matches = [GameMatch(PD, {"player_0": agent, "player_1": TitForTat()}, GameChatConfig(), seed=s) for s in range(6)]
    results = play_matches(matches)
    assert len(results) == 6
    assert agent.calls == max(m.game.rounds for m in matches)  # not the sum over games


def test_answering_a_seat_that_was_not_asked_is_refused():
    match = GameMatch(TTT, {"player_0": FirstLegal(), "player_1": FirstLegal()}, GameChatConfig(), seed=0)
    assert match.pending() == ["player_0"]
    with pytest.raises(RuntimeError, match="seat 'player_1' was not asked"):
        match.answer("player_1", AgentReply("<answer>A1</answer>"))
    assert match.moves == []


def test_a_protocol_break_is_one_agent_error():
    class Broken:
        name = "broken"

        def act(self, requests):
            return []

    with pytest.raises(AgentError, match="broken.*0 replies for 1 requests"):
        play_matches([GameMatch(TTT, {"player_0": Broken(), "player_1": RandomPlayer()}, GameChatConfig(), seed=0)])


@pytest.mark.parametrize(
    ("settings_", "message"),
    [({"max_retries": -1}, "max_retries"), ({"max_retries": 1.5}, "max_retries"), ({"on_illegal": "pass"}, "on_illegal")],
)
def test_game_chat_config_refuses_bad_settings(settings_, message):
    with pytest.raises(ValueError, match=message):
        GameChatConfig(**settings_)


def test_scripted_players_alone_finish_the_game():
    for env_id, family in ((TTT, "tictactoe"), (PD, "prisoners_dilemma")):
        players = dict(zip(("player_0", "player_1"), (f() for f in list(OPPONENTS[family].values())[:2])))
        match = GameMatch(env_id, players, GameChatConfig(), seed=9)
        assert match.done and match.result().trajectories == {}


def test_self_play_records_render_for_the_trainer_one_per_seat():
    pytest.importorskip("transformers")
    from ragen_bench.agents.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    agent = FirstLegal()
    (result,) = play_matches([GameMatch(TTT, {"player_0": agent, "player_1": agent}, GameChatConfig(), seed=5)])
    for trajectory in result.trajectories.values():
        rendered = trajectory.tokenize(tokenizer, score_placement="turn")
        trained = tokenizer.decode([t for t, m in zip(rendered["input_ids"], rendered["loss_mask"]) if m])
        assert trained.count("<answer>") == trajectory.num_turns
        assert all(turn.normalized_response in trained for turn in trajectory.turns)
        assert "You play" not in trained  # prompts are never trained on
        assert sum(rendered["scores"]) == pytest.approx(trajectory.total_reward)
