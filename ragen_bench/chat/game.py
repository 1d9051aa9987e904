"""Multi-agent games (``ragen_bench.games``) played as chats, one conversation per seat.

A seat is either a chat agent (the :class:`~ragen_bench.chat.Agent` protocol: a model,
or any object with ``act``) or a scripted player (``choose(game, seat) -> int``, see
:mod:`ragen_bench.games.opponents`).  Each chat seat sees its own game through its own
transcript, built from the same template pieces, parser and action-name matching as
single-agent episodes (:mod:`ragen_bench.chat.episode`):

* the first user message: the game's instruction, its action names, then ``Turn 1``
  with the seat's text view as the state;
* per decision, one assistant reply naming one move; the next user message opens with
  the reward that move earned (its own step's reward plus whatever reached the seat
  before its next decision, e.g. the -1 of a game the opponent then won);
* a reply that is malformed or names no legal move is an invalid turn: it costs the
  format penalty and the seat is asked again with a note, up to ``max_retries`` more
  times; after that ``on_illegal`` decides: ``"forfeit"`` (the seat loses the game) or
  ``"random"`` (a uniformly random legal move is played for it, recorded in the turn's
  ``info``).  Nothing an agent writes can crash the game.  A forfeit's -1 lands on the
  forfeiting seat's last (invalid) turn, every other seat's +1 on its last turn; a question
  that seat was still to answer (simultaneous games) gives way to the closing lines, so
  every reward a transcript states is the one its turn records.
* simultaneous games (the Prisoner's Dilemma) ask every chat seat at once each round;
  a reply may also carry ``<message>..</message>``, passed to the game's message
  channel (which bounds and flattens it) for the other seat to read next round.

Moves are stepped through the env PettingZoo users get (the board games' wrapped ``env()``,
the Prisoner's Dilemma's ``parallel_env()``); the seats read the game under the wrappers
(``.unwrapped``: text views, legal moves, ``np_random``).  Every move played is legal, so
the wrappers change no game.  :func:`ragen_bench.games.registry.make_match_env` builds and
resets that env; this module only plays it.

:func:`~ragen_bench.chat.lockstep.play_matches` drives many matches in lock-step: one
batched ``act`` call per distinct agent per step.  Every chat seat's record is a plain
:class:`~ragen_bench.chat.Trajectory` (``success`` = won, :func:`seat_outcome`), so self-play gives one
trajectory per seat for the trainer; :class:`MatchResult` holds them with the
outcome.  Both seats of a game share ``episode_key``; :attr:`MatchResult.seat_keys`
tells them apart, and an agent that holds both seats (self-play) is asked under those keys.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ragen_bench.chat.config import ChatConfig
from ragen_bench.chat.episode import action_lookup, first_prompt_intro, format_reward
from ragen_bench.chat.parser import parse_response
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest, reply_problem
from ragen_bench.chat.trajectory import Trajectory, TurnRecord, episode_key
from ragen_bench.envs.base import ascii_casefold
from ragen_bench.games.registry import game_entry, make_match_env

ON_ILLEGAL = ("forfeit", "random")
_MESSAGE = re.compile(r"<message>(.*?)</message>", re.DOTALL)


@dataclass(frozen=True)
class GameChatConfig:
    """How illegal moves are handled, and the prompt texts games add to the chat template.

    ``chat`` is the single-agent :class:`ChatConfig` (template, thinking, penalty,
    response cut); its per-turn action limit is 1 for games and its episode budget is
    the game's own bound on a seat's moves.
    """

    chat: ChatConfig = field(default_factory=ChatConfig)
    max_retries: int = 2
    on_illegal: str = "forfeit"
    retry_note: str = "That was not a legal move ({attempts_left} attempt(s) left). Answer with one legal move.\n"
    message_hint: str = (
        "Each round you may also send the other player one short message: write "
        "<message>your text</message> after your answer.\n"
    )

    def __post_init__(self) -> None:
        if type(self.max_retries) is not int or not 0 <= self.max_retries <= 10:
            raise ValueError(f"max_retries must be an int in 0..10, got {self.max_retries!r}")
        if self.on_illegal not in ON_ILLEGAL:
            raise ValueError(f"on_illegal must be one of {ON_ILLEGAL}, got {self.on_illegal!r}")
        if self.chat.tools:
            # A seat's replies go through the <answer> parser; tool calls are single-agent eval only.
            raise ValueError("chat.action_format=tools: multi-agent games take text actions only (action_format=text)")
        if self.chat.images:
            raise ValueError("chat.images: multi-agent games send text only (chat.images=false)")

    def template_hash(self) -> str:
        """The chat template's hash extended with this config's fields and texts."""
        # A seat names one move a reply, so its prompt shows the one-action text whatever chat.max_actions_per_turn says.
        payload = repr((self.chat.template_hash(), self.chat.chat_template.one_action, self.max_retries,
                        self.on_illegal, self.retry_note, self.message_hint))
        return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def is_chat_agent(player: object) -> bool:
    """Chat agents answer requests (``act``); scripted players pick moves (``choose``)."""
    return callable(getattr(player, "act", None))


class _ChatSeat:
    """The conversation of one chat seat."""

    def __init__(self, game: Any, seat: str, config: GameChatConfig, max_moves: int, key: str) -> None:
        self.game, self.seat, self.config, self.key = game, seat, config, key
        self.chat = replace(config.chat, max_actions_per_turn=1, max_actions_per_episode=max_moves)
        self.names = action_lookup(game.action_names)
        names = None if game.action_names is None else tuple(game.action_names)
        intro = first_prompt_intro(self.chat, game.instruction, (), names)
        if hasattr(game, "send_message"):
            intro += config.message_hint
        self.transcript = [{"role": "system", "content": self.chat.chat_template.system}, {"role": "user", "content": intro}]
        self.turns: list[TurnRecord] = []
        self.moves = 0
        self.failures = 0  # invalid replies in a row for the current decision
        self.last_move: TurnRecord | None = None
        self.waiting = False

    def ask(self, note: str = "") -> None:
        """Complete the last user message: the last turn's reward, ``note``, the seat's current view."""
        self.open_reward_line()
        block = self.chat.chat_template.turn.format(
            turn=len(self.turns) + 1, state=self.game.text_observation(self.seat),
            actions_left=self.chat.max_actions_per_episode - self.moves, format=self.chat.output_format,
        )
        self.transcript[-1]["content"] += note + block
        self.waiting = True

    def request(self) -> AgentRequest:
        return AgentRequest(
            messages=[dict(m) for m in self.transcript], episode_key=self.key, turn=len(self.turns) + 1,
            actions_left=self.chat.max_actions_per_episode - self.moves,
        )

    def read(self, reply: AgentReply, legal: Sequence[int | str]) -> int | str | None:
        """Record the reply as a turn; the legal move it names (a free-text game's: its answer), or ``None``."""
        problem = reply_problem(reply)
        if problem is not None:
            raise AgentError(f"invalid reply for {self.key!r} seat {self.seat}: {problem}")
        chat = self.chat
        parsed = parse_response(
            reply.text, think=chat.think, separator=chat.action_separator, max_actions=1, max_chars=chat.max_response_chars
        )
        move: int | str | None = None
        if parsed.actions:
            # A free-text game (TextArena's) takes the answer itself and judges it (move_refused).
            move = parsed.actions[0] if self.names is None else self.names.get(ascii_casefold(parsed.actions[0]))
        valid = (parsed.well_formed and not reply.null_content and move is not None
                 and (self.names is None or move in legal))
        turn = TurnRecord(
            raw_response=reply.text[: chat.max_response_chars], normalized_response=parsed.normalized,
            parsed_actions=list(parsed.actions), valid=valid, action_ids=[move] if valid else [], env_rewards=[],
            format_penalty=0.0 if valid else chat.format_penalty, response_chars=len(reply.text),
            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
            finish_reason=reply.finish_reason, null_content=reply.null_content, refusal=reply.refusal,
        )
        self.turns.append(turn)
        self.transcript.append({"role": "assistant", "content": parsed.normalized})
        self.transcript.append({"role": "user", "content": ""})
        self.waiting = False
        if valid:
            self.failures = 0
            self.moves += 1
            self.last_move = turn
            return move
        self.failures += 1
        return None

    def message(self) -> str | None:
        """The ``<message>`` of the last reply, if it had one."""
        found = _MESSAGE.findall(self.turns[-1].raw_response)
        return found[-1] if found else None

    def refused(self) -> None:
        """The game did not take the last move (a free-text game's judgement): an invalid turn, as an illegal one."""
        turn = self.turns[-1]
        turn.valid, turn.format_penalty = False, self.chat.format_penalty

    def played_for(self, move: int | str, how: str) -> None:
        """Record a move made for the seat after its retries ran out."""
        turn = self.turns[-1]
        turn.action_ids, turn.info = [move], {"fallback": how}
        self.failures = 0
        self.moves += 1
        self.last_move = turn

    def reward(self, value: float) -> None:
        if self.last_move is not None:
            if not self.last_move.env_rewards:
                self.last_move.env_rewards.append(0.0)
            self.last_move.env_rewards[0] += float(value)

    def open_reward_line(self) -> None:
        """Start the next user message with the reward of the last turn (as single-agent chats do)."""
        last = self.turns[-1] if self.turns else None
        if last is not None and not self.transcript[-1]["content"]:
            self.transcript[-1]["content"] = self.chat.chat_template.reward.format(reward=format_reward(last.reward))

    def close(self) -> None:
        self.open_reward_line()
        final = self.chat.chat_template.final_state.format(state=self.game.text_observation(self.seat))
        if self.transcript[-1]["role"] == "user" and len(self.transcript) > 2:
            self.transcript[-1]["content"] += final
        self.waiting = False


@dataclass
class MatchResult:
    """A finished game: who won, and the trajectory of every chat seat."""

    env_id: str
    split: str
    seed: int
    sample: int
    winner: str | None
    forfeit: str | None
    moves: list[tuple[str, int | str]]
    trajectories: dict[str, Trajectory]
    totals: dict[str, float]

    def outcome(self, seat: str) -> str:
        """``"win"``, ``"draw"`` or ``"loss"`` for ``seat`` (:func:`seat_outcome`)."""
        return seat_outcome(self.winner, self.totals, seat)

    @property
    def seat_keys(self) -> dict[str, str]:
        """A distinct key per chat seat (``<episode key>/<seat>``), e.g. to group self-play rollouts."""
        return {seat: f"{episode_key(self.env_id, self.split, self.seed, self.sample)}/{seat}" for seat in self.trajectories}


def seat_outcome(winner: str | None, totals: Mapping[str, float], seat: str) -> str:
    """``"win"``, ``"draw"`` or ``"loss"`` for ``seat`` of a finished game.

    The one winner's seat wins and every other loses.  Without one, two seats drew; in a game
    of more seats the seats that share the largest total win (a team's win: Secret Mafia's
    village, Taboo's team) and the others lose, unless every seat has the same total (a draw).
    """
    if winner is not None:
        return "win" if winner == seat else "loss"
    if len(totals) <= 2 or len(set(totals.values())) == 1:
        return "draw"
    return "win" if totals[seat] == max(totals.values()) else "loss"


class GameMatch:
    """One game between its seats (chat agents or scripted players); see the module docstring."""

    def __init__(
        self, env_id: str, players: Mapping[str, Any], config: GameChatConfig, *,
        seed: int, split: str = "", sample: int = 0, env_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.entry = game_entry(env_id)
        self.env_id, self.seed, self.split, self.sample, self.config = env_id, seed, split, sample, config
        # Moves go through the env PettingZoo users get; the seats read the game under it.
        self.env = make_match_env(env_id, seed=seed, **dict(env_kwargs or {}))
        self.game = self.env.unwrapped
        seats = tuple(self.game.possible_agents)
        if set(players) != set(seats):
            raise ValueError(f"{env_id}: players must be given for exactly the seats {seats}, got {sorted(players)}")
        self.players = dict(players)
        key = episode_key(env_id, split, seed, sample)
        # One agent in several seats (self-play) holds one conversation per seat: each gets its own key.
        shared = [id(p) for p in self.players.values()]
        self.seats = {
            seat: _ChatSeat(self.game, seat, config, self.game.max_seat_moves,
                            f"{key}/{seat}" if shared.count(id(player)) > 1 else key)
            for seat, player in self.players.items() if is_chat_agent(player)
        }
        self.moves: list[tuple[str, int | str]] = []
        self.forfeit: str | None = None
        self.totals = dict.fromkeys(seats, 0.0)
        self._round: dict[str, int] = {}
        self._advance()

    @property
    def done(self) -> bool:
        return self.forfeit is not None or (not self.game.agents if self.entry.parallel else self.game.game_over)

    def pending(self) -> list[str]:
        """The chat seats waiting for a reply."""
        return [seat for seat, chat in self.seats.items() if chat.waiting]

    def request(self, seat: str) -> AgentRequest:
        return self.seats[seat].request()

    def answer(self, seat: str, reply: AgentReply) -> None:
        """Play ``seat``'s reply (see the module docstring), then every scripted move up to the next question."""
        chat = self.seats.get(seat)
        if chat is None or not chat.waiting:
            raise RuntimeError(f"{self.env_id} seed {self.seed}: seat {seat!r} was not asked for a move")
        legal = self.game.legal_moves(seat)
        move = chat.read(reply, legal)
        if move is None and chat.failures > self.config.max_retries:
            if self.config.on_illegal == "forfeit":
                self._forfeit(seat)
                return
            # A free-text game whose text showed no move gets TextArena's usual first example.
            options = list(legal) or ["[0]"]
            move = options[int(self.game.np_random.integers(len(options)))]
            chat.played_for(move if isinstance(move, str) else int(move), "random")
        if move is None:
            chat.ask(self.config.retry_note.format(attempts_left=self.config.max_retries + 1 - chat.failures))
            return
        if self.entry.parallel:
            text = chat.message()
            if text is not None:
                # The seat's own history shows the message as the other seat will read it.
                sent = self.game.send_message(seat, text)
                chat.transcript[-2]["content"] += f"<message>{sent}</message>"
            self._round[seat] = move
        else:
            self._play(seat, move)
        self._advance()

    # -- internals ------------------------------------------------------------------

    def _play(self, seat: str, move: int | str) -> None:
        self.env.step(move)
        self.moves.append((seat, move))
        if seat in self.seats and self.game.infos.get(seat, {}).get("move_refused"):
            self.seats[seat].refused()
        self._credit(self.game.rewards)

    def _credit(self, rewards: Mapping[str, float]) -> None:
        for seat, value in rewards.items():
            self.totals[seat] += value
            if seat in self.seats:
                self.seats[seat].reward(value)

    def _advance(self) -> None:
        """Play scripted moves until a chat seat must answer or the game ends."""
        if self.entry.parallel:
            self._advance_parallel()
        else:
            while not self.game.game_over:
                seat = self.game.agent_selection
                if seat in self.seats:
                    if not self.seats[seat].waiting:
                        self.seats[seat].ask()
                    return
                self._play(seat, self.players[seat].choose(self.game, seat))
        if self.done:
            for chat in self.seats.values():
                chat.close()

    def _advance_parallel(self) -> None:
        """Ask the chat seats for this round's moves; once all have one, play the round."""
        while self.game.agents and not any(chat.waiting for chat in self.seats.values()):
            if len(self._round) < len(self.seats):
                for seat, chat in self.seats.items():
                    if seat not in self._round:
                        chat.ask()
                return
            for seat, player in self.players.items():
                if seat not in self.seats:
                    self._round[seat] = player.choose(self.game, seat)
            _, rewards, *_ = self.env.step(dict(self._round))
            self.moves.extend(sorted(self._round.items()))
            self._round = {}
            self._credit(rewards)

    def _forfeit(self, seat: str) -> None:
        """The seat gives up: it loses (-1 on its last turn), every other seat wins (+1 on its last turn)."""
        self.forfeit = seat
        for other, value in ((seat, -1.0), *((s, 1.0) for s in self.game.possible_agents if s != seat)):
            self.totals[other] += value
            chat = self.seats.get(other)
            if chat is not None and chat.turns:
                # The last turn's reward line is not written yet -- or is, above a question that
                # will never be answered: close() writes the line again in its place.
                if chat.waiting:
                    chat.transcript[-1]["content"] = ""
                chat.last_move = chat.turns[-1]
                chat.reward(value)
        for chat in self.seats.values():
            chat.close()

    def winner(self) -> str | None:
        if self.forfeit is not None:
            others = [s for s in self.game.possible_agents if s != self.forfeit]
            return others[0] if len(others) == 1 else None  # more seats share the win (seat_outcome)
        if self.entry.parallel:
            totals = self.game.totals()
            first, second = (totals[s] for s in self.game.possible_agents)
            return None if first == second else self.game.possible_agents[0 if first > second else 1]
        return self.game.winner

    def result(self) -> MatchResult:
        if not self.done:
            raise RuntimeError(f"game {episode_key(self.env_id, self.split, self.seed, self.sample)} is not over")
        winner = self.winner()
        template_hash = self.config.template_hash()
        trajectories = {}
        for seat, chat in self.seats.items():
            turns = chat.turns
            trajectories[seat] = Trajectory(
                env_id=self.env_id, split=self.split, seed=self.seed, sample=self.sample, template_hash=template_hash,
                messages=[dict(m) for m in chat.transcript], turns=list(turns),
                success=seat_outcome(winner, self.totals, seat) == "win",
                total_reward=sum(t.reward for t in turns), num_turns=len(turns), num_actions=chat.moves,
                num_valid_actions=sum(t.valid for t in turns), num_effective_actions=chat.moves,
                optimal_length=None, terminated=True, truncated=False,
            )
        return MatchResult(
            self.env_id, self.split, self.seed, self.sample, winner, self.forfeit, list(self.moves),
            trajectories, dict(self.totals),
        )
