"""``ragen-bench render RUN_DIR --episode K``: an eval run's episode replayed into a GIF or MP4.

Each test makes its run directory with a quick ``ragen-bench eval`` in a tmp folder and
reads the written file back: one frame per state (the reset and every step), the
pictures of grid envs, text frames for text envs, and one error line for a bad request.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from ragen_bench import render
from ragen_bench.cli import main

iio = pytest.importorskip("imageio.v3", reason="the render extra: pip install 'ragen-bench[render]'")


def quick_eval(tmp_path, env_id: str, agent: str = "optimal", limit: int = 2):
    out = tmp_path / env_id.split("/")[1]
    assert main(["eval", f"env={env_id}", f"agent={agent}", f"limit={limit}", f"out={out}", "progress=false"]) == 0
    return out


def records(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def sokoban_run(tmp_path_factory):
    return quick_eval(tmp_path_factory.mktemp("runs"), "RAGEN/Sokoban-6x6-v0", limit=3)


@pytest.mark.parametrize("episode", [0, 2])
def test_a_grid_episode_has_one_picture_per_state(sokoban_run, tmp_path, capsys, episode):
    out = tmp_path / "ep.gif"
    capsys.readouterr()
    assert main(["render", str(sokoban_run), "--episode", str(episode), "--out", str(out)]) == 0
    record = records(sokoban_run)[episode]
    frames = iio.imread(out, index=None)
    assert frames.shape[0] == record["num_actions"] + 1 == sum(len(t["action_ids"]) for t in record["turns"]) + 1
    assert frames.shape[1] % 16 == 0 and frames.shape[2] % 16 == 0 and frames.shape[3] == 3
    assert f"wrote {out}: episode {episode} of {sokoban_run}, {frames.shape[0]} frames" in capsys.readouterr().out
    # The env's own picture, enlarged by a whole factor, is the top of the first frame.
    import gymnasium

    env = gymnasium.make("RAGEN/Sokoban-6x6-v0", render_mode="rgb_array").unwrapped
    env.reset(seed=record["seed"])
    picture = env.render()
    scale = -(-render.MIN_SIDE // max(picture.shape[:2]))
    enlarged = np.repeat(np.repeat(picture, scale, axis=0), scale, axis=1)
    top = frames[0][: enlarged.shape[0], : enlarged.shape[1]]
    assert np.abs(top.astype(int) - enlarged).mean() < 8  # GIF palettes round colours a little
    assert len({frame.tobytes() for frame in frames}) == len(frames)


def test_mp4_has_the_same_frames_count(sokoban_run, tmp_path):
    out = tmp_path / "ep.mp4"
    assert main(["render", str(sokoban_run), "--episode", "1", "--out", str(out)]) == 0
    assert iio.imread(out, index=None).shape[0] == records(sokoban_run)[1]["num_actions"] + 1


@pytest.mark.parametrize("env_id", ["RAGEN/Bandit-v0", "RAGEN/Countdown-v0", "RAGEN/MathQA-v0"])
def test_text_envs_give_text_frames(tmp_path, env_id):
    run = quick_eval(tmp_path, env_id, limit=1)
    out = tmp_path / "text.gif"
    path, count = render.render_episode(run, 0, out)
    frames = iio.imread(path, index=None)
    assert count == frames.shape[0] == records(run)[0]["num_actions"] + 1
    ink = frames[0][:40] < 128  # the observation's text is drawn near the top of the first frame
    assert ink.any()


@pytest.mark.parametrize(("game", "moves_per_frame"), [("RAGEN/TicTacToe-v0", 1), ("RAGEN/PrisonersDilemma-v0", 2)])
def test_a_game_replays_both_seats_moves(tmp_path, game, moves_per_frame):
    """A turn-based game has a frame per move, a simultaneous one a frame per round."""
    pytest.importorskip("pettingzoo")
    run = quick_eval(tmp_path, game, agent="random", limit=1)
    record = records(run)[0]
    path, count = render.render_episode(run, 0, tmp_path / "game.gif")
    assert count == len(record["game"]["moves"]) // moves_per_frame + 1 == iio.imread(path, index=None).shape[0]


def test_bad_requests_are_one_error_line(sokoban_run, tmp_path, capsys):
    capsys.readouterr()
    for argv, message in [
        (["--episode", "3"], r"--episode 3: .*episodes.jsonl holds episodes 0..2"),
        (["--episode", "-1"], r"--episode -1: .*holds episodes 0..2"),
        (["--episode", "0", "--out", str(tmp_path / "x.png")], r"--out must end in .gif or .mp4"),
    ]:
        assert main(["render", str(sokoban_run), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("ragen-bench render: error: ")
        assert __import__("re").search(message, err), err
    assert main(["render", str(tmp_path), "--episode", "0"]) == 2
    assert "manifest.json: cannot read" in capsys.readouterr().err


def test_a_record_the_env_does_not_replay_is_refused(sokoban_run, tmp_path):
    record = records(sokoban_run)[0]
    record["turns"][0]["env_rewards"][0] = 5.0
    with pytest.raises(render.RenderError, match=r"step 1 replays with reward -0.1, the record says 5.0"):
        render.replay_frames(record, {})
    with pytest.raises(render.RenderError, match=r"'RAGEN/Sokoban-6x6-v9' is not registered here"):
        render.replay_frames({**record, "env_id": "RAGEN/Sokoban-6x6-v9"}, {})


def test_without_the_extra_the_command_says_how_to_install_it(sokoban_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert main(["render", str(sokoban_run), "--episode", "0", "--out", str(tmp_path / "x.gif")]) == 2
    assert "pip install 'ragen-bench[render]'" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)
    assert main(["render", str(sokoban_run), "--episode", "0", "--out", str(tmp_path / "x.mp4")]) == 2
    assert "MP4 needs imageio and imageio-ffmpeg" in capsys.readouterr().err
