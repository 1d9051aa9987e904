"""``ragen-bench render RUN_DIR --episode K``: one episode of an eval run as an animated GIF or MP4.

A video never shows an episode the run did not play.  Before anything is drawn, the
record is checked by the rule ``ragen-bench leaderboard verify`` applies
(:mod:`ragen_bench.eval.replay`): the env (``manifest.json``'s chat settings and
``env_kwargs``) replays every recorded reply, and the record it produces -- actions,
seed, rewards, observations, length, and for a game both seats' moves and the outcome --
must equal the recorded one, or the command names the file, episode and field that
differ.  Then the checked record is drawn: the env is reset with the recorded seed and
steps through the recorded actions (each turn's ``action_ids``, or the ``game.moves`` of
both seats).

One frame per state: the reset and each step after it (``steps + 1`` frames).  Grid
envs and board games show their ``render_mode="rgb_array"`` picture; text envs
(Bandit, Countdown, MathQA, the Prisoner's Dilemma) their text, drawn with Pillow's
built-in font.  Under every frame a caption names the step, the action and the reward.

Frames are streamed: a first replay only measures them (for the canvas every frame is
padded to), the second draws each frame and hands it to the writer before the next is
made, so memory does not grow with the episode.  The file is written to a temp file
beside ``--out`` and renamed over it once complete; an error or Ctrl-C leaves an
earlier file there untouched.

Writing needs the ``render`` extra (Pillow; imageio and imageio-ffmpeg for MP4); without
it the command says how to install it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.registration import load_env_creator

from ragen_bench.chat.config import ChatConfig
from ragen_bench.chat.trajectory import episode_key, unpack_text
from ragen_bench.eval import rundir
from ragen_bench.eval.replay import ReplayMismatch, describe, record_slot, replay_episode, replay_game
from ragen_bench.games.registry import GAME_IDS, game_entry, make_match_env, make_multiagent
from ragen_bench.registry import ENV_IDS
from ragen_bench.render_writers import BLOCK, RenderError, open_writer, write_atomically

INSTALL_HINT = "ragen-bench render needs Pillow: pip install 'ragen-bench[render]'"
FORMATS = (".gif", ".mp4")
# Small pictures are enlarged (by a whole factor, pixels stay sharp) to about this size.
MIN_SIDE = 288
_PAPER, _INK, _CAPTION, _CAPTION_INK = (255, 255, 255), (20, 20, 20), (34, 34, 40), (240, 240, 240)
_TEXT_SIZE, _CAPTION_SIZE, _TEXT_COLUMNS = 14, 13, 64
_LINE_GAP = 4
_CAPTION_LINE = _CAPTION_SIZE + 2 * _LINE_GAP + 2  # the height of one caption line


class RenderInterrupted(RenderError):
    """Ctrl-C while rendering: nothing was written (a render has nothing to resume)."""


@dataclass(frozen=True)
class Frame:
    """One state of the episode: what the env's ``render()`` showed (a picture or a text) and the caption."""

    shown: np.ndarray | str
    caption: str


@dataclass(frozen=True)
class RunSettings:
    """What replaying a run's episodes needs from its manifest."""

    chat_config: ChatConfig
    game_config: Any  # a GameChatConfig for a game run, else None
    env_kwargs: dict[str, Any]
    chats: Mapping[str, ChatConfig]  # the chat settings of each id its budget changes (chat_config for the others)

    def chat_for(self, env_id: str) -> ChatConfig:
        """The chat settings ``env_id``'s episodes were played with."""
        return self.chats.get(env_id, self.chat_config)


def render_episode(run_dir: str | Path, episode: int, out: str | Path | None = None) -> tuple[Path, int]:
    """Write episode ``episode`` (0-based, in ``episodes.jsonl`` order) of ``run_dir``; ``(path, frames)``."""
    run_dir = Path(run_dir)
    target = Path(out) if out is not None else Path(f"{run_dir.resolve().name}-episode-{episode}.gif")
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise RenderError(f"--out must end in {' or '.join(FORMATS)}, got {str(target)!r}")
    _require_packages(suffix)
    _check_target(target)
    try:
        return target, _render(run_dir, episode, target)
    except KeyboardInterrupt:
        # Not eval's "re-run to resume": a render keeps nothing, and the earlier file stays.
        raise RenderInterrupted(f"interrupted; {target} was not written (a file already there is untouched)") from None


