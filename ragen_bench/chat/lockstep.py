"""Lock-step batch drivers: many chats played together, one batched ``act`` call per step.

* :func:`run_lockstep` -- single-agent :class:`~ragen_bench.chat.episode.ChatEpisode` episodes,
  one ``agent.act`` per turn;
* :func:`play_matches` -- multi-agent :class:`~ragen_bench.chat.game.GameMatch` games,
  one ``act`` per distinct chat agent per step.

The state machines (what a turn does) live in :mod:`.episode` and :mod:`.game`;
this module only decides who is asked when, checks each batch of replies against the
agent protocol before any of it is used, and hands finished records to the callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ragen_bench.chat.episode import ChatEpisode
from ragen_bench.chat.protocol import (
    Agent,
    AgentError,
    AgentRequest,
    agent_name,
    check_replies,
    require_acts_by_tools,
    wants_live_env,
)
from ragen_bench.chat.trajectory import Trajectory

if TYPE_CHECKING:
    from ragen_bench.chat.game import GameMatch, MatchResult


def run_lockstep(
    episodes: Sequence[ChatEpisode],
    agent: Agent,
    *,
    on_finished: Callable[[Trajectory], None] | None = None,
    progress: Callable[[Trajectory], None] | None = None,
    on_turn: Callable[[int], None] | None = None,
) -> list[Trajectory]:
    """Play all episodes together: one batched ``agent.act`` call per turn.

    Episodes not yet reset are reset first; ones already finished are returned as
    they are, without callbacks.  Each finished episode leaves the batch
    at once and its trajectory goes to ``on_finished`` (e.g. to be written) and then
    ``progress`` (e.g. a progress bar); after each batched turn ``on_turn`` gets the number of
    episodes that played it (a bar that moves per turn).  Returns trajectories in input order.

    Requests carry the live env view only when the agent declares ``needs_live_env``.
    A batch of replies that breaks the protocol raises :class:`AgentError` before any
    of it is played, so no callback ever sees a malformed turn.  Before anything is
    reset, a repeated episode or two episodes sharing one env raise ``ValueError``, and
    an ``agent`` without ``name``/``act``/``close``, or one that does not act by tool calls
    (``acts_by_tools``) given tools-mode episodes, raises :class:`AgentError`.
    """
    _check_lockstep(episodes, agent)
    for episode in episodes:
        if not episode.started:
            episode.reset()
    results = [episode.trajectory() if episode.done else None for episode in episodes]
    live = [(index, episode) for index, episode in enumerate(episodes) if not episode.done]
    privileged = wants_live_env(agent)
    while live:
        requests = [episode.request(live_env=privileged) for _, episode in live]
        replies = check_replies(agent, requests, _act(agent, requests))
        if on_turn is not None:
            on_turn(len(replies))
        still_live = []
        for (index, episode), reply in zip(live, replies):
            episode._play(reply)  # the batch was checked as a whole just above
            if not episode.done:
                still_live.append((index, episode))
                continue
            trajectory = episode.trajectory()
            results[index] = trajectory
            if on_finished is not None:
                on_finished(trajectory)
            if progress is not None:
                progress(trajectory)
        live = still_live
    return [t for t in results if t is not None]


def _check_lockstep(episodes: Sequence[ChatEpisode], agent: object) -> None:
    """Refuse what would play wrongly rather than fail: a shared env, a repeated episode, a non-agent.

    Two episodes on one env would reset each other's state, and every later step would
    be scored on the wrong level without any error.
    """
    if not isinstance(agent, Agent):
        raise AgentError(f"run_lockstep needs an agent (name, act, close), got {type(agent).__name__}")
    envs = [id(episode.env.unwrapped) for episode in episodes]
    if len(set(map(id, episodes))) != len(episodes) or len(set(envs)) != len(envs):
        raise ValueError("run_lockstep: each episode must appear once and have an env of its own")
    if any(episode.config.tools for episode in episodes):
        require_acts_by_tools(agent)


def _act(agent: Agent, requests: Sequence[AgentRequest]) -> object:
    """``agent.act(requests)``, with the agent named in the errors the CLI prints as one line.

    A ``ValueError``/``KeyError``/``OSError`` from inside an agent would otherwise reach the
    user as a bare message (``'boom'``) that does not say which component failed.
    """
    try:
        return agent.act(requests)
    except AgentError:
        raise
    except (ValueError, KeyError, OSError) as error:
        raise AgentError(f"agent {agent_name(agent)!r} failed in act(): {type(error).__name__}: {error}") from error


def play_matches(
    matches: Sequence[GameMatch], *, on_finished: Callable[[MatchResult], None] | None = None
) -> list[MatchResult]:
    """Play all matches together: each step, one batched ``act`` per distinct chat agent.

    Each finished match's result goes to ``on_finished`` at once.  A batch of replies
    that breaks the protocol raises :class:`AgentError` before any of it is used.
    """
    results: list[MatchResult | None] = [None] * len(matches)

    def finish(index: int) -> None:
        results[index] = matches[index].result()
        if on_finished is not None:
            on_finished(results[index])

    live = []
    for index, match in enumerate(matches):
        (finish if match.done else live.append)(index)
    while live:
        by_agent: dict[int, tuple[Any, list[tuple[int, str]]]] = {}
        for index in live:
            for seat in matches[index].pending():
                agent = matches[index].players[seat]
                by_agent.setdefault(id(agent), (agent, []))[1].append((index, seat))
        for agent, asks in by_agent.values():
            requests = [matches[index].request(seat) for index, seat in asks]
            replies = check_replies(agent, requests, agent.act(requests))
            for (index, seat), reply in zip(asks, replies):
                # A simultaneous game can end mid-batch (the other seat forfeited): later replies have no game.
                if not matches[index].done:
                    matches[index].answer(seat, reply)
        still = []
        for index in live:
            (finish if matches[index].done else still.append)(index)
        live = still
    return [result for result in results if result is not None]
