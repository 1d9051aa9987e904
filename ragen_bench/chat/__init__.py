"""Any registered single-agent env, or multi-agent game, as a multi-turn chat (RAGEN's conversation shape).

* :mod:`.protocol` -- the agent protocol (:class:`AgentRequest`, :class:`AgentReply`,
  :class:`Agent`, :class:`AgentError`) and the privileged :class:`LiveEnvView`;
* :mod:`.config` -- :class:`ChatConfig` (limits, penalties, template) and the templates;
* :mod:`.parser` -- ``<think>..</think><answer>A || B</answer>`` parsing, bounded and linear;
* :mod:`.tools` -- ``chat.action_format=tools``: the ``act`` function's schema and the reading of its calls;
* :mod:`.episode` -- :class:`ChatEpisode`, the state machine of one env episode as turns;
* :mod:`.game` -- :class:`GameMatch`, the state machine of one multi-agent game as
  one chat per seat (:class:`GameChatConfig`, :class:`MatchResult`);
* :mod:`.lockstep` -- the batch drivers: :func:`run_lockstep` (episodes) and
  :func:`play_matches` (games), one batched ``act`` call per step;
* :mod:`.tokens` -- :class:`TokenLayout`, the one token layout of an episode (ids, bridges, masks);
* :mod:`.trajectory` -- :class:`Trajectory` records (laid out for training by :mod:`.tokens`).

Eval and training both go through this package, so a prompt seen in training is
byte-for-byte the prompt seen in evaluation.
"""

from ragen_bench.chat.config import DEFAULT_TEMPLATE, TEMPLATES, ChatConfig, ChatTemplate
from ragen_bench.chat.episode import ChatEpisode, format_reward
from ragen_bench.chat.lockstep import play_matches, run_lockstep
from ragen_bench.chat.game import GameChatConfig, GameMatch, MatchResult
from ragen_bench.chat.parser import ParsedResponse, parse_response
from ragen_bench.chat.protocol import Agent, AgentError, AgentReply, AgentRequest, LiveEnvView
from ragen_bench.chat.tokens import TokenLayout, TokenLayoutError
from ragen_bench.chat.trajectory import Trajectory, TurnRecord, episode_key

__all__ = [
    "DEFAULT_TEMPLATE",
    "Agent",
    "AgentError",
    "AgentReply",
    "AgentRequest",
    "LiveEnvView",
    "TEMPLATES",
    "TokenLayout",
    "TokenLayoutError",
    "ChatConfig",
    "ChatEpisode",
    "ChatTemplate",
    "GameChatConfig",
    "GameMatch",
    "MatchResult",
    "ParsedResponse",
    "Trajectory",
    "TurnRecord",
    "episode_key",
    "format_reward",
    "parse_response",
    "play_matches",
    "run_lockstep",
]