def _render(run_dir: Path, episode: int, target: Path) -> int:
    settings = run_settings(run_dir)
    record = checked_record(run_dir, episode, settings)
    env = None if record["env_id"] in GAME_IDS else replay_env(record["env_id"], settings.env_kwargs)
    try:
        # Two replays: the first only measures, so no frame is held while the canvas is unknown.
        canvas = canvas_size(_picture_size(frame) for frame in iter_frames(record, settings.env_kwargs, env))
        return write_atomically(
            target, lambda path: write_frames(path, canvas, map(_picture, iter_frames(record, settings.env_kwargs, env)))
        )
    finally:
        if env is not None:
            env.close()


# -- the record and its check -------------------------------------------------------


def run_settings(run_dir: Path) -> RunSettings:
    """The chat settings, game settings and env kwargs of the run, or one error line naming the field."""
    from ragen_bench.eval.budget import budget_chats
    from ragen_bench.eval.config import chat_config, eval_targets, game_chat_config, game_config, resolve_budget

    path = run_dir / rundir.MANIFEST
    manifest = rundir.read_json(path)
    if type(manifest) is not dict:
        raise RenderError(describe("not a run manifest (a JSON object is expected)", file=str(path)))
    config = manifest.get("config")
    if type(config) is not dict:
        raise RenderError(describe("missing or not an object", file=str(path), field="config"))
    env_kwargs = config.get("env_kwargs") or {}
    if type(env_kwargs) is not dict:
        raise RenderError(describe("not an object", file=str(path), field="config.env_kwargs", found=env_kwargs))
    field = "config.chat"
    try:
        chat = chat_config(config["chat"])
        field = "config.budget"
        chats = budget_chats(chat, resolve_budget(config.get("budget"), eval_targets(config), config["chat"]))
        game = None
        full = game_config(config)
        if full is not None:
            field = "config.game"
            game = game_chat_config(chat, full["game"])
    # KeyError: a missing section; TypeError: a section of the wrong type or with unknown keys.
    except (KeyError, TypeError, ValueError) as error:
        raise RenderError(describe(f"not a valid eval config ({error})", file=str(path), field=field)) from None
    return RunSettings(chat, game, env_kwargs, chats)


def checked_record(run_dir: Path, episode: int, settings: RunSettings) -> dict[str, Any]:
    """The ``episode``-th record, once its replay has matched it field by field (see the module doc)."""
    line, record = episode_record(run_dir, episode)
    where: dict[str, Any] = {"file": str(run_dir / rundir.EPISODES), "line": line}
    try:
        env_id, split, seed, sample = record_slot(record, where)
        where["episode"] = episode_key(env_id, split, seed, sample)
        if env_id in GAME_IDS:
            if settings.game_config is None:
                raise ReplayMismatch("a game's record in a run of a single-agent env", field="env_id", **where)
            replay_game(record, settings.game_config, settings.env_kwargs, where=where)
        elif env_id in ENV_IDS:
            from ragen_bench.eval.run import EnvPool

            pool = EnvPool(settings.env_kwargs)
            try:
                replay_episode(record, pool.take([env_id])[0], settings.chat_for(env_id), where=where)
            finally:
                pool.close()
        else:
            raise ReplayMismatch("is not registered here (an id of another version?)", field="env_id",
                                 found=env_id, **where)
    except ReplayMismatch as error:
        raise RenderError(str(error)) from None
    except RecursionError:  # values nested just under the parser's limit
        raise RenderError(describe("a value is nested too deeply", **where)) from None
    return record


