"""The reply parser: RAGEN's matching rule, never raising, bounded time on any input."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_bench.chat import parser
from ragen_bench.chat.parser import parse_response

# RAGEN's own patterns (ctx_manager._parse_response): the reference our scanner must agree with.
RAGEN_THINK = re.compile(r"<think>(.*?)</think>\s*<answer>(.*?)</answer>", re.DOTALL)
RAGEN_NO_THINK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
TAGS = ("<think>", "</think>", "<answer>", "</answer>")

# Text built mostly from tag fragments and separators, so matches, near misses, nesting
# and unclosed tags are all common; plus arbitrary unicode.
fragments = st.sampled_from([*TAGS, " ", "\n", "\t", "\u3000", "Up", "left", "||", "|", "<", ">", "x", "</", "<think", "answer>"])
tag_soup = st.lists(fragments | st.text(max_size=5), max_size=40).map("".join)


def _strip_like_ragen(block: str) -> str:
    for tag in TAGS:
        block = block.replace(tag, "")
    return block.strip()


def test_well_formed_reply_gives_actions_and_canonical_text():
    parsed = parse_response("<think> go left </think>\n<answer> Left ||up|| </answer> trailing")
    assert parsed.well_formed
    assert parsed.think == "go left"
    assert parsed.actions == ("Left", "up")
    assert parsed.normalized == "<think>go left</think><answer>Left || up</answer>"


def test_first_match_wins():
    parsed = parse_response("<think>a</think><answer>Up</answer><think>b</think><answer>Down</answer>")
    assert parsed.actions == ("Up",)


def test_think_close_not_followed_by_answer_is_skipped_like_ragen():
    text = "<think>a</think> oops </think> <answer>Down</answer>"
    parsed = parse_response(text)
    assert parsed.think == "a oops"  # the stray tag inside the think block is removed
    assert parsed.actions == ("Down",)


def test_actions_beyond_the_per_turn_limit_are_dropped():
    parsed = parse_response("<answer>" + " || ".join(["Up"] * 9) + "</answer>", think=False, max_actions=5)
    assert parsed.actions == ("Up",) * 5
    assert parsed.normalized == "<answer>" + " || ".join(["Up"] * 5) + "</answer>"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Up",
        "<answer>Up</answer>",  # think variant needs the think block
        "<think>x</think> words <answer>Up</answer>",  # only whitespace may separate the blocks
        "<think>x</think><answer>Up",  # unclosed answer
        "<think><answer>Up</answer>",  # unclosed think
    ],
)
def test_malformed_replies_name_no_action_and_keep_the_raw_text(text):
    parsed = parse_response(text)
    assert not parsed.well_formed
    assert parsed.actions == ()
    assert parsed.normalized == text


def test_no_think_variant_needs_only_the_answer_block():
    parsed = parse_response("blah <answer>Right</answer>", think=False)
    assert parsed.well_formed and parsed.actions == ("Right",)
    assert parsed.normalized == "<answer>Right</answer>"


def test_free_text_answer_is_one_action_even_with_separators():
    parsed = parse_response("<answer> 3 + 4 || 5 </answer>", think=False, split_actions=False)
    assert parsed.actions == ("3 + 4 || 5",)


def test_text_is_bounded_before_parsing():
    text = "<answer>Up</answer>"
    assert not parse_response(text, think=False, max_chars=len(text) - 1).well_formed
    assert parse_response(text, think=False, max_chars=len(text)).well_formed


@settings(max_examples=400, deadline=None)
@given(tag_soup)
def test_think_scanner_agrees_with_ragens_regex(text):
    parsed = parse_response(text, max_actions=10**6)
    match = RAGEN_THINK.search(text)
    assert parsed.well_formed == (match is not None)
    if match:
        assert parsed.think == _strip_like_ragen(match.group(1))
        expected = [a.strip() for a in _strip_like_ragen(match.group(2)).split("||") if a.strip()]
        assert list(parsed.actions) == expected


@settings(max_examples=300, deadline=None)
@given(tag_soup)
def test_no_think_scanner_agrees_with_ragens_regex(text):
    parsed = parse_response(text, think=False, max_actions=10**6)
    match = RAGEN_NO_THINK.search(text)
    assert parsed.well_formed == (match is not None)
    if match:
        assert "||".join(parsed.actions) == "||".join(
            a.strip() for a in _strip_like_ragen(match.group(1)).split("||") if a.strip()
        )


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans(), st.integers(1, 8), st.integers(1, 64))
def test_arbitrary_unicode_never_raises_and_respects_limits(text, think, max_actions, max_chars):
    parsed = parse_response(text, think=think, max_actions=max_actions, max_chars=max_chars)
    assert len(parsed.actions) <= max_actions
    assert all(action and action == action.strip() and "||" not in action for action in parsed.actions)
    if not parsed.well_formed:
        assert parsed.normalized == text[:max_chars]


PATHOLOGICAL = [
    "<think>" * 300_000,
    "<think>x" + "</think> " * 200_000,
    "<think>" + " " * 1_000_000 + "</think>" + "\n" * 1_000_000,
    "<think>a</think><answer>" + "|" * 2_000_000,
    "<answer>" + "Up || " * 300_000 + "</answer>",
]


@pytest.mark.parametrize("pathological", PATHOLOGICAL, ids=range(len(PATHOLOGICAL)))
def test_huge_pathological_inputs_are_scanned_once(pathological, monkeypatch):
    # Linear time, shown by counting rather than timing: the only loop the parser runs in
    # Python (skipping whitespace after each "</think>") never revisits a character, and
    # the answer block is searched for at most once per parse.  (str.find is linear.)
    skips: list[tuple[int, int]] = []
    answer_searches = []
    skip, find_answer = parser._skip_whitespace, parser._find_answer

    def counting_skip(text, index):
        end = skip(text, index)
        skips.append((index, end))
        return end

    def counting_find_answer(text, start=0):
        answer_searches.append(start)
        return find_answer(text, start)

    monkeypatch.setattr(parser, "_skip_whitespace", counting_skip)
    monkeypatch.setattr(parser, "_find_answer", counting_find_answer)
    for think in (True, False):
        skips.clear()
        answer_searches.clear()
        parse_response(pathological, think=think, max_chars=len(pathological))
        starts = [start for start, _ in skips]
        assert starts == sorted(set(starts)), "each scan starts past the previous one"
        assert all(end <= next_start for (_, end), next_start in zip(skips, starts[1:])), "scans never overlap"
        assert len(answer_searches) <= 1


@settings(max_examples=200, deadline=None)
@given(tag_soup, tag_soup, st.booleans(), st.integers(1, 64))
def test_nothing_past_max_chars_is_read(prefix, suffix, think, max_chars):
    # Why no input can make parsing slow under the default bound: the result depends only on
    # the first max_chars characters.
    text = prefix + suffix
    assert parse_response(text, think=think, max_chars=max_chars) == parse_response(
        text[:max_chars], think=think, max_chars=max_chars
    )
