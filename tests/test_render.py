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

from ragen_bench import render, render_writers
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
    frames = list(render._game_frames(record, {}))
    game = record["game"]
    ending = "draw" if game["winner"] is None else f"{game['winner']} wins"
    assert frames[-1].caption.endswith(f"  ·  {ending}; agent ({game['agent_seat']}): {game['outcome']}")
    assert not any("agent (" in frame.caption for frame in frames[:-1])


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


# -- a video shows only what the run played: the record is checked by replay first --------


def tampered_copy(run, tmp_path, edit=None, manifest=None, episode=0):
    """A copy of ``run`` whose ``episode``-th record (or manifest) ``edit``/``manifest`` changed."""
    import shutil

    copy = tmp_path / f"tampered-{run.name}"
    shutil.copytree(run, copy)
    if edit is not None:
        lines = (copy / "episodes.jsonl").read_text().splitlines()
        record = json.loads(lines[episode])
        edit(record)
        lines[episode] = json.dumps(record)
        (copy / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    if manifest is not None:
        (copy / "manifest.json").write_text(json.dumps(manifest(json.loads((copy / "manifest.json").read_text()))))
    return copy


def refused(run, tmp_path, capsys, episode=0) -> str:
    """Render ``run``'s episode through the CLI: it must fail with one error line and write nothing."""
    out = tmp_path / "refused.gif"
    capsys.readouterr()
    assert main(["render", str(run), "--episode", str(episode), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err.count("\n") == 1 and captured.err.startswith("ragen-bench render: error: "), captured.err
    assert "Traceback" not in captured.err and "Exception ignored" not in captured.err
    return captured.err


@pytest.fixture(scope="module")
def tictactoe_run(tmp_path_factory):
    pytest.importorskip("pettingzoo")
    return quick_eval(tmp_path_factory.mktemp("runs"), "RAGEN/TicTacToe-v0", agent="random", limit=1)


@pytest.fixture(scope="module")
def dilemma_run(tmp_path_factory):
    pytest.importorskip("pettingzoo")
    return quick_eval(tmp_path_factory.mktemp("runs"), "RAGEN/PrisonersDilemma-v0", agent="random", limit=1)


def other_move_same_reward(record):
    """Sokoban: the first action becomes another direction that also only walks (-0.1)."""
    turn = record["turns"][0]
    assert turn["env_rewards"][0] == -0.1
    turn["action_ids"][0] = {0: 1, 1: 0, 2: 3, 3: 2}[turn["action_ids"][0]]


def another_seed(record):
    record["seed"] += 1


def last_reward_deleted(record):
    record["turns"][-1]["env_rewards"].pop()


def moves_swapped(record):
    moves = record["game"]["moves"]
    moves[0], moves[2] = moves[2], moves[0]  # the first seat's first two moves: a board that can also arise


def last_move_cut(record):
    record["game"]["moves"].pop()


def opponent_move_flipped(record):
    moves = record["game"]["moves"]
    rival = next(i for i, (seat, _) in enumerate(moves) if seat != record["game"]["agent_seat"])
    moves[rival][1] = 1 - moves[rival][1]  # cooperate <-> defect


@pytest.mark.parametrize(("run_name", "edit", "field"), [
    ("sokoban_run", other_move_same_reward, "field action_ids[0]"),
    ("sokoban_run", another_seed, "field "),
    ("sokoban_run", last_reward_deleted, "field env_rewards (length)"),
    ("tictactoe_run", moves_swapped, "field game.moves[0][1]"),
    ("tictactoe_run", last_move_cut, "field game.moves (length)"),
    ("dilemma_run", opponent_move_flipped, "field game.moves["),
])
def test_a_tampered_record_is_refused_naming_file_episode_and_field(request, tmp_path, capsys, run_name, edit, field):
    run = request.getfixturevalue(run_name)
    record = records(run)[0]
    edit(record)
    err = refused(tampered_copy(run, tmp_path, edit), tmp_path, capsys)
    key = f"{record['env_id']}/{record['split']}/{record['seed']}/{record['sample']}"
    assert f"episodes.jsonl:1, episode {key}" in err and field in err and "differs from the replay" in err, err


def test_the_untampered_copy_renders(sokoban_run, tmp_path):
    """The tampering tests' refusals come from the edit, not from copying the run."""
    path, count = render.render_episode(tampered_copy(sokoban_run, tmp_path, edit=lambda record: None), 0,
                                        tmp_path / "ok.gif")
    assert count == records(sokoban_run)[0]["num_actions"] + 1 and path.is_file()


def test_the_drawing_replay_refuses_unpaired_actions_and_rewards(sokoban_run):
    """Drawing never drops a step silently (a zip would), even for a record that was not checked."""
    record = records(sokoban_run)[0]
    last_reward_deleted(record)
    with pytest.raises(render.RenderError, match=r"turn \d+ records \d+ actions but \d+ rewards"):
        render.replay_frames(record, {})


# -- malformed runs: one line naming the file, episode and field ---------------------------


def turn_after_the_end(record):
    record["turns"].append(dict(record["turns"][-1]))


@pytest.mark.parametrize(("edit", "manifest", "expected"), [
    (None, lambda m: [], r"manifest\.json: not a run manifest"),
    (None, lambda m: {**m, "config": "RAGEN/Sokoban-6x6-v0"}, r"manifest\.json, field config: missing or not an object"),
    (None, lambda m: {**m, "config": {**m["config"], "chat": "x"}}, r"manifest\.json, field config\.chat: not a valid"),
    (turn_after_the_end, None, r"episodes\.jsonl:1, episode \S+/0, turn 2, field num_turns: the episode had already ended"),
    (lambda r: r.pop("turns"), None, r"episodes\.jsonl:1, episode \S+/0, field turns: must be a list"),
    (lambda r: r.update(seed="123"), None, r"episodes\.jsonl:1, field seed: missing or not a int"),
    (lambda r: r["turns"][0].update(raw_response=5), None, r"episodes\.jsonl:1, episode \S+, turn 1, field raw_response"),
])
def test_a_malformed_run_is_one_error_line(sokoban_run, tmp_path, capsys, edit, manifest, expected):
    err = refused(tampered_copy(sokoban_run, tmp_path, edit, manifest), tmp_path, capsys)
    assert __import__("re").search(expected, err), err


def test_a_game_record_without_its_game_is_one_error_line(tictactoe_run, tmp_path, capsys):
    err = refused(tampered_copy(tictactoe_run, tmp_path, lambda r: r.pop("game")), tmp_path, capsys)
    assert "episode RAGEN/TicTacToe-v0/" in err and "field game: missing or not an object" in err


# -- --out: one line, no writer complaining at exit; written atomically ---------------------


def test_an_out_that_cannot_be_a_file_is_one_line_without_writer_noise(sokoban_run, tmp_path):
    """In a fresh interpreter: an unclosed writer would print "Exception ignored in ... __del__" at exit."""
    import subprocess

    (tmp_path / "folder.gif").mkdir()
    (tmp_path / "file").write_text("")
    for out, message in [(tmp_path / "folder.gif", "is a folder"), (tmp_path / "file" / "x.gif", "is not a folder"),
                         (tmp_path / "missing" / "x.gif", "does not exist")]:
        done = subprocess.run([sys.executable, "-m", "ragen_bench.cli", "render", str(sokoban_run), "--episode", "0",
                               "--out", str(out)], capture_output=True, text=True)
        assert done.returncode == 2
        assert done.stderr.startswith(f"ragen-bench render: error: --out {out}: ") and message in done.stderr
        assert done.stderr.count("\n") == 1 and "Exception ignored" not in done.stderr, done.stderr


def test_a_folder_it_may_not_write_in_is_one_line(sokoban_run, tmp_path, capsys, monkeypatch):
    def no_permission(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".x.part.gif"))

    monkeypatch.setattr(render_writers.tempfile, "mkstemp", no_permission)
    err = refused(sokoban_run, tmp_path, capsys)
    assert f"cannot write in {tmp_path} (Permission denied)" in err


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
                    reason="root writes in read-only folders")
def test_a_read_only_folder_is_one_line(sokoban_run, tmp_path, capsys):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        capsys.readouterr()
        assert main(["render", str(sokoban_run), "--episode", "0", "--out", str(folder / "x.gif")]) == 2
        assert "Permission denied" in capsys.readouterr().err
    finally:
        folder.chmod(0o755)


# imageio's ffmpeg writer reports a full disk as a broken pipe, with ffmpeg's command line after it.
FFMPEG_FAILURE = OSError("[Errno 32] Broken pipe\n\nFFMPEG COMMAND:\nffmpeg -y -f rawvideo .x.part.mp4\n\nFFMPEG STDERR OUTPUT:\n")


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), FFMPEG_FAILURE, KeyboardInterrupt()])
def test_a_failure_mid_write_leaves_the_earlier_file_and_no_temp_file(sokoban_run, tmp_path, capsys, monkeypatch,
                                                                      suffix, failure):
    out = tmp_path / f"earlier{suffix}"
    out.write_bytes(b"an earlier render")
    real = render.open_writer

    def failing_writer(path, canvas):
        writer = real(path, canvas)
        append, calls = writer.append, []

        def append_then_fail(picture):
            calls.append(1)
            if len(calls) == 3:  # after two frames are in the temp file
                raise failure
            append(picture)

        writer.append = append_then_fail
        return writer

    monkeypatch.setattr(render, "open_writer", failing_writer)
    capsys.readouterr()
    interrupted = isinstance(failure, KeyboardInterrupt)
    assert main(["render", str(sokoban_run), "--episode", "0", "--out", str(out)]) == (130 if interrupted else 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "resume" not in err and ("interrupted" in err) == interrupted, err
    assert "FFMPEG" not in err and ("not changed" in err) != interrupted, err
    assert out.read_bytes() == b"an earlier render"
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_a_render_replaces_an_earlier_file(sokoban_run, tmp_path):
    out = tmp_path / "ep.gif"
    out.write_bytes(b"old")
    render.render_episode(sokoban_run, 0, out)
    assert iio.imread(out, index=None).shape[0] == records(sokoban_run)[0]["num_actions"] + 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep.gif"]


# -- memory: frames are streamed ----------------------------------------------------------


def test_frames_are_drawn_one_at_a_time_and_written_before_the_next(tmp_path, monkeypatch):
    """At most one drawn frame is waiting for the writer at any time, whatever the episode length."""
    run = tmp_path / "2048"
    assert main(["eval", "env=RAGEN/2048-v0", "agent=optimal", "limit=1", "chat.max_turns=40",
                 "chat.max_actions_per_episode=40", "chat.max_actions_per_turn=1", f"out={run}",
                 "progress=false"]) == 0
    drawn, written, waiting = [], [], []
    real_picture, real_writer = render._picture, render.open_writer

    def counting_picture(frame):
        waiting.append(len(drawn) - len(written))  # frames drawn and not yet written, before this one
        drawn.append(1)
        return real_picture(frame)

    def counting_writer(path, canvas):
        writer = real_writer(path, canvas)
        append = writer.append

        def counted(picture):
            append(picture)
            written.append(1)

        writer.append = counted
        return writer

    monkeypatch.setattr(render, "_picture", counting_picture)
    monkeypatch.setattr(render, "open_writer", counting_writer)
    _, count = render.render_episode(run, 0, tmp_path / "long.gif")
    assert count == records(run)[0]["num_actions"] + 1 == 41
    # The measuring replay draws nothing; the drawing one hands each frame over before the next.
    assert len(drawn) == len(written) == count and max(waiting) == 0


def test_the_measured_size_is_the_drawn_size():
    """The canvas is computed without drawing: the measurement must agree with the picture."""
    picture = np.zeros((7, 5, 3), dtype=np.uint8)
    long_caption = "RAGEN/TicTacToe-v0  seed 123  start  (agent: player_1) " * 2
    for shown in [picture, "a line\n" + "a long line " * 20, ""]:
        for caption in ["step 1  turn 1  Up  reward -0.1  return -0.1", long_caption]:
            frame = render.Frame(shown, caption)
            assert render._picture_size(frame) == render._picture(frame).shape[:2]


def test_a_long_caption_wraps_within_the_picture_and_keeps_every_word():
    from PIL import ImageFont

    font = ImageFont.load_default(size=render._CAPTION_SIZE)
    caption = "RAGEN/TicTacToe-v0  seed 123  start  (agent: player_1)  ·  player_0 wins; agent (player_1): loss"
    lines = render._caption_lines(caption, render.MIN_SIDE)
    assert len(lines) > 1 and " ".join(lines) == caption
    assert all(font.getlength(line) + 2 * render._LINE_GAP <= render.MIN_SIDE for line in lines)
    assert render._caption_lines("move 3  player_0 plays B2", render.MIN_SIDE) == ["move 3  player_0 plays B2"]
    assert render.canvas_size([(300, 17), (20, 290)]) == (304, 304)


def test_ctrl_c_while_replaying_says_nothing_was_written(sokoban_run, tmp_path, capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "checked_record", interrupted)
    out = tmp_path / "ep.gif"
    capsys.readouterr()
    # 130: the status a shell gives a command that SIGINT ended.
    assert main(["render", str(sokoban_run), "--episode", "0", "--out", str(out)]) == 130
    err = capsys.readouterr().err
    assert err == f"ragen-bench render: interrupted; {out} was not written (a file already there is untouched)\n"
    assert not out.exists()