def episode_record(run_dir: Path, episode: int) -> tuple[int, dict[str, Any]]:
    """``(line, record)`` of the ``episode``-th record of the run's log, or one error line saying which exist."""
    path = run_dir / rundir.EPISODES
    if not path.is_file():
        raise RenderError(f"{path}: no episode log (is {run_dir} an eval run directory?)")
    count = 0
    for count, (line, record) in enumerate(rundir.iter_numbered(path), start=1):
        if count - 1 == episode:
            return line, record
    if count == 0:
        raise RenderError(f"{path} holds no episode yet")
    raise RenderError(f"--episode {episode}: {path} holds episodes 0..{count - 1}")


# -- frames --------------------------------------------------------------------------


def replay_frames(record: Mapping[str, Any], env_kwargs: Mapping[str, Any], env: Any = None) -> list[Frame]:
    """The frames of a recorded episode, replayed on a fresh env, as a list (see :func:`iter_frames`)."""
    return list(iter_frames(record, env_kwargs, env))


def iter_frames(record: Mapping[str, Any], env_kwargs: Mapping[str, Any], env: Any = None) -> Iterator[Frame]:
    """The frames of a recorded episode, one at a time, drawn from its recorded actions.

    The actions are the record's; only a record that passed :func:`checked_record`
    (or ``leaderboard verify``) is known to be what the run played.  Every step's
    reward is still compared, and a turn's actions and rewards must pair up.
    ``env``: for a single-agent record, a :func:`replay_env` of its id to replay on
    instead (reset here, left open), so a caller replaying many episodes starts each env
    once (a TextWorld-Express env starts a JVM).
    """
    if record["env_id"] in GAME_IDS:
        yield from _game_frames(record, env_kwargs)
        return
    if record["env_id"] not in ENV_IDS:
        raise RenderError(f"the episode's env {record['env_id']!r} is not registered here (an id of another version?)")
    if env is not None:
        yield from _env_frames(record, env)
        return
    env = replay_env(record["env_id"], env_kwargs)
    try:
        yield from _env_frames(record, env)
    finally:
        env.close()


def replay_env(env_id: str, env_kwargs: Mapping[str, Any]) -> gymnasium.Env:
    """The (unwrapped) env a single-agent episode of ``env_id`` replays on: its pictures, or its text."""
    modes = load_env_creator(gymnasium.spec(env_id).entry_point).metadata["render_modes"]
    mode = "rgb_array" if "rgb_array" in modes else "ansi"
    return gymnasium.make(env_id, **{**env_kwargs, "render_mode": mode}).unwrapped


def _env_frames(record: Mapping[str, Any], env: Any) -> Iterator[Frame]:
    env_id, seed = record["env_id"], record["seed"]
    env.reset(seed=seed)
    names = env.action_names
    total, step = 0.0, 0
    yield Frame(env.render(), f"{env_id}  seed {seed}  start")
    for turn_number, turn in enumerate(record["turns"], start=1):
        if len(turn["action_ids"]) != len(turn["env_rewards"]):
            # zip() would drop the unpaired step from the video without a word.
            raise RenderError(f"{env_id} seed {seed}: turn {turn_number} records {len(turn['action_ids'])} actions "
                              f"but {len(turn['env_rewards'])} rewards")
        for action, recorded in zip(turn["action_ids"], turn["env_rewards"]):
            action = unpack_text(action)
            _, reward, *_ = env.step(action)
            step += 1
            if float(reward) != recorded:
                raise RenderError(f"{env_id} seed {seed}: step {step} replays with reward {reward}, "
                                  f"the record says {recorded} (was the run made by another version?)")
            total += reward
            shown = names[action] if names is not None else _short(str(action))
            yield Frame(env.render(), f"step {step}  turn {turn_number}  {shown}  reward {reward:+g}  return {total:+g}")


def _game_frames(record: Mapping[str, Any], env_kwargs: Mapping[str, Any]) -> Iterator[Frame]:
    env_id, seed = record["env_id"], record["seed"]
    moves = record["game"]["moves"]
    parallel = game_entry(env_id).parallel
    probe = make_multiagent(env_id, parallel=parallel, **env_kwargs)
    modes = probe.unwrapped.metadata["render_modes"]
    probe.close()
    mode = "rgb_array" if "rgb_array" in modes else "ansi"
    env = make_match_env(env_id, seed=seed, **{**env_kwargs, "render_mode": mode})
    try:
        last = None
        for frame in _match_frames(record, env, moves, parallel):
            if last is not None:
                yield last
            last = frame
        if last is not None:  # the end says how the game ended, for whom
            yield Frame(last.shown, f"{last.caption}  ·  {_game_result(record['game'])}")
    finally:
        env.close()


