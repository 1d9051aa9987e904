"""Replay an episode record and compare it with what the replay produces: the one rule.

Our envs and games are deterministic given their seed, so a record of ``episodes.jsonl``
can be checked completely: the env is reset with the recorded seed, every recorded
``raw_response`` (with its ``tool_calls``, under ``chat.action_format=tools``) is fed through
the chat layer under the run's chat settings -- the code path of ``ragen-bench eval`` -- and the record the replay produces must equal the
recorded one, field by field and turn by turn.  A game is replayed the same way: the
agent seat's replies (and an agent opponent's, from ``game.opponent_trajectory``) go
through :class:`~ragen_bench.chat.GameMatch`, a scripted opponent plays again (its
choices are seeded by the game), and the replayed log line, ``game`` (moves per seat,
outcome, totals) included, must equal the recorded one.

``ragen-bench leaderboard verify`` and ``ragen-bench render`` both apply this rule: a
submission's numbers and a video's frames are only what the run played.  A failure is a
:class:`ReplayMismatch` naming where it is (file, line, episode key, turn, field) and,
for a differing value, the expected and the found one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from ragen_bench import runfiles

if TYPE_CHECKING:
    from ragen_bench.chat.protocol import AgentReply

# Turn fields in the order they are compared (what a reader checks first comes first).
TURN_ORDER = (
    "raw_response", "tool_calls", "parsed_actions", "valid", "action_ids", "env_rewards", "format_penalty",
    "normalized_response", "num_effective_actions", "info",
)
EPISODE_ORDER = (
    "env_id", "split", "seed", "sample", "template_hash", "success", "total_reward", "num_turns",
    "num_actions", "num_valid_actions", "num_effective_actions", "optimal_length", "terminated", "truncated",
)
_WHERE = ("file", "line", "episode", "seat", "turn", "field")


class ReplayMismatch(ValueError):
    """A record that is malformed or differs from its replay.

    ``problem`` says what is wrong; ``where`` holds the keyword arguments that locate it
    (``file``, ``line``, ``episode``, ``seat`` for a game, ``turn``, ``field``, and ``expected``/``found`` for a
    differing value), so a caller can re-raise it as its own error type unchanged.
    """

    def __init__(self, problem: str, **where: Any) -> None:
        self.problem = problem
        self.where = where
        super().__init__(describe(problem, **where))


def describe(problem: str, **where: Any) -> str:
    """One line: the place (``file:line, episode K, seat S, turn N, field F``), the problem, the two values."""
    place = where.get("file") or ""
    if where.get("line") is not None:
        place += f":{where['line']}"
    parts = [place] if place else []
    parts += [f"{key} {where[key]}" for key in _WHERE[2:] if where.get(key) is not None]
    text = f"{', '.join(parts)}: {problem}" if parts else problem
    if "expected" in where or "found" in where:
        text += f" (expected {_short(where.get('expected'))}, found {_short(where.get('found'))})"
    return text


def _short(value: Any, limit: int = 120) -> str:
    # An edited 4 KB reply must still give one readable line.
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def record_slot(record: Any, where: Mapping[str, Any]) -> tuple[str, str, int, int]:
    """``(env_id, split, seed, sample)`` of a record, each of its exact JSON type."""
    if type(record) is not dict:
        raise ReplayMismatch("an episode record must be a JSON object", **where)
    for field, kind in (("env_id", str), ("split", str), ("seed", int), ("sample", int)):
        if type(record.get(field)) is not kind:
            raise ReplayMismatch(f"missing or not a {kind.__name__}", field=field, **where)
    return record["env_id"], record["split"], record["seed"], record["sample"]


def replay_episode(record: Mapping[str, Any], env: Any, chat_config: Any, *,
                   where: Mapping[str, Any]) -> list[tuple[int, int] | None]:
    """Replay a single-agent record on ``env``; raises :class:`ReplayMismatch` unless it matches.

    Returns, per turn, ``(characters, messages)`` of the prompt the reply answered
    (``None`` where the turn records no prompt token count), for checks of token counts.
    """
    from ragen_bench.chat import ChatEpisode

    turns = _turns(record.get("turns"), where, "turns")
    episode = ChatEpisode(env, chat_config, env_id=record["env_id"], seed=record["seed"],
                          sample=record["sample"], split=record["split"])
    episode.reset()
    prompts: list[tuple[int, int] | None] = []
    for number, turn in enumerate(turns, start=1):
        at = {**where, "turn": number}
        if episode.done:
            _require_same_turns(record, episode, turns, where)
            raise ReplayMismatch("the episode had already ended; this turn cannot have been played",
                                 field="num_turns", expected=number - 1, found=len(turns), **at)
        reply = recorded_reply(turn, at)
        if reply.prompt_tokens is None:
            prompts.append(None)
        else:
            messages = episode.messages
            prompts.append((sum(len(message["content"]) for message in messages), len(messages)))
        _answer(lambda: episode.step(reply), at)
    if not episode.done:
        _require_same_turns(record, episode, turns, where)
        raise ReplayMismatch("the episode had not ended after the recorded turns (turns are missing)",
                             field="num_turns", **where)
    require_same(record, _replayed(episode, turns), where)
    return prompts


def _replayed(episode: Any, turns: list[dict[str, Any]]) -> dict[str, Any]:
    replayed = episode.trajectory().to_dict()
    _keep_response_chars(replayed, turns)
    return replayed


def _require_same_turns(record: Mapping[str, Any], episode: Any, turns: list[dict[str, Any]],
                        where: Mapping[str, Any]) -> None:
    """Before saying a replay ended at another turn: the first turn whose replay differs, if one does.

    An edited reply (an edited tool call) changes what its turn did; that turn is where the record lies.
    """
    try:
        difference = first_episode_difference(record, _replayed(episode, turns))
    except RecursionError:
        return  # require_same names a value nested too deeply; the caller's own message is no worse
    if difference is not None and difference[0] is not None:
        require_same(record, _replayed(episode, turns), where)


def replay_game(record: Mapping[str, Any], game_config: Any, env_kwargs: Mapping[str, Any], *,
                where: Mapping[str, Any], opponent: str | None = None) -> None:
    """Replay a game record (both seats); raises :class:`ReplayMismatch` unless it matches.

    The agent's seat is the seed's (:func:`~ragen_bench.games.seeds.agent_seat`), a scripted
    opponent plays again from the seed, and a mismatch names the ``seat`` whose side differs.
    ``opponent``: the run's opponent label, which the record's must equal (``None``: not checked).
    """
    from ragen_bench.chat import GameMatch
    from ragen_bench.eval.config import scripted_opponents
    from ragen_bench.eval.games import game_record
    from ragen_bench.games.seeds import seating

    game = record.get("game")
    if type(game) is not dict:
        raise ReplayMismatch("missing or not an object", field="game", **where)
    seat, others = seating(record["env_id"], record["seed"])
    other = others[0]  # the opponent's side, as a mismatch names it (the first of them, in a game of more seats)
    if game.get("agent_seat") != seat:
        raise ReplayMismatch(f"the seats are swapped: the seed decides the seat, and on seed {record['seed']} "
                             f"the agent plays {seat}", seat=seat, field="game.agent_seat", expected=seat,
                             found=game.get("agent_seat"), **where)
    label = game.get("opponent")
    if opponent is not None and label != opponent:
        raise ReplayMismatch("is not the run's opponent (the manifest's config.opponent)", seat=other, field="game.opponent",
                             expected=opponent, found=label, **where)
    scripted = scripted_opponents(record["env_id"])
    if type(label) is str and label in scripted:
        rivals: dict[str, Any] = {each: scripted[label]() for each in others}
    elif type(label) is str and label.startswith("agent:") and len(others) == 1:
        rival_record = game.get("opponent_trajectory")
        if type(rival_record) is not dict:
            raise ReplayMismatch("missing or not an object", seat=other, field="game.opponent_trajectory", **where)
        rivals = {other: _RecordedSeat(_turns(rival_record.get("turns"), where, "game.opponent_trajectory.turns"),
                                       "game.opponent_trajectory", {**where, "seat": other})}
    else:
        named = f"one of {sorted(scripted)}" + (" or agent:NAME" if len(others) == 1 else "")
        raise ReplayMismatch(f"names no opponent of this game ({named})", seat=other, field="game.opponent",
                             found=label, **where)
    players = {seat: _RecordedSeat(_turns(record.get("turns"), where, "turns"), "", {**where, "seat": seat}), **rivals}
    match = GameMatch(record["env_id"], players, game_config, seed=record["seed"], split=record["split"],
                      sample=record["sample"], env_kwargs=env_kwargs)
    while not match.done:
        pending = match.pending()
        if not pending:  # GameMatch plays scripted moves itself; a live game always waits on a chat seat
            raise ReplayMismatch("the replayed game waits on no seat", **where)
        for waiting in pending:
            if not match.done:
                reply, at = players[waiting].next_reply()
                _answer(lambda: match.answer(waiting, reply), at)
    for player in players.values():
        if isinstance(player, _RecordedSeat):
            player.require_all_played()
    replayed = game_record(match.result(), label)
    _keep_response_chars(replayed, record["turns"])
    if replayed["game"]["opponent_trajectory"] is not None:  # an agent opponent: its turns were checked above
        _keep_response_chars(replayed["game"]["opponent_trajectory"], game["opponent_trajectory"]["turns"])
    try:
        require_same(record, replayed, where)
    except ReplayMismatch as error:
        field = error.where.get("field") or ""
        raise ReplayMismatch(error.problem, seat=_seat_of(field, replayed["game"], seat, other),
                             **error.where) from None


def _keep_response_chars(replayed: Mapping[str, Any], turns: Sequence[Mapping[str, Any]]) -> None:
    """Give the replayed turns the recorded ``response_chars``: the one turn field replay cannot know (the
    reply's length before the cut at ``max_response_chars``); the leaderboard bounds it by the text kept."""
    for turn, recorded in zip(replayed["turns"], turns):
        turn["response_chars"] = recorded.get("response_chars")


def _seat_of(field: str, game: Mapping[str, Any], seat: str, other: str) -> str:
    """The seat whose side a differing field of a game record is: a move's player, a total's, the opponent's record."""
    if field.startswith("game.opponent"):
        return other
    move = re.match(r"game\.moves\[(\d+)\]", field)
    if move and int(move[1]) < len(game["moves"]):
        return game["moves"][int(move[1])][0]
    total = re.match(r"game\.totals\.(player_\d)", field)
    return total[1] if total and total[1] in (seat, other) else seat


class _RecordedSeat:
    """A chat seat that answers with one recorded turn after another."""

    def __init__(self, turns: list[dict[str, Any]], prefix: str, where: Mapping[str, Any]) -> None:
        self.turns, self.prefix, self.where, self.played = turns, prefix, where, 0

    def act(self, requests: Sequence[Any]) -> NoReturn:  # makes it a chat seat for GameMatch; never asked
        raise RuntimeError("a recorded seat is answered by replay_game, not asked")

    def next_reply(self) -> tuple[Any, dict[str, Any]]:
        field = f"{self.prefix}.num_turns" if self.prefix else "num_turns"
        if self.played == len(self.turns):
            raise ReplayMismatch("the game had not ended after the recorded turns (turns are missing)",
                                 field=field, **self.where)
        self.played += 1
        at = {**self.where, "turn": self.played}
        return recorded_reply(self.turns[self.played - 1], at), at

    def require_all_played(self) -> None:
        if self.played < len(self.turns):
            field = f"{self.prefix}.num_turns" if self.prefix else "num_turns"
            raise ReplayMismatch("the game had already ended; this turn cannot have been played", field=field,
                                 expected=self.played, found=len(self.turns), **{**self.where, "turn": self.played + 1})


def _turns(turns: Any, where: Mapping[str, Any], field: str) -> list[dict[str, Any]]:
    if type(turns) is not list or not all(type(turn) is dict for turn in turns):
        raise ReplayMismatch("must be a list of turn objects", field=field, **where)
    return turns


def _answer(step: Any, at: Mapping[str, Any]) -> None:
    """Run one replayed step; the protocol's refusal of a recorded reply becomes a mismatch at its turn."""
    from ragen_bench.chat import AgentError

    try:
        step()
    except AgentError as error:
        raise ReplayMismatch(str(error).split(": ", 1)[-1], field="turns", **at) from None


def recorded_reply(turn: Mapping[str, Any], at: Mapping[str, Any]) -> AgentReply:
    """The :class:`~ragen_bench.chat.AgentReply` a recorded turn holds."""
    from ragen_bench.chat import AgentReply
    from ragen_bench.chat.protocol import tool_calls_problem
    from ragen_bench.chat.trajectory import unpack_text

    try:
        text = unpack_text(turn.get("raw_response"))
    except (UnicodeError, AttributeError):  # a packed text that is no unicode_escape string
        raise ReplayMismatch("holds a malformed escaped text", field="raw_response", **at) from None
    if type(text) is not str:
        raise ReplayMismatch("missing or not a string", field="raw_response", **at)
    try:
        refusal = unpack_text(turn.get("refusal"))
    except (UnicodeError, AttributeError):
        raise ReplayMismatch("holds a malformed escaped text", field="refusal", **at) from None
    calls = turn.get("tool_calls")
    if (problem := tool_calls_problem(calls)) is not None:
        raise ReplayMismatch(problem.split(" ", 1)[1], field="tool_calls", **at)
    # A reply without content replays as one (a malformed turn); the protocol check in the
    # episode's step refuses ill-typed values of these fields.
    return AgentReply(text=text, prompt_tokens=turn.get("prompt_tokens"),
                      completion_tokens=turn.get("completion_tokens"), finish_reason=turn.get("finish_reason"),
                      null_content=turn.get("null_content", False), refusal=refusal, tool_calls=calls)


def require_same(record: Mapping[str, Any], replayed: Mapping[str, Any], where: Mapping[str, Any]) -> None:
    """Raise :class:`ReplayMismatch` at the first field where ``record`` differs from ``replayed``."""
    from ragen_bench.eval import rundir

    encoded = rundir.encode_line(replayed)
    # Fast path: equal JSON text means equal values of equal types (true is not 1).
    if rundir.encode_line(record) == encoded:
        return
    try:
        # As JSON reads it back, so types compare exactly (a tuple is a list there).
        difference = first_episode_difference(record, json.loads(encoded))
    except RecursionError:
        # Values nested just under the parser's limit can still exhaust the stack when compared.
        raise ReplayMismatch("a value is nested too deeply", **where) from None
    if difference is not None:
        turn_number, field, expected_value, found_value = difference
        problem = "differs from the replay"
        turns = record.get("turns")
        if turn_number is not None and type(turns) is list and "tool_calls" in turns[turn_number - 1]:
            # What the replay fed in is the record's own tool_calls: an edit of them shows here first.
            problem += " of the turn's recorded tool_calls"
        raise ReplayMismatch(problem, turn=turn_number, field=field,
                             expected=expected_value, found=found_value, **where)


def first_episode_difference(
    found: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[int | None, str, Any, Any] | None:
    """``(turn, field, expected, found)`` of the first difference, checked turn by turn.

    Turn ``k`` covers ``turns[k-1]``, the assistant message and the user message
    after it; message 1 (the first prompt) counts to turn 1.  Episode totals follow
    (a game's ``game`` object among them, compared to its first differing leaf).
    """
    found_turns, expected_turns = found.get("turns"), expected["turns"]
    found_messages = found.get("messages")
    if type(found_messages) is not list:
        return None, "messages", "a list", found_messages
    for k, expected_turn in enumerate(expected_turns, start=1):
        found_turn = found_turns[k - 1]
        difference = _first_field_difference(expected_turn, found_turn, TURN_ORDER)
        if difference is not None:
            return (k, *difference)
        for index in ([0, 1] if k == 1 else []) + [2 * k, 2 * k + 1]:
            if index >= len(expected["messages"]):
                continue
            if index >= len(found_messages):
                return k, "messages (length)", len(expected["messages"]), len(found_messages)
            difference = runfiles.difference(expected["messages"][index], found_messages[index], f"messages[{index}]",
                                             strict=True)
            if difference is not None:
                role = expected["messages"][index]["role"]
                return k, f"{difference[0]} ({role} message)", difference[1], difference[2]
    difference = _first_field_difference(expected, found, EPISODE_ORDER)
    return None if difference is None else (None, *difference)


def _first_field_difference(expected: Mapping[str, Any], found: Mapping[str, Any],
                            order: Sequence[str]) -> tuple[str, Any, Any] | None:
    """The first differing field, ``order``'s fields first, then the others expected, then the extra ones found."""
    fields = [*order, *(f for f in expected if f not in order), *(f for f in found if f not in expected)]
    for field in fields:
        difference = runfiles.difference(
            expected.get(field, runfiles.ABSENT), found.get(field, runfiles.ABSENT), field, strict=True
        )
        if difference is not None:
            return difference
    return None
