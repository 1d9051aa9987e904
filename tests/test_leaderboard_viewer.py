"""The page's episode viewer (:mod:`ragen_bench.leaderboard.viewer`): the frames of each turn
come from the replay, pictures are deduplicated PNG files, and in a real headless Chromium
an episode steps through its frames and two entries compare on the same seed.
"""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragen_bench.leaderboard.build import build
from ragen_bench.leaderboard.viewer import (
    FRAMES, VIEWER_PANEL_CHARS, VIEWER_PICTURE_BYTES, VIEWER_SEEDS, _FrameBook, _shown, kept_frames, png_bytes,
)

# The fixtures are shared with the page's other tests (one build of the two-entry slice).
from .conftest import REPO_ROOT
from .test_leaderboard import records
from .test_leaderboard_build import browser, built, open_page, submissions  # noqa: F401

PIL = pytest.importorskip("PIL.Image", reason="decoding the PNGs needs Pillow (the render extra)")


def viewer_data(board: Path) -> dict[str, Any]:
    page = (board / "index.html").read_text()
    block = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)
    return json.loads(block.group(1))


def decode(path: Path) -> np.ndarray:
    return np.asarray(PIL.open(io.BytesIO(path.read_bytes())).convert("RGB"))


def first_episode(board: Path, entry: str, env_id: str) -> tuple[str, dict[str, Any]]:
    episodes = viewer_data(board)["entries"][entry]
    return next((label, e) for label, e in episodes.items() if label.startswith(env_id + " "))


def record_of(submissions: Path, entry: str, label: str) -> dict[str, Any]:
    return next(r for r in records(submissions / entry)
                if r["sample"] == 0 and label == f"{r['env_id']} {r['split']} seed {r['seed']}")


# -- the data ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12), st.just(3))))
def test_png_decodes_to_the_same_pixels(image: np.ndarray) -> None:
    data = png_bytes(image)
    assert np.array_equal(np.asarray(PIL.open(io.BytesIO(data)).convert("RGB")), image)
    assert data == png_bytes(image.copy())  # deterministic: same pixels, same bytes


def test_png_refuses_other_shapes() -> None:
    with pytest.raises(ValueError, match=r"needs a \(height, width, 3\) uint8 picture"):
        png_bytes(np.zeros((4, 4), dtype=np.uint8))


def test_a_turn_shows_the_state_before_and_after_each_action(built: Path, submissions: Path) -> None:
    label, episode = first_episode(built, "random", "RAGEN/Sokoban-6x6-v0")
    record = record_of(submissions, "random", label)
    assert len(episode["frames"]) == record["num_actions"] + 1 == len(episode["captions"])
    for turn, recorded in zip(episode["turns"], record["turns"]):
        assert len(turn["frames"]) == len(recorded["action_ids"]) + 1
    # Consecutive turns share a state: the one after a turn is the one before the next.
    for before, after in zip(episode["turns"], episode["turns"][1:]):
        assert before["frames"][-1] == after["frames"][0]
    # The first frame is the env's own picture of the reset state, as a file of the folder.
    env = gymnasium.make("RAGEN/Sokoban-6x6-v0", render_mode="rgb_array").unwrapped
    env.reset(seed=record["seed"])
    assert np.array_equal(decode(built / episode["frames"][0]), env.render())
    assert episode["captions"][0].endswith("start")


def test_a_text_env_shows_its_text(built: Path, submissions: Path) -> None:
    data = viewer_data(built)
    label, episode = first_episode(built, "optimal", "RAGEN/Bandit-v0")
    env = gymnasium.make("RAGEN/Bandit-v0", render_mode="ansi").unwrapped
    env.reset(seed=record_of(submissions, "optimal", label)["seed"])
    assert all(isinstance(ref, int) for ref in episode["frames"])
    assert data["texts"][episode["frames"][0]] == env.render()
    assert len(set(data["texts"])) == len(data["texts"])  # each text held once


def frame_names(data: dict[str, Any]) -> set[str]:
    return {ref for episodes in data["entries"].values() for e in episodes.values()
            for ref in e["frames"] if isinstance(ref, str)}


def test_equal_states_are_one_file(built: Path) -> None:
    files = {f"{FRAMES}/{path.name}" for path in (built / FRAMES).iterdir()}
    assert frame_names(viewer_data(built)) == files
    pictures = [decode(built / name).tobytes() for name in sorted(files)]
    assert len(set(pictures)) == len(pictures)