def _game_result(game: Mapping[str, Any]) -> str:
    """``"player_0 wins; agent (player_1): loss"``, ``"draw; ..."`` or ``"player_1 forfeits; ..."``."""
    if game.get("forfeit"):
        ending = f"{game['forfeit']} forfeits"
    else:
        # Without one winner every seat drew, or several share the top (a team's win: chat.game.seat_outcome).
        totals = game.get("totals") or {}
        ending = f"{game['winner']} wins" if game.get("winner") is not None else \
            ("draw" if len(set(totals.values())) <= 1 else "no single winner")
    return f"{ending}; agent ({game['agent_seat']}): {game['outcome']}"


def _match_frames(record: Mapping[str, Any], env: Any, moves: list[Any], parallel: bool) -> Iterator[Frame]:
    env_id, seed, game = record["env_id"], record["seed"], env.unwrapped
    yield Frame(env.render(), f"{env_id}  seed {seed}  start  (agent: {record['game']['agent_seat']})")
    if parallel:  # a round is both seats' moves, recorded one after the other
        rounds = [dict(moves[i : i + 2]) for i in range(0, len(moves), 2)]
        for number, actions in enumerate(rounds, start=1):
            env.step(actions)
            shown = " / ".join(game.action_names[actions[seat]] for seat in sorted(actions))
            yield Frame(env.render(), f"round {number}  {shown}")
        return
    for number, (seat, move) in enumerate(moves, start=1):
        if env.agent_selection != seat:
            raise RenderError(f"{env_id} seed {seed}: move {number} is {seat}'s in the record, "
                              f"but {env.agent_selection} is on move in the replay")
        env.step(move)
        # A free-text game's move is its text (TextArena's); a board game's is an index into its move names.
        yield Frame(env.render(), f"move {number}  {seat} plays {move if isinstance(move, str) else game.action_names[move]}")


