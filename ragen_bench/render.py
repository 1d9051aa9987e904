"""``ragen-bench render RUN_DIR --episode K``: one episode of an eval run as an animated GIF or MP4.

The episode is replayed from its record in ``episodes.jsonl``: the env of the run
(``manifest.json``'s ``env_kwargs`` included) is reset with the recorded seed and steps
through the recorded actions -- each turn's ``action_ids`` for a single-agent env, the
``game.moves`` of both seats for a game.  Every replayed step's reward must equal the
recorded one, so a video never shows an episode the run did not play.

One frame per state: the reset and each step after it (``steps + 1`` frames).  Grid
envs and board games show their ``render_mode="rgb_array"`` picture; text envs
(Bandit, Countdown, MathQA, the Prisoner's Dilemma) their text, drawn with Pillow's
built-in font.  Under every frame a caption names the step, the action and the reward.

Writing needs the ``render`` extra (imageio, and imageio-ffmpeg for MP4); without it the
command says how to install it.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
from gymnasium.envs.registration import load_env_creator

from ragen_bench.chat.trajectory import unpack_text
from ragen_bench.eval import rundir
from ragen_bench.games.registry import GAME_IDS, game_entry, make_match_env, make_multiagent
from ragen_bench.registry import ENV_IDS

INSTALL_HINT = "ragen-bench render needs imageio: pip install 'ragen-bench[render]'"
FORMATS = (".gif", ".mp4")
FPS = 2  # frames a second: a step can be read before the next
# Small pictures are enlarged (by a whole factor, pixels stay sharp) to about this size.
MIN_SIDE = 288
# Video encoders want sides that are multiples of 16; frames are padded to them.
BLOCK = 16
_PAPER, _INK, _CAPTION, _CAPTION_INK = (255, 255, 255), (20, 20, 20), (34, 34, 40), (240, 240, 240)
_TEXT_SIZE, _CAPTION_SIZE, _TEXT_COLUMNS = 14, 13, 64
_LINE_GAP = 4


class RenderError(ValueError):
    """The episode cannot be rendered as asked (no such episode, a replay mismatch, a missing package)."""


@dataclass(frozen=True)
class Frame:
    """One state of the episode: what the env's ``render()`` showed (a picture or a text) and the caption."""

    shown: np.ndarray | str
    caption: str


