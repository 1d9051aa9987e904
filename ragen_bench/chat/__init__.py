"""Any registered single-agent env as a multi-turn chat (RAGEN's conversation shape).

* :mod:`.protocol` -- the agent protocol (:class:`AgentRequest`, :class:`AgentReply`,
  :class:`Agent`, :class:`AgentError`) and the privileged :class:`LiveEnvView`;
* :mod:`.config` -- :class:`ChatConfig` (limits, penalties, template) and the templates;
* :mod:`.parser` -- ``<think>..</think><answer>A || B</answer>`` parsing, bounded and linear;
* :mod:`.episode` -- :class:`ChatEpisode` (one env episode as turns) and :func:`run_lockstep`;
* :mod:`.tokens` -- :class:`TokenLayout`, the one token layout of an episode (ids, bridges, masks);
* :mod:`.trajectory` -- :class:`Trajectory` records (laid out for training by :mod:`.tokens`).

Eval and training both go through this package, so a prompt seen in training is
byte-for-byte the prompt seen in evaluation.
"""

from ragen_bench.chat.config import DEFAULT_TEMPLATE, TEMPLATES, ChatConfig, ChatTemplate
from ragen_bench.chat.episode import ChatEpisode, format_reward, run_lockstep
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
    "ParsedResponse",
    "Trajectory",
    "TurnRecord",
    "episode_key",
    "format_reward",
    "parse_response",
    "run_lockstep",
]
