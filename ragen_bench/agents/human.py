"""The ``human`` agent: a person at the terminal answers each turn (``ragen-bench play``).

Each request is shown as it is -- the last user message of the conversation (the whole
first prompt on turn 1: rules, symbols, actions; then the reward of the last turn and
the new state) -- with the turn, the actions left and the legal actions.  What the person
enters becomes a reply in the chat format a model must use
(``<think></think><answer>A || B</answer>``, ``<answer>`` only with ``think=False``), so
the episode goes through exactly the parsing and bookkeeping a model's does and its
record replays like any other (``ragen-bench leaderboard verify``).

Two ways to answer
    *Keys*, where the env's actions are the four directions (Sokoban, FrozenLake, 2048):
    an arrow key adds that move to the turn, Backspace takes the last one back, Enter sends
    the turn (at most ``actions_per_turn`` moves, as a model's turn), ``q`` quits.
    *Lines* otherwise (Countdown, math, Sudoku, ``RG-*``, ``TWX-*``, Bandit, games): the
    typed line is the answer -- action names joined by the separator, or the free-text
    answer -- sent with Enter; the line ``q`` quits.

Input the chat would reject is never sent (the choice this agent makes)
    An unknown key, an action name the env does not have (or a move that is not legal now,
    in a game), more actions than a turn holds, an empty line, or a text the parser would
    not read back as that very answer (it holds the answer tags, or is longer than
    ``max_response_chars``) is answered with a one-line hint and asked again; it costs no
    turn and leaves no trace.  From a model the same text *would* be a malformed turn with
    the format penalty, but a model chose to send it, while a person's typo is no answer:
    charging it would measure typing, not play.  Only sent replies are recorded, so the run
    replays exactly.  A wrong but well-formed answer (a Countdown expression that misses
    the target) is sent: it is a move, scored as a model's.

The person reads the screen, so the agent is privileged (``needs_live_env = True``) only to
learn the action names, the action space (free-text answers are checked against it) and,
in games, the legal moves; it never reads the state from the env.

``q``, Ctrl-C, a closed terminal and the end of input raise
:class:`~ragen_bench.chat.protocol.AgentStopped` (see :mod:`.terminal`): the episode in
flight is dropped, the finished ones are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ragen_bench.agents.scripted import format_reply
from ragen_bench.agents.terminal import ARROWS, BACKSPACE, ENTER, Keyboard, Screen, printable, standard_streams
from ragen_bench.chat.parser import parse_response
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest, AgentStopped
from ragen_bench.envs.base import ascii_casefold

QUIT = "q"
KEY_HELP = "arrows add a move, Backspace takes one back, Enter sends the turn, q quits"


def direction_names(action_names: Sequence[str] | None) -> dict[str, str] | None:
    """Arrow key -> the env's own action name, when the env's actions include the four directions."""
    if action_names is None:
        return None
    by_fold = {ascii_casefold(name): name for name in action_names}
    if not all(key in by_fold for key in ARROWS):
        return None
    return {key: by_fold[key] for key in ARROWS}


def check_line(
    line: str,
    *,
    action_names: Sequence[str] | None,
    action_space: Any,
    legal: Sequence[int] | None,
    per_turn: int,
    think: bool,
    separator: str,
    max_chars: int,
) -> tuple[list[str], None] | tuple[None, str]:
    """``(actions, None)`` for a line the chat would take as a whole valid turn, else ``(None, hint)``.

    Action names are matched as the chat matches them (ASCII letters ignoring case) and
    sent in the env's own spelling; a free-text answer must be in ``action_space`` and
    parse back, inside the reply it makes, as exactly itself.  Never raises.
    """
    text = line.strip()
    if not text:
        return None, "type an answer and press Enter (q quits)"
    if action_names is not None:
        by_fold = {ascii_casefold(name): index for index, name in enumerate(action_names)}
        allowed = [name for index, name in enumerate(action_names) if legal is None or index in legal]
        parts = [part.strip() for part in text.split(separator) if part.strip()]
        if len(parts) > per_turn:
            return None, f"a turn holds at most {per_turn} action(s); legal: {', '.join(allowed)}"
        actions = []
        for part in parts:
            index = by_fold.get(ascii_casefold(part))
            if index is None or (legal is not None and index not in legal):
                return None, f"{printable(part)!r} is not a legal action; legal: {', '.join(allowed)}"
            actions.append(action_names[index])
        return actions, None
    parsed = parse_response(
        format_reply([text], thought="", think=think, separator=separator),
        think=think, separator=separator, max_chars=max_chars, split_actions=False,
    )
    if parsed.actions != (text,):
        return None, f"that answer cannot be sent as typed (answer tags, or over {max_chars} characters)"
    try:
        takes = bool(action_space.contains(text))
    except (TypeError, ValueError):  # a space that cannot judge this text does not take it
        takes = False
    if not takes:
        return None, f"{printable(text)!r} is not an answer this env takes"
    return [text], None


class HumanAgent:
    """A person at the terminal (see the module docstring); ``think``, ``separator``,
    ``actions_per_turn`` and ``max_response_chars`` follow the run's chat config."""

    name = "human"
    needs_live_env: ClassVar[bool] = True
    # A batch would make the person answer turn 1 of every episode before turn 2 of any; eval
    # refuses a larger lockstep_episodes before it writes anything (eval.run.check_batch_limit).
    episodes_at_once: ClassVar[int] = 1

    def __init__(
        self, think: bool = True, separator: str = "||", actions_per_turn: int = 5, max_response_chars: int = 4096
    ) -> None:
        if actions_per_turn < 1 or max_response_chars < 1:
            raise ValueError("actions_per_turn and max_response_chars must be >= 1")
        self.think, self.separator = think, separator
        self.actions_per_turn, self.max_response_chars = actions_per_turn, max_response_chars
        self._keyboard: Keyboard | None = None
        self._screen: Screen | None = None
        self._episodes = 0

    def _streams(self) -> tuple[Keyboard, Screen]:
        if self._keyboard is None or self._screen is None:
            self._keyboard, self._screen = standard_streams()
        return self._keyboard, self._screen

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        if len(requests) > self.episodes_at_once:  # a caller other than eval, which checks first
            raise AgentError(f"agent 'human' plays one episode at a time, got {len(requests)} at once; "
                             "give lockstep_episodes=1 (ragen-bench play does)")
        return [AgentReply(self._reply(request)) for request in requests]

    def close(self) -> None:
        if self._keyboard is not None:
            self._keyboard.close()

    def _reply(self, request: AgentRequest) -> str:
        view = request.live_env
        if view is None:
            raise AgentError("agent 'human' needs the live env view (the action names); run it through eval or play")
        keyboard, screen = self._streams()
        names = view.action_names
        legal = view.legal_actions() if hasattr(view, "legal_actions") else None
        # A game seat answers one move per turn; an episode turn holds what the chat keeps.
        per_turn = 1 if legal is not None else min(self.actions_per_turn, request.actions_left or self.actions_per_turn)
        arrows = direction_names(names) if legal is None else None
        if request.turn == 1:
            if self._episodes:
                self._next_episode(request.episode_key, keyboard, screen, keys=arrows is not None)
            self._episodes += 1
        screen.panel(f"{request.episode_key} · turn {request.turn}", request.messages[-1]["content"])
        allowed = [n for i, n in enumerate(names) if legal is None or i in legal] if names is not None else None
        screen.line(
            f"turn {request.turn} · actions left {request.actions_left} · up to {per_turn} per turn"
            + (f" · legal: {', '.join(allowed)}" if allowed is not None else " · free-text answer")
        )
        if arrows is not None:
            actions = self._read_moves(arrows, per_turn, keyboard, screen)
        else:
            actions = self._read_answer(view, names, legal, per_turn, keyboard, screen)
        return format_reply(actions, thought="", think=self.think, separator=self.separator)

    def _next_episode(self, key: str, keyboard: Keyboard, screen: Screen, *, keys: bool) -> None:
        screen.line(f"next: {key} -- Enter plays it, q quits")
        answer = keyboard.read_key() if keys else keyboard.read_line().strip()
        if answer == QUIT:
            raise AgentStopped("quit")

    def _read_moves(self, arrows: dict[str, str], per_turn: int, keyboard: Keyboard, screen: Screen) -> list[str]:
        screen.line(f"keys: {KEY_HELP}")
        moves: list[str] = []
        while True:
            key = keyboard.read_key()
            if key == QUIT:
                raise AgentStopped("quit")
            if key == ENTER and moves:
                return moves
            if key in arrows and len(moves) < per_turn:
                moves.append(arrows[key])
            elif key == BACKSPACE and moves:
                moves.pop()
            elif key in arrows:
                screen.line(f"hint: this turn holds {per_turn} move(s); Enter sends them, Backspace takes one back")
                continue
            elif key == ENTER:
                screen.line("hint: no move yet; press an arrow key first")
                continue
            else:
                screen.line(f"hint: {KEY_HELP}")
                continue
            screen.line(f"moves: {' '.join(moves) or '(none)'}")

    def _read_answer(
        self, view: Any, names: Sequence[str] | None, legal: Sequence[int] | None, per_turn: int,
        keyboard: Keyboard, screen: Screen,
    ) -> list[str]:
        how = f"action names joined by {self.separator!r}" if names is not None and per_turn > 1 else "your answer"
        screen.line(f"type {how}, then Enter (q quits)")
        while True:
            line = keyboard.read_line()
            if line.strip() == QUIT:
                raise AgentStopped("quit")
            actions, hint = check_line(
                line, action_names=names, action_space=view.action_space, legal=legal, per_turn=per_turn,
                think=self.think, separator=self.separator, max_chars=self.max_response_chars,
            )
            if actions is not None:
                return actions
            screen.line(f"hint: {hint}")