def test_committed_page_names_exactly_the_committed_frames() -> None:
    """leaderboard/frames/ holds each picture leaderboard/index.html shows, and nothing else."""
    board = REPO_ROOT / "leaderboard"
    assert frame_names(viewer_data(board)) == {f"{FRAMES}/{path.name}" for path in (board / FRAMES).iterdir()}


def test_rebuild_is_the_same_folder_and_drops_stale_frames(submissions: Path, built: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(built, again)
    (again / FRAMES / "0000stale.png").write_bytes(b"old")
    build(submissions, again)

    def tree(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    assert tree(again) == tree(built)


# -- the page in a real browser ---------------------------------------------------------------


def shown_images(page: Any, pane: str) -> list[dict[str, Any]]:
    return page.eval_on_selector_all(
        f"#{pane}-frames img", "images => images.map(i => ({src: i.getAttribute('src'), width: i.naturalWidth}))")


def wait_for_images(page: Any, pane: str) -> None:
    # Frames load lazily, as a reader scrolls to them: the viewer sits below the tables and plots.
    page.locator(f"#{pane}-frames").scroll_into_view_if_needed()
    page.wait_for_function(
        f"Array.from(document.querySelectorAll('#{pane}-frames img')).every(i => i.complete)")


def test_page_steps_through_frames_and_compares_two_entries(browser: Any, built: Path, submissions: Path,
                                                          tmp_path: Path) -> None:
    label, episode = first_episode(built, "random", "RAGEN/Sokoban-6x6-v0")
    random_record = record_of(submissions, "random", label)
    optimal_record = record_of(submissions, "optimal", label)
    page, errors = open_page(browser, built / "index.html")
    page.select_option("#v-entry", "random")
    page.select_option("#v-episode", label)
    assert page.is_hidden("#w-pane")
    for k, turn in enumerate(episode["turns"]):
        wait_for_images(page, "v")
        images = shown_images(page, "v")
        assert [image["src"] for image in images] == [episode["frames"][i] for i in turn["frames"]]
        assert all(image["width"] > 0 for image in images)  # every frame file loaded
        assert page.text_content("#v-turn") == f"Turn {k + 1} of {len(episode['turns'])}"
        assert page.text_content("#v-board") == random_record["messages"][2 * k + 1]["content"]
        assert page.text_content("#v-raw") == random_record["turns"][k]["raw_response"]
        page.click("#v-next")
    assert page.text_content("#v-turn").startswith(f"Final state (after {len(episode['turns'])} turns)")
    assert [image["src"] for image in shown_images(page, "v")] == [episode["frames"][-1]]

    # The slider goes straight to a turn.
    page.fill("#v-step", "1")
    assert page.text_content("#v-turn") == f"Turn 2 of {len(episode['turns'])}"

    # Compare: the second entry's pane on the same seed, turns aligned by number.
    page.select_option("#w-entry", "optimal")
    assert page.is_visible("#w-pane") and page.input_value("#v-episode") == label
    assert page.text_content("#v-turn") == f"Turn 1 of {len(episode['turns'])}"
    assert page.text_content("#w-title") == "optimal"
    assert page.text_content("#w-board") == optimal_record["messages"][1]["content"]
    assert page.text_content("#w-answer") in optimal_record["turns"][0]["raw_response"]
    wait_for_images(page, "w")
    assert all(image["width"] > 0 for image in shown_images(page, "w"))
    both = len(optimal_record["turns"]), len(random_record["turns"])
    for _ in range(max(both)):
        page.click("#v-next")
    assert page.is_disabled("#v-next")
    assert page.text_content("#w-turn").startswith(f"Final state (after {both[0]} turns): solved")
    page.fill("#v-step", "0")
    wait_for_images(page, "v")
    wait_for_images(page, "w")
    page.locator("#viewer").screenshot(path=str(tmp_path / "viewer.png"))
    assert (tmp_path / "viewer.png").stat().st_size > 10_000
    assert errors == []


def test_compare_lists_only_the_episodes_both_entries_hold(browser: Any, built: Path) -> None:
    page, errors = open_page(browser, built / "index.html")
    data = viewer_data(built)
    page.select_option("#v-entry", "random")
    page.select_option("#w-entry", "optimal")
    shown = page.eval_on_selector_all("#v-episode option", "options => options.map(o => o.textContent)")
    assert shown == [label for label in data["entries"]["random"] if label in data["entries"]["optimal"]]
    assert shown  # the two entries ran the same slice
    page.select_option("#w-entry", "(none)")
    assert page.is_hidden("#w-pane")
    assert errors == []


def test_a_text_state_is_shown_as_text(browser: Any, built: Path) -> None:
    label, episode = first_episode(built, "optimal", "RAGEN/Bandit-v0")
    page, errors = open_page(browser, built / "index.html")
    page.select_option("#v-entry", "optimal")
    page.select_option("#v-episode", label)
    texts = viewer_data(built)["texts"]
    states = page.eval_on_selector_all("#v-frames pre.state", "nodes => nodes.map(n => n.textContent)")
    assert states == [texts[episode["frames"][i]] for i in episode["turns"][0]["frames"]]
    assert errors == []


def test_compare_with_an_entry_sharing_no_episode_says_so(browser: Any) -> None:
    """Issue 34's case on the committed page: a Sokoban entry compared with a Bandit entry (no seed in common)."""
    data = viewer_data(REPO_ROOT / "leaderboard")
    episodes = [set(data["entries"][name]) for name in ("cpu-sokoban-grpo-rl", "cpu-bandit-smollm2")]
    assert not episodes[0] & episodes[1]
    page, errors = open_page(browser, REPO_ROOT / "leaderboard" / "index.html")
    page.select_option("#v-entry", "cpu-sokoban-grpo-rl")
    page.select_option("#v-episode", "RAGEN/Sokoban-6x6-AltVocab-v0 test seed 124")
    page.select_option("#w-entry", "cpu-bandit-smollm2")
    assert page.eval_on_selector_all("#v-episode option", "options => options.length") == 0
    assert page.text_content("#v-nothing").startswith("cpu-sokoban-grpo-rl and cpu-bandit-smollm2 share no episode")
    assert page.is_visible("#v-nothing") and page.is_hidden("#v-panes")  # no stale pane left showing
    assert all(page.is_disabled(control) for control in ("#v-episode", "#v-next", "#v-step"))
    # Back to one entry: its episodes return and the pane shows the first turn.
    page.select_option("#w-entry", "(none)")
    assert page.is_hidden("#v-nothing") and page.is_visible("#v-pane")
    assert page.text_content("#v-turn").startswith("Turn 1 of ")
    assert errors == []


def test_an_episode_keeps_pictures_up_to_its_budget_and_its_last() -> None:
    # Noise does not compress: each 128x128 picture is ~49 kB of PNG, so three fit in 160 kB and a fourth does not.
    rng = np.random.default_rng(0)
    pictures = [rng.integers(0, 256, (128, 128, 3), dtype=np.uint8) for _ in range(8)]
    book = _FrameBook()
    refs = kept_frames([*pictures[:4], "a text state", *pictures[4:]], book)
    kept = [ref for ref in refs if isinstance(ref, str)]
    assert refs[4] == 0 and book.texts == ["a text state"]  # texts are always kept
    assert refs[:3] == kept[:3] and refs[3] is None and refs[5:8] == [None] * 3 and refs[-1] == kept[-1]
    assert sum(len(book.pictures[name]) for name in kept[:3]) <= VIEWER_PICTURE_BYTES
    assert sorted(book.pictures) == sorted(kept)  # a picture not kept is not written either
    # Small pictures (a Sokoban board) all fit.
    small = [np.full((16, 16, 3), value, dtype=np.uint8) for value in range(40)]
    assert None not in kept_frames(small, _FrameBook())


def test_a_panel_shows_its_first_seeds_within_its_transcript_budget() -> None:
    def record(seed: int, chars: int, sample: int = 0, env: str = "E") -> dict[str, Any]:
        return {"env_id": env, "split": "test", "seed": seed, "sample": sample,
                "messages": [{"role": "user", "content": "x" * chars}]}

    def shown_seeds(records: list[dict[str, Any]]) -> list[tuple[str, int]]:
        panels: dict[tuple[str, str], list[int]] = {("E", "test"): [], ("F", "test"): []}
        return [(r["env_id"], r["seed"]) for r in records if _shown(r, panels)]

    short = [record(seed, 100) for seed in range(20)]
    assert shown_seeds(short) == [("E", seed) for seed in range(VIEWER_SEEDS)]  # short episodes: the first 8
    long = VIEWER_PANEL_CHARS // 3
    # The first episode always, however long; then while the panel stays within its budget; samples > 0 never.
    assert shown_seeds([record(0, 2 * VIEWER_PANEL_CHARS), record(1, 10), record(2, 10, env="F")]) == [("E", 0), ("F", 2)]
    assert shown_seeds([record(0, long), record(1, long, sample=1), record(2, long), record(3, long),
                        record(4, 5)]) == [("E", 0), ("E", 2), ("E", 3)]
