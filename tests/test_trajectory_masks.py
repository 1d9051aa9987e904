"""Trajectory.tokenize: the trainer's token layout (ragen_bench.chat.tokens) of a finished episode.

Checked on chat-template families set on the locally built tiny tokenizer: ChatML (its own)
and a Zephyr-style template (with ``</s>`` as its end-of-turn token) lay out; a Llama-3-style
template that trims replies cannot (the trainer could not extend a context whose template
rewrites a sampled reply), nor can a template that closes replies with another token than
the tokenizer's eos.  The masked tokens must decode to exactly the assistant replies, each
followed by its end-of-turn marker.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from ragen_bench.agents.tiny_model import build_tokenizer  # noqa: E402
from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode  # noqa: E402
from tests.test_chat_episode import Corridor  # noqa: E402

LLAMA3_STYLE = (
    "{{ '<|begin_of_text|>' }}"
    "{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)
ZEPHYR_STYLE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\n' + message['content'] + '</s>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}"
)
# template -> (template, end-of-turn marker after each reply: the tokenizer's eos)
TEMPLATES = {
    "chatml": (None, "<|im_end|>"),
    "zephyr": (ZEPHYR_STYLE, "</s>"),
}
REPLIES = (
    "<think>go right</think><answer>Right || Right</answer>",
    "  I am confused <answer>",  # malformed: kept raw (the normalized text is the raw text)
    "<think>again</think><answer>Right</answer>",
)


@pytest.fixture(scope="module")
def base_tokenizer():
    tokenizer = build_tokenizer()
    tokenizer.add_special_tokens(
        {"additional_special_tokens": ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "</s>"]}
    )
    return tokenizer


def _tokenizer(base, name):
    template, end_marker = TEMPLATES[name]
    tokenizer = copy.deepcopy(base)
    if template is not None:
        tokenizer.chat_template = template
    tokenizer.eos_token = end_marker
    return tokenizer


@pytest.fixture(scope="module")
def trajectory():
    episode = ChatEpisode(Corridor(length=3), ChatConfig(), env_id="test/Corridor", seed=1)
    episode.reset()
    for reply in REPLIES:
        episode.step(AgentReply(reply))
    trajectory = episode.trajectory()
    assert trajectory.success and trajectory.num_turns == 3
    return trajectory


def _assistant_texts(trajectory):
    return [m["content"] for m in trajectory.messages if m["role"] == "assistant"]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_masked_tokens_decode_to_exactly_the_replies_and_their_end_markers(base_tokenizer, trajectory, name):
    tokenizer = _tokenizer(base_tokenizer, name)
    _, end_marker = TEMPLATES[name]
    rendered = trajectory.tokenize(tokenizer)
    ids, mask = rendered["input_ids"], rendered["loss_mask"]
    assert len(ids) == len(mask) == len(rendered["attention_mask"]) == len(rendered["scores"])
    assert set(rendered["attention_mask"]) == {1}

    # Each maximal masked run is one reply plus its end-of-turn marker, in order.
    runs, current = [], []
    for token, masked in zip(ids, mask):
        if masked:
            current.append(token)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    decoded = [tokenizer.decode(run) for run in runs]
    assert decoded == [text + end_marker for text in _assistant_texts(trajectory)]
    # Every system/user message is wholly unmasked, and no reply leaks into the unmasked part.
    unmasked = tokenizer.decode([t for t, m in zip(ids, mask) if not m])
    for message in trajectory.training_messages():
        assert (message["content"] in unmasked) == (message["role"] != "assistant")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_the_row_is_the_templates_own_rendering_through_the_last_reply(base_tokenizer, trajectory, name):
    tokenizer = _tokenizer(base_tokenizer, name)
    messages = trajectory.training_messages()
    rendered = tokenizer.apply_chat_template(messages, tokenize=False)
    row = tokenizer.decode(trajectory.tokenize(tokenizer)["input_ids"])
    assert rendered.startswith(row) and row.endswith(TEMPLATES[name][1]) and rendered[len(row) :].isspace()


def test_a_template_that_trims_replies_is_refused(base_tokenizer, trajectory):
    # The second reply has leading spaces: the template would rewrite what the model wrote.
    tokenizer = copy.deepcopy(base_tokenizer)
    tokenizer.chat_template, tokenizer.eos_token = LLAMA3_STYLE, "<|eot_id|>"
    with pytest.raises(ValueError, match="prefix-stable"):
        trajectory.tokenize(tokenizer)


def test_a_template_that_closes_replies_with_another_token_than_eos_is_refused(base_tokenizer, trajectory):
    tokenizer = copy.deepcopy(base_tokenizer)
    tokenizer.chat_template = ZEPHYR_STYLE  # closes with </s>; the tokenizer's eos stays <|im_end|>
    with pytest.raises(ValueError, match="end-of-turn token"):
        trajectory.tokenize(tokenizer)


def test_training_messages_stop_at_the_last_reply(trajectory):
    messages = trajectory.training_messages()
    assert messages[-1]["role"] == "assistant" and len(messages) == len(trajectory.messages) - 1


def test_scores_last_and_per_turn(base_tokenizer, trajectory):
    tokenizer = _tokenizer(base_tokenizer, "chatml")
    last = trajectory.tokenize(tokenizer, score_placement="last")
    nonzero = [i for i, s in enumerate(last["scores"]) if s]
    assert nonzero == [max(i for i, m in enumerate(last["loss_mask"]) if m)]
    assert last["scores"][nonzero[0]] == pytest.approx(trajectory.total_reward)

    per_turn = trajectory.tokenize(tokenizer, score_placement="turn")
    mask = per_turn["loss_mask"]
    run_ends = [i for i, m in enumerate(mask) if m and (i + 1 == len(mask) or not mask[i + 1])]
    assert [per_turn["scores"][i] for i in run_ends] == pytest.approx([t.reward for t in trajectory.turns])
    assert sum(per_turn["scores"]) == pytest.approx(trajectory.total_reward)
    with pytest.raises(ValueError):
        trajectory.tokenize(tokenizer, score_placement="first")


def test_templates_that_rewrite_history_are_refused(base_tokenizer, trajectory):
    # Like some reasoning models' templates: earlier replies lose their think block
    # once a later turn exists, so prefixes are not stable.
    rewriting = (
        "{% for message in messages %}"
        "{% set content = message['content'] %}"
        "{% if message['role'] == 'assistant' and not loop.last %}{% set content = content.split('</think>')[-1] %}{% endif %}"
        "{{ '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )
    tokenizer = copy.deepcopy(base_tokenizer)
    tokenizer.chat_template = rewriting
    with pytest.raises(ValueError, match="prefix-stable"):
        trajectory.tokenize(tokenizer)