def _short(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# -- pictures ------------------------------------------------------------------------


def _picture(frame: Frame) -> np.ndarray:
    """The frame as one picture: its image enlarged (or its text drawn) above the caption."""
    from PIL import Image, ImageDraw, ImageFont

    if isinstance(frame.shown, np.ndarray):
        scale = _scale(frame.shown)
        body = np.repeat(np.repeat(frame.shown, scale, axis=0), scale, axis=1)
    else:
        body = _text_picture(frame.shown)
    lines = _caption_lines(frame.caption, body.shape[1])
    caption = Image.new("RGB", (body.shape[1], len(lines) * _CAPTION_LINE), _CAPTION)
    pen, font = ImageDraw.Draw(caption), ImageFont.load_default(size=_CAPTION_SIZE)
    for row, line in enumerate(lines):
        pen.text((_LINE_GAP, _LINE_GAP + row * _CAPTION_LINE), line, font=font, fill=_CAPTION_INK)
    return np.vstack([body, np.asarray(caption)])


def _caption_lines(caption: str, width: int) -> list[str]:
    """``caption`` broken at spaces into lines that fit ``width`` pixels (a long game caption
    would otherwise be cut at the picture's edge)."""
    from PIL import ImageFont

    font = ImageFont.load_default(size=_CAPTION_SIZE)
    lines: list[str] = []
    for word in caption.split(" "):
        joined = f"{lines[-1]} {word}" if lines else word
        if lines and font.getlength(joined) + 2 * _LINE_GAP > width:
            lines.append(word)
        elif lines:
            lines[-1] = joined
        else:
            lines.append(word)
    return lines


def _picture_size(frame: Frame) -> tuple[int, int]:
    """``(height, width)`` :func:`_picture` gives ``frame``, computed without drawing it."""
    if isinstance(frame.shown, np.ndarray):
        scale = _scale(frame.shown)
        height, width = frame.shown.shape[0] * scale, frame.shown.shape[1] * scale
    else:
        _, height, width = _text_layout(frame.shown)
    return height + len(_caption_lines(frame.caption, width)) * _CAPTION_LINE, width


def _scale(image: np.ndarray) -> int:
    return max(1, math.ceil(MIN_SIDE / max(image.shape[:2])))


def _text_layout(text: str) -> tuple[list[str], int, int]:
    """``(lines, height, width)`` of ``text`` drawn by :func:`_text_picture`."""
    from PIL import ImageFont

    font = ImageFont.load_default(size=_TEXT_SIZE)
    lines = [wrapped for line in text.splitlines() or [""] for wrapped in (textwrap.wrap(line, _TEXT_COLUMNS) or [""])]
    height = max(len(lines) * (_TEXT_SIZE + _LINE_GAP) + 2 * _LINE_GAP, MIN_SIDE // 2)
    width = max(MIN_SIDE, max(int(font.getlength(line)) for line in lines) + 2 * _LINE_GAP)
    return lines, height, width


def _text_picture(text: str) -> np.ndarray:
    """``text`` in Pillow's built-in font, lines wrapped at :data:`_TEXT_COLUMNS` characters."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=_TEXT_SIZE)
    lines, height, width = _text_layout(text)
    picture = Image.new("RGB", (width, height), _PAPER)
    pen = ImageDraw.Draw(picture)
    for row, line in enumerate(lines):
        pen.text((_LINE_GAP, _LINE_GAP + row * (_TEXT_SIZE + _LINE_GAP)), line, font=font, fill=_INK)
    return np.asarray(picture)


def canvas_size(sizes: Iterable[tuple[int, int]]) -> tuple[int, int]:
    """``(height, width)`` holding every picture of ``sizes``, sides rounded up to :data:`BLOCK`."""
    height = width = 0
    for picture_height, picture_width in sizes:
        height, width = max(height, picture_height), max(width, picture_width)
    return -(-height // BLOCK) * BLOCK, -(-width // BLOCK) * BLOCK


def _on_canvas(picture: np.ndarray, canvas: tuple[int, int]) -> np.ndarray:
    """``picture`` at the top left of a paper-white canvas of size ``canvas``."""
    if picture.shape[0] > canvas[0] or picture.shape[1] > canvas[1]:
        # The measuring replay and the drawing one must agree; a bigger frame would be cut.
        raise RuntimeError(f"a frame of {picture.shape[:2]} does not fit the measured canvas {canvas}")
    framed = np.empty((*canvas, 3), dtype=np.uint8)
    framed[...] = np.array(_PAPER, dtype=np.uint8)  # one broadcast row, not a tuple per pixel
    framed[: picture.shape[0], : picture.shape[1]] = picture
    return framed


# -- writing -------------------------------------------------------------------------


def write_frames(path: Path, canvas: tuple[int, int], pictures: Iterable[np.ndarray]) -> int:
    """Write ``pictures`` to ``path`` (GIF or MP4 by its suffix) one by one; the number written.

    Each picture is padded, handed to the writer and dropped before the next is made.
    """
    writer = open_writer(path, canvas)
    try:
        count = 0
        for picture in pictures:
            writer.append(_on_canvas(picture, canvas))
            count += 1
        writer.finish()
    finally:
        writer.close()  # explicitly: a writer left to __del__ reports its errors as "Exception ignored"
    return count


def _check_target(target: Path) -> None:
    """Refuse an ``--out`` that cannot be a file before anything is replayed."""
    folder = target.parent
    if target.is_dir():
        raise RenderError(f"--out {target}: is a folder; name a file in it")
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise RenderError(f"--out {target}: {folder} {what}")


def _require_packages(suffix: str) -> None:
    """Pillow (GIF, text frames), and imageio with imageio-ffmpeg for MP4, or the install hint."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        raise RenderError(INSTALL_HINT) from None
    if suffix == ".mp4":
        try:
            import imageio.v2  # noqa: F401
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise RenderError(f"{INSTALL_HINT} (MP4 needs imageio and imageio-ffmpeg, which the extra installs)") from None