def render_episode(run_dir: str | Path, episode: int, out: str | Path | None = None) -> tuple[Path, int]:
    """Write episode ``episode`` (0-based, in ``episodes.jsonl`` order) of ``run_dir``; ``(path, frames)``."""
    run_dir = Path(run_dir)
    target = Path(out) if out is not None else Path(f"{run_dir.resolve().name}-episode-{episode}.gif")
    if target.suffix.lower() not in FORMATS:
        raise RenderError(f"--out must end in {' or '.join(FORMATS)}, got {str(target)!r}")
    imageio = _imageio(target.suffix.lower())
    manifest = rundir.read_json(run_dir / rundir.MANIFEST)
    env_kwargs = dict(manifest.get("config", {}).get("env_kwargs") or {})
    record = episode_record(run_dir, episode)
    frames = [_picture(frame) for frame in replay_frames(record, env_kwargs)]
    images = _same_size(frames)
    if target.suffix.lower() == ".gif":
        imageio.imwrite(target, images, extension=".gif", duration=1000 // FPS, loop=0)
    else:
        imageio.imwrite(target, images, extension=".mp4", fps=FPS)
    return target, len(images)


def episode_record(run_dir: Path, episode: int) -> dict[str, Any]:
    """The ``episode``-th record of the run's log, or one error line saying which exist."""
    path = run_dir / rundir.EPISODES
    if not path.is_file():
        raise RenderError(f"{path}: no episode log (is {run_dir} an eval run directory?)")
    count = 0
    for count, record in enumerate(rundir.iter_episodes(path), start=1):
        if count - 1 == episode:
            return record
    if count == 0:
        raise RenderError(f"{path} holds no episode yet")
    raise RenderError(f"--episode {episode}: {path} holds episodes 0..{count - 1}")


def replay_frames(record: Mapping[str, Any], env_kwargs: Mapping[str, Any], env: Any = None) -> list[Frame]:
    """The frames of a recorded episode, replayed on a fresh env (see the module doc).

    ``env``: for a single-agent record, a :func:`replay_env` of its id to replay on
    instead (reset here, left open), so a caller replaying many episodes starts each env
    once (a TextWorld-Express env starts a JVM).
    """
    if record["env_id"] in GAME_IDS:
        return list(_game_frames(record, env_kwargs))
    if record["env_id"] not in ENV_IDS:
        raise RenderError(f"the episode's env {record['env_id']!r} is not registered here (an id of another version?)")
    if env is not None:
        return list(_env_frames(record, env))
    env = replay_env(record["env_id"], env_kwargs)
    try:
        return list(_env_frames(record, env))
    finally:
        env.close()


def replay_env(env_id: str, env_kwargs: Mapping[str, Any]) -> Any:
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
    modes = make_multiagent(env_id, parallel=parallel, **env_kwargs).unwrapped.metadata["render_modes"]
    mode = "rgb_array" if "rgb_array" in modes else "ansi"
    env = make_match_env(env_id, seed=seed, **{**env_kwargs, "render_mode": mode})
    game = env.unwrapped
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
        yield Frame(env.render(), f"move {number}  {seat} plays {game.action_names[move]}")


def _short(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# -- pictures ------------------------------------------------------------------------


def _picture(frame: Frame) -> np.ndarray:
    """The frame as one picture: its image enlarged (or its text drawn) above the caption."""
    from PIL import Image, ImageDraw, ImageFont

    if isinstance(frame.shown, np.ndarray):
        image = frame.shown
        scale = max(1, math.ceil(MIN_SIDE / max(image.shape[:2])))
        body = np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)
    else:
        body = _text_picture(frame.shown)
    font = ImageFont.load_default(size=_CAPTION_SIZE)
    caption = Image.new("RGB", (body.shape[1], _CAPTION_SIZE + 2 * _LINE_GAP + 2), _CAPTION)
    ImageDraw.Draw(caption).text((_LINE_GAP, _LINE_GAP), frame.caption, font=font, fill=_CAPTION_INK)
    return np.vstack([body, np.asarray(caption)])


def _text_picture(text: str) -> np.ndarray:
    """``text`` in Pillow's built-in font, lines wrapped at :data:`_TEXT_COLUMNS` characters."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=_TEXT_SIZE)
    lines = [wrapped for line in text.splitlines() or [""] for wrapped in (textwrap.wrap(line, _TEXT_COLUMNS) or [""])]
    height = len(lines) * (_TEXT_SIZE + _LINE_GAP) + 2 * _LINE_GAP
    width = max(MIN_SIDE, max(int(font.getlength(line)) for line in lines) + 2 * _LINE_GAP)
    picture = Image.new("RGB", (width, max(height, MIN_SIDE // 2)), _PAPER)
    pen = ImageDraw.Draw(picture)
    for row, line in enumerate(lines):
        pen.text((_LINE_GAP, _LINE_GAP + row * (_TEXT_SIZE + _LINE_GAP)), line, font=font, fill=_INK)
    return np.asarray(picture)


def _same_size(pictures: list[np.ndarray]) -> list[np.ndarray]:
    """Every picture on a canvas of the largest size (sides rounded up to :data:`BLOCK`), top left."""
    height = -(-max(p.shape[0] for p in pictures) // BLOCK) * BLOCK
    width = -(-max(p.shape[1] for p in pictures) // BLOCK) * BLOCK
    sized = []
    for picture in pictures:
        framed = np.empty((height, width, 3), dtype=np.uint8)
        framed[...] = _PAPER
        framed[: picture.shape[0], : picture.shape[1]] = picture
        sized.append(framed)
    return sized


def _imageio(suffix: str) -> Any:
    """``imageio.v3``, or :class:`RenderError` with the install hint (MP4 also needs imageio-ffmpeg)."""
    try:
        import imageio.v3 as iio
        import PIL  # noqa: F401  (imageio's GIF writer and the text frames)
    except ImportError:
        raise RenderError(INSTALL_HINT) from None
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise RenderError(f"{INSTALL_HINT} (MP4 needs imageio-ffmpeg, which the extra installs)") from None
    return iio
