"""What the model-backed agents (``hf``, ``openai``, ``vllm``) share: sampling settings,
per-request seeds and where a local model's checkpoint lives.

Seeds are per request, not per batch: :func:`request_seed` depends only on the agent's
``sampling_seed`` and the request's episode and turn, so an episode's sample does not
depend on which other episodes shared its batch, nor on the process that drew it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, fields
from pathlib import Path

from ragen_bench.chat.protocol import AgentRequest


@dataclass(frozen=True)
class SamplingSettings:
    """How tokens are chosen.  ``temperature == 0`` means greedy decoding."""

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 256
    sampling_seed: int = 0

    def __post_init__(self) -> None:
        # Greedy is allowed here (eval's agents); a trainer asks for more (PolicyAgent).
        check_temperature(self.temperature, greedy=True)
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        check_sampling_seed(self.sampling_seed)


# Above this the softmax over a tokenizer's vocabulary is close to uniform: the text is noise, and
# such a value is far likelier a slip (70 for 0.7) than a choice.
MAX_TEMPERATURE = 10.0
# The rule for each kind of user, keyed by whether greedy decoding (temperature 0) is allowed.
TEMPERATURE_RULES = {
    True: f">= 0 and <= {MAX_TEMPERATURE:g} (0: greedy decoding)",
    False: f"> 0 and <= {MAX_TEMPERATURE:g} (training records the probabilities it samples from; greedy has none)",
}


def check_temperature(temperature: float, *, greedy: bool) -> None:
    """The one temperature rule: eval's agents, the train config's rollouts and validation (either backend).

    ``greedy=True`` (an agent that evaluates, ``val.temperature``): ``0 <= temperature <= 10``, 0 meaning
    greedy decoding.  ``greedy=False`` (a trainer's sampling, ``rollout.temperature``): ``0 < temperature
    <= 10``, because the trainer keeps the log-probs of the distribution it drew from.  A ValueError
    starting ``temperature must be`` otherwise (NaN and infinities included).
    """
    # NaN fails every comparison, so a rule written as `temperature < 0` alone would let it through.
    low_ok = temperature >= 0 if greedy else temperature > 0
    if not (math.isfinite(temperature) and low_ok and temperature <= MAX_TEMPERATURE):
        raise ValueError(f"temperature must be {TEMPERATURE_RULES[greedy]}, got {temperature}")


# Sampling seeds must fit every consumer: vLLM seeds numpy's legacy generator, which
# takes 32-bit seeds only.
SAMPLING_SEED_LIMIT = 2**32


def check_sampling_seed(seed: int) -> None:
    """Refuse a sampling seed outside ``0 .. SAMPLING_SEED_LIMIT - 1``."""
    if not 0 <= seed < SAMPLING_SEED_LIMIT:
        raise ValueError(f"sampling_seed must be in 0..{SAMPLING_SEED_LIMIT - 1}, got {seed}")


# The sampling keywords every model-backed factory takes (hf, vllm, openai and the trainer's policy agent).
SAMPLING_KEYS = tuple(field.name for field in fields(SamplingSettings))
# Their defaults in an evaluation: what configs/agent/{hf,vllm,openai}.yaml say (greedy, 128 tokens), so a
# factory called from Python behaves as `ragen-bench eval agent=NAME` does.  tests/test_one_source.py
# checks every agent yaml against its factory's defaults.
EVAL_SAMPLING = SamplingSettings(temperature=0.0, max_new_tokens=128)

def derived_seed(seed: int, *labels: object) -> int:
    """A 32-bit seed for one purpose (``labels``), independent of every other purpose's."""
    digest = hashlib.sha256("\x00".join(map(str, (seed, *labels))).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def request_seed(sampling_seed: int, request: AgentRequest) -> int:
    """A 63-bit seed that depends only on the agent's seed and the request's episode and turn."""
    digest = hashlib.sha256(f"{sampling_seed}\x00{request.episode_key}\x00{request.turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def resolve_model_path(model: str | Path) -> Path:
    """The checkpoint directory behind a path or an alias (converting/building it on first use)."""
    from ragen_bench.agents import smollm2, tiny_model

    if str(model) == smollm2.ALIAS:
        return smollm2.ensure_checkpoint()
    if str(model) == tiny_model.ALIAS:
        return tiny_model.tiny_model_dir()
    if str(model) == tiny_model.SMALL_ALIAS:
        return tiny_model.tiny_model_dir(small=True)
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"model {str(model)!r} is neither an alias ({smollm2.ALIAS!r}, {tiny_model.ALIAS!r}, "
            f"{tiny_model.SMALL_ALIAS!r}) "
            "nor a directory with a config.json"
        )
    return path
