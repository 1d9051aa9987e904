"""ragen-bench: exact, reproducible text environments for multi-turn LLM agents.

Importing the package registers every environment id under Gymnasium's ``RAGEN/``
namespace, so ``gymnasium.make("RAGEN/Sokoban-6x6-v0")`` works right after
``import ragen_bench`` (and ``gymnasium.make("ragen_bench:RAGEN/Sokoban-6x6-v0")``
works without it).  Nothing heavy (torch, transformers, ray, vllm) is imported here.
"""

from ragen_bench.games.registry import make_multiagent  # PettingZoo is imported only when a game is made
from ragen_bench.plugins import register_all
from ragen_bench.registry import ENV_IDS

__version__ = "0.1.0"

register_all()

__all__ = ["ENV_IDS", "__version__", "make_multiagent", "register_all"]
