"""A tiny causal LM and tokenizer built locally, for tests and smoke runs (no downloads).

:func:`build_tiny` writes a directory that ``AutoModelForCausalLM.from_pretrained`` and
``AutoTokenizer.from_pretrained`` load offline:

* tokenizer: byte-level BPE trained on a small built-in corpus of this project's
  prompt vocabulary (every byte is in the vocabulary, so any text round-trips), with
  ChatML special tokens and chat template;
* model: a 2-layer Llama (hidden size 64) with random weights from ``seed``.

Same ``seed`` -> same files (weights and vocabulary), so the directory is cached:
:func:`tiny_model_dir` returns a ready copy under the user cache, building it once.
torch, transformers and tokenizers are imported only inside the functions.
"""

from __future__ import annotations

import os
from pathlib import Path

from ragen_bench.cache import MARKER_FILE, build_once, cache_root  # noqa: F401  (MARKER_FILE: for tests)

ALIAS = "tiny"
# A larger model of the same make, for CPU training baselines (baselines/cpu-sokoban-small).
SMALL_ALIAS = "small"
# Bump when what build_tiny writes changes, so cached copies are rebuilt.
BUILD_VERSION = 1

IM_START, IM_END, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
VOCAB_SIZE = 1024
MODEL_SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=8192,
)
# About 3.5M parameters: a 4-layer Llama that the StarPO-on-CPU Sokoban baseline trains from scratch.
SMALL_SHAPE = dict(MODEL_SHAPE, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
                   num_attention_heads=8, num_key_value_heads=4)

# Words and shapes the prompts and replies are made of; BPE merges learned from this
# make typical prompts a few times shorter than raw bytes.
_CORPUS = (
    "You are an agent playing a text game. Read each state carefully and answer in the required format.",
    "Symbols in the state: # wall _ empty floor O target X box P player S player on target",
    "Actions you can take: Up, Down, Left, Right. Each turn you may take up to 5 actions, separated by ||",
    "the whole episode allows 10 actions. Action names are not case-sensitive.",
    "Turn 1: State: Actions left: 10. Reply exactly in this format, with nothing else:",
    "<think> [your reasoning] </think> <answer> [your actions] </answer>",
    "<think>I follow a shortest plan from this state.</think><answer>Up || Left || Down || Right</answer>",
    "Reward: -0.1 Reward: 10.9 Final state: ######\n#_O__#\n#_X__#\n#_P__#\n######",
    "FrozenLake hole goal frozen ice safe slippery Bandit arm Countdown numbers target equation 1 + 2 * 3 - 4 / 5 = 6",
    "The quick brown fox jumps over the lazy dog. 0123456789 ()[]{}<>.,;:!?'\"-+*/=",
)


def build_tiny(directory: str | os.PathLike[str], seed: int = 0, *, small: bool = False) -> Path:
    """Write the tiny model and tokenizer to ``directory`` and return its path.

    A directory already holding this build (same ``BUILD_VERSION`` and ``seed``) is
    reused as is; anything else there is replaced, atomically (see ``ragen_bench.cache``).
    """

    def write(staging: Path) -> None:
        tokenizer = build_tokenizer()
        tokenizer.save_pretrained(staging)
        _build_model(tokenizer, seed, SMALL_SHAPE if small else MODEL_SHAPE).save_pretrained(
            staging, safe_serialization=True
        )

    kind = SMALL_ALIAS if small else ALIAS
    return build_once(Path(directory), write, {"kind": kind, "version": BUILD_VERSION, "seed": seed})


def tiny_model_dir(seed: int = 0, *, small: bool = False) -> Path:
    """The cached build for ``seed`` under the user cache (``ragen_bench.cache.cache_root``)."""
    kind = SMALL_ALIAS if small else ALIAS
    return build_tiny(cache_root() / f"{kind}-v{BUILD_VERSION}-seed{seed}", seed=seed, small=small)


def build_tokenizer():  # -> transformers.PreTrainedTokenizerFast
    """Byte-level BPE over the built-in corpus, ChatML special tokens and template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    core.train_from_iterator(_CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token=IM_END,
        pad_token=PAD,
        chat_template=CHATML_TEMPLATE,
        model_max_length=MODEL_SHAPE["max_position_embeddings"],
    )


def _build_model(tokenizer, seed: int, shape: dict):  # -> transformers.LlamaForCausalLM
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        **shape,
    )
    # A private RNG scope: building the model must not move the caller's torch seed.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=True
    )
    return model
