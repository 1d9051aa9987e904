"""The page's episode viewer: transcripts beside the env's frames, turn by turn.

For the first :data:`VIEWER_SEEDS` seeds of each panel of each entry (sample 0), the
episode is replayed from its record by :func:`ragen_bench.render.replay_frames` (the
one replayer; it checks every step's reward against the record) and the page holds

* the conversation of each turn (prompt, think, answer, raw reply, actions, rewards),
* the frames: the state before the turn and after each of its actions.  A picture
  (``render_mode="rgb_array"``) is a small PNG in ``frames/``, named by a hash of its
  pixels, so equal states are one file and the page names the same files whatever
  zlib build wrote them; a text state (envs without pictures) is an index into one
  table of texts, each text held once.

The PNGs are encoded here (numpy and zlib, fixed compression level, no ancillary
chunks): a rebuild writes the same bytes, and the leaderboard needs no image library.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragen_bench import runfiles

# Episodes per panel the viewer holds (the first seeds, sample 0): the page stays small
# while every entry and env can be stepped through.
VIEWER_SEEDS = 8
# ... and the characters of their transcripts (messages) a panel holds: the first episode always, the
# next ones while the panel stays within it.  A NetHack episode's transcript reaches 600 kB and a
# MiniHack one 75 kB (a screen a turn), where a Sokoban one is 2 kB: without it one long-horizon entry
# would double the page.
VIEWER_PANEL_CHARS = 150_000
# PNG bytes of pictures an episode keeps, in order, then its last picture; later ones are not stored
# (the turn's state text still shows). 160 kB holds every frame of the short-episode worlds (a 2048 or
# Sudoku episode reached 157 kB); a Crafter or NetHack episode of hundreds of 256-pixel pictures, about
# 14 kB each, would add megabytes to the folder per entry.
VIEWER_PICTURE_BYTES = 160_000
FRAMES = "frames"  # the folder of the pictures, inside the leaderboard folder


def viewer_data(entries: Sequence[Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """``({"entries": {entry: {label: episode}}, "texts": [...]}, {file name: PNG bytes})``.

    ``entries`` are :class:`.build.Entry` objects (verified runs); labels read
    ``"<env id> <split> seed <seed>"``.
    """
    book = _FrameBook()
    envs: dict[str, Any] = {}  # one replay env per id and env kwargs, reset for each episode
    try:
        data = {entry.run.info.name: _entry_episodes(entry, book, envs) for entry in entries}
    finally:
        for env in envs.values():
            env.close()
    return {"entries": data, "texts": book.texts}, book.pictures


def _entry_episodes(entry: Any, book: _FrameBook, envs: dict[str, Any]) -> dict[str, Any]:
    """``{label: episode}`` of one entry, sorted: the first :data:`VIEWER_SEEDS` seeds of each panel, sample 0."""
    from ragen_bench.chat.config import check_chat
    from ragen_bench.leaderboard import files
    from ragen_bench.render import replay_env

    config = check_chat(entry.run.manifest["config"]["chat"])
    env_kwargs = dict(entry.run.manifest["config"].get("env_kwargs") or {})
    away = _episodes_elsewhere(entry, env_kwargs)
    shown: dict[tuple[str, str], list[int]] = {(env["env_id"], env["split"]): [] for env in entry.run.manifest["envs"]}
    episodes = {}
    for number, record in files.episode_lines(entry.run.episodes_path):
        if not _shown(record, shown):
            continue
        label = f"{record['env_id']} {record['split']} seed {record['seed']}"
        if number in away:  # drawn in the venv of the id's extra; taken in here in log order, as if drawn here
            episodes[label] = adopt_episode(away[number], book)
            continue
        key = json.dumps([record["env_id"], env_kwargs], sort_keys=True)
        if key not in envs:
            envs[key] = replay_env(record["env_id"], env_kwargs)
        episodes[label] = viewer_episode(record, config, envs[key], book)
    return dict(sorted(episodes.items()))


def _shown(record: Mapping[str, Any], shown: dict[tuple[str, str], list[int]]) -> bool:
    """Whether the viewer shows ``record``: sample 0 of the first seeds of its panel, at most :data:`VIEWER_SEEDS`,
    the first always and the next while the panel's transcripts stay within :data:`VIEWER_PANEL_CHARS`.
    ``shown`` holds each panel's characters so far and is counted on."""
    panel = shown[(record["env_id"], record["split"])]
    chars = sum(len(str(message.get("content", ""))) for message in record["messages"])
    if record["sample"] != 0 or len(panel) == VIEWER_SEEDS or (panel and sum(panel) + chars > VIEWER_PANEL_CHARS):
        return False
    panel.append(chars)
    return True


def _episodes_elsewhere(entry: Any, env_kwargs: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """``{line: drawn episode}`` of the shown records whose id's extra lives in a venv of its own and is
    missing here (:mod:`.own_venv`), each drawn there by :func:`drawn_episode`, one worker per extra."""
    from ragen_bench.leaderboard import files, own_venv

    away = own_venv.elsewhere(env["env_id"] for env in entry.run.manifest["envs"])
    if not away:
        return {}
    shown: dict[tuple[str, str], list[int]] = {(env["env_id"], env["split"]): [] for env in entry.run.manifest["envs"]}
    batches: dict[str, list[tuple[int, dict[str, Any]]]] = {extra: [] for extra in sorted(set(away.values()))}
    for number, record in files.episode_lines(entry.run.episodes_path):
        if _shown(record, shown) and record["env_id"] in away:
            batches[away[record["env_id"]]].append((number, record))
    drawn: dict[int, dict[str, Any]] = {}
    header = {"task": "frames", "chat": entry.run.manifest["config"]["chat"], "env_kwargs": dict(env_kwargs)}
    for extra, batch in batches.items():
        python = own_venv.interpreter(extra, [i for i, e in away.items() if e == extra])
        answers = own_venv.run_worker(python, header, [json.dumps({"record": record}) for _, record in batch],
                                      what="drawing the viewer's frames")
        drawn.update(zip([number for number, _ in batch], answers))
    return drawn


def drawn_episode(record: Mapping[str, Any], config: Any, env: Any) -> dict[str, Any]:
    """:func:`viewer_episode` of ``record`` with a book of its own, as JSON: the episode, the book's texts
    and its pictures (base64), for :func:`adopt_episode` in another process."""
    book = _FrameBook()
    episode = viewer_episode(record, config, env, book)
    pictures = {name: base64.b64encode(data).decode("ascii") for name, data in book.pictures.items()}
    return {"episode": episode, "texts": book.texts, "pictures": pictures}


def adopt_episode(drawn: Mapping[str, Any], book: _FrameBook) -> dict[str, Any]:
    """A :func:`drawn_episode` entered into ``book`` frame by frame, as :func:`viewer_episode` enters its own."""
    texts, pictures = drawn["texts"], drawn["pictures"]
    frames = []
    for frame in drawn["episode"]["frames"]:
        if isinstance(frame, int):
            frames.append(book.add(texts[frame]))
        elif frame is None:  # a picture past the episode's budget
            frames.append(None)
        else:  # a picture's name is its pixels' hash: the same here as there
            book.pictures.setdefault(frame, base64.b64decode(pictures[frame]))
            frames.append(frame)
    return {**drawn["episode"], "frames": frames}


def viewer_episode(record: Mapping[str, Any], config: Any, env: Any, book: _FrameBook) -> dict[str, Any]:
    """One episode for the page: its turns, each naming its frames (before, then after each action).

    ``env`` is a :func:`ragen_bench.render.replay_env` of the record's id; ``config`` its run's chat settings.
    """
    from ragen_bench.chat import parse_response
    from ragen_bench.chat.trajectory import unpack_text
    from ragen_bench.render import replay_frames

    frames = replay_frames(record, {}, env)
    messages = [unpack_text(message["content"]) for message in record["messages"]]
    turns, start = [], 0
    for k, turn in enumerate(record["turns"]):
        raw = unpack_text(turn["raw_response"])
        parsed = parse_response(raw, think=config.think, separator=config.action_separator,
                                max_actions=config.max_actions_per_turn, max_chars=config.max_response_chars)
        # The replay steps each executed action that has a recorded reward (render._env_frames).
        steps = min(len(turn["action_ids"]), len(turn["env_rewards"]))
        turns.append({
            "board": messages[2 * k + 1],
            "raw": raw,
            "think": parsed.think,
            "answer": parsed.answer,
            "actions": [unpack_text(a) for a in turn["parsed_actions"]],
            "executed": [unpack_text(a) for a in turn["action_ids"]],
            "rewards": turn["env_rewards"],
            "penalty": turn["format_penalty"],
            "frames": list(range(start, start + steps + 1)),
        })
        start += steps
    return {
        "turns": turns, "final": messages[-1], "success": record["success"], "return": record["total_reward"],
        "frames": kept_frames([frame.shown for frame in frames], book), "captions": [frame.caption for frame in frames],
    }


def kept_frames(shown: Sequence[np.ndarray | str], book: _FrameBook) -> list[str | int | None]:
    """Each frame's reference in ``book``: every text; the pictures while their PNG bytes stay within
    :data:`VIEWER_PICTURE_BYTES`, then only the last (``None`` for a picture not kept)."""
    refs: list[str | int | None] = []
    spent = 0
    for index, frame in enumerate(shown):
        if isinstance(frame, str):
            refs.append(book.add(frame))
            continue
        last = index == len(shown) - 1
        if spent > VIEWER_PICTURE_BYTES and not last:
            refs.append(None)  # not even encoded: past the budget nothing but the last picture is drawn
            continue
        name, data = picture_file(frame)
        spent += len(data)
        if spent <= VIEWER_PICTURE_BYTES or last:
            book.pictures.setdefault(name, data)
            refs.append(name)
        else:
            refs.append(None)
    return refs


class _FrameBook:
    """The frames of every episode shown, each distinct picture or text held once."""

    def __init__(self) -> None:
        self.pictures: dict[str, bytes] = {}
        self.texts: list[str] = []
        self._text_index: dict[str, int] = {}

    def add(self, shown: str) -> int:
        """A text's index in :attr:`texts` (pictures are kept by :func:`kept_frames`)."""
        if shown not in self._text_index:
            self._text_index[shown] = len(self.texts)
            self.texts.append(shown)
        return self._text_index[shown]


def picture_file(shown: np.ndarray) -> tuple[str, bytes]:
    """A picture's file name (``frames/<hash of its pixels>.png``) and its PNG bytes."""
    image = np.ascontiguousarray(shown, dtype=np.uint8)
    digest = hashlib.sha256(repr(image.shape).encode() + image.tobytes()).hexdigest()[:20]
    return f"{FRAMES}/{digest}.png", png_bytes(image)


def png_bytes(image: np.ndarray) -> bytes:
    """``image`` (``(height, width, 3)`` uint8) as a PNG: one IDAT, filter 0, zlib level 9, no metadata."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"png_bytes: needs a (height, width, 3) uint8 picture, got {image.shape} {image.dtype}")
    height, width, _ = image.shape
    rows = np.zeros((height, 1 + 3 * width), dtype=np.uint8)  # each scanline led by its filter byte (0: none)
    rows[:, 1:] = image.reshape(height, 3 * width)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, deflate, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
            + chunk(b"IEND", b""))


def write_frames(out: Path, pictures: Mapping[str, bytes]) -> Path:
    """Write ``pictures`` under ``out`` and remove any other file in ``out/frames``; that folder.

    A file already holding the same bytes is left alone (names are content hashes, so a
    rebuild rewrites nothing); a stale frame of an earlier build would make the folder
    differ from a fresh build, so it goes.
    """
    folder = out / FRAMES
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {out / name: data for name, data in pictures.items()}
    for path in folder.iterdir():
        if path not in wanted:
            path.unlink()
    for path, data in sorted(wanted.items()):
        if not (path.is_file() and path.read_bytes() == data):
            runfiles.write_bytes_atomic(path, data)
    return folder


# -- the page's part ---------------------------------------------------------------------

VIEWER_STYLE = """
#viewer { border: 1px solid #ccc; padding: 0.8em; background: #fafafa; }
#viewer pre { white-space: pre-wrap; background: #fff; border: 1px solid #ddd; padding: 0.5em; margin: 0.3em 0; }
#viewer h3 { margin: 0.2em 0; }
#viewer h4 { margin: 0.5em 0 0.1em; }
.panes { display: grid; grid-template-columns: 1fr; gap: 1em; }
.panes.compare { grid-template-columns: 1fr 1fr; }
.pane { border-top: 2px solid #ccd; padding-top: 0.4em; min-width: 0; }
.panes:not(.compare) .pane { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1em; }
#viewer [hidden] { display: none; }
.frames { display: flex; flex-wrap: wrap; gap: 0.5em; align-items: flex-start; }
.frames figure { margin: 0; }
.frames figcaption { font-size: 0.75em; color: #444; max-width: 16em; }
.frames img { height: 10em; width: auto; image-rendering: pixelated; border: 1px solid #ccc; background: #fff; }
.frames.many img { height: 5em; }
.frames pre.state { font-family: monospace; font-size: 0.75em; max-height: 16em; max-width: 36em; overflow: auto; }
pre.prompt { max-height: 18em; overflow: auto; }
#v-step { width: 16em; vertical-align: middle; }
#viewer .nothing { font-weight: bold; color: #8a2b00; }
"""


def _pane(prefix: str) -> str:
    """The markup of one side of the viewer; its elements' ids start with ``prefix``."""
    return f"""<div class="pane" id="{prefix}-pane">
<div><h3 id="{prefix}-title"></h3><p><strong id="{prefix}-turn"></strong></p>
<div class="frames" id="{prefix}-frames"></div></div>
<div><h4>Prompt of this turn</h4><pre class="prompt" id="{prefix}-board"></pre>
<h4>Think</h4><pre id="{prefix}-think"></pre><h4>Answer</h4><pre id="{prefix}-answer"></pre>
<p id="{prefix}-actions"></p><p id="{prefix}-rewards"></p>
<details><summary>raw reply</summary><pre id="{prefix}-raw"></pre></details></div>
</div>"""


VIEWER_MARKUP = f"""<h2>Episodes</h2>
<p>Each episode replayed from its record: the conversation beside the env's frames (the state before the
turn, then after each action). Pick a second entry to compare the two on the same seed, turn by turn.
The page holds the first {VIEWER_SEEDS} seeds of every panel (sample 0).</p>
<div id="viewer">
<p><label>entry <select id="v-entry"></select></label>
<label>compare with <select id="w-entry"></select></label>
<label>episode <select id="v-episode"></select></label></p>
<p><button id="v-prev" type="button">previous turn</button>
<input id="v-step" type="range" min="0" value="0" aria-label="turn">
<button id="v-next" type="button">next turn</button></p>
<p class="nothing" id="v-nothing" hidden></p>
<div class="panes" id="v-panes">
{_pane("v")}
{_pane("w")}
</div>
</div>"""

# Every text of a record is set with textContent (never parsed as markup); frame files are
# named by the page's own data (hashes), and load only when their turn is shown.
VIEWER_SCRIPT = """
const VIEW = JSON.parse(document.getElementById("viewer-data").textContent);
const pick = id => document.getElementById(id);
const NONE = "(none)";
let step = 0;
function fill(select, names, keep) {
  select.replaceChildren(...names.map(name => {
    const option = document.createElement("option");
    option.textContent = name;
    return option;
  }));
  if (names.includes(keep)) select.value = keep;
}
function episodeOf(entry) { return entry === NONE ? null : VIEW.entries[entry][pick("v-episode").value]; }
function figure(ref, caption) {
  const box = document.createElement("figure");
  let body;
  if (ref === null) {  // a picture past the episode's budget (viewer.VIEWER_PICTURE_BYTES)
    body = document.createElement("p");
    body.className = "state";
    body.textContent = "(picture not kept: the page keeps an episode's first pictures and its last; " +
      "`ragen-bench render` draws every one)";
  } else if (typeof ref === "number") {  // a text state: an index into VIEW.texts
    body = document.createElement("pre");
    body.className = "state";
    body.textContent = VIEW.texts[ref];
  } else {
    body = document.createElement("img");
    body.loading = "lazy";
    body.alt = caption;
    body.src = ref;
  }
  const note = document.createElement("figcaption");
  note.textContent = caption;
  box.append(body, note);
  return box;
}
function showPane(prefix, entry, e) {
  pick(prefix + "-title").textContent = entry;
  const last = e.turns.length;
  const at = Math.min(step, last);
  const ids = at === last ? [e.frames.length - 1] : e.turns[at].frames;
  const frames = pick(prefix + "-frames");
  frames.classList.toggle("many", ids.length > 4);
  frames.replaceChildren(...ids.map((i, n) => figure(e.frames[i], (at < last && n === 0 ? "before: " : "") + e.captions[i])));
  if (at === last) {
    const outcome = e.success ? "solved" : "not solved";
    pick(prefix + "-turn").textContent = `Final state (after ${last} turns): ${outcome}, return ${Number(e.return.toFixed(3))}`;
    pick(prefix + "-board").textContent = e.final;
    ["think", "answer", "actions", "rewards", "raw"].forEach(id => pick(prefix + "-" + id).textContent = "");
    return;
  }
  const t = e.turns[at];
  pick(prefix + "-turn").textContent = `Turn ${at + 1} of ${last}`;
  pick(prefix + "-board").textContent = t.board;
  pick(prefix + "-board").scrollTop = pick(prefix + "-board").scrollHeight;  // the state ends the prompt
  pick(prefix + "-think").textContent = t.think;
  pick(prefix + "-answer").textContent = t.answer;
  pick(prefix + "-raw").textContent = t.raw;
  pick(prefix + "-actions").textContent = `parsed: [${t.actions.join(", ")}]  executed ids: [${t.executed.join(", ")}]`;
  pick(prefix + "-rewards").textContent = `env rewards: [${t.rewards.join(", ")}]  format penalty: ${t.penalty}`;
}
function show() {
  // Two entries may share no episode (other envs): say so instead of showing a stale pane.
  const nothing = pick("v-episode").options.length === 0;
  pick("v-nothing").hidden = !nothing;
  pick("v-panes").hidden = nothing;
  ["v-episode", "v-prev", "v-next", "v-step"].forEach(id => pick(id).disabled = nothing);
  if (nothing) {
    pick("v-nothing").textContent = `${pick("v-entry").value} and ${pick("w-entry").value} share no episode ` +
      "(the same env, split and seed): pick another entry to compare with, or (none).";
    return;
  }
  const sides = [["v", pick("v-entry").value], ["w", pick("w-entry").value]]
    .map(([prefix, entry]) => [prefix, entry, episodeOf(entry)]).filter(side => side[2] !== null);
  // Turns align by number; the shorter episode shows its final state past its end.
  const last = Math.max(...sides.map(side => side[2].turns.length));
  step = Math.max(0, Math.min(step, last));
  pick("v-prev").disabled = step === 0;
  pick("v-next").disabled = step === last;
  pick("v-step").max = String(last);
  pick("v-step").value = String(step);
  pick("w-pane").hidden = sides.length === 1;
  pick("v-panes").classList.toggle("compare", sides.length === 2);
  sides.forEach(([prefix, entry, e]) => showPane(prefix, entry, e));
}
function chooseEntries() {
  // With a second entry, only the episodes both hold (same env, split and seed).
  const names = Object.keys(VIEW.entries[pick("v-entry").value]);
  const other = pick("w-entry").value;
  const shared = other === NONE ? names : names.filter(name => name in VIEW.entries[other]);
  fill(pick("v-episode"), shared, pick("v-episode").value);
  step = 0;
  show();
}
const entries = Object.keys(VIEW.entries);
fill(pick("v-entry"), entries);
fill(pick("w-entry"), [NONE, ...entries]);
pick("v-entry").addEventListener("change", chooseEntries);
pick("w-entry").addEventListener("change", chooseEntries);
pick("v-episode").addEventListener("change", () => { step = 0; show(); });
pick("v-prev").addEventListener("click", () => { step -= 1; show(); });
pick("v-next").addEventListener("click", () => { step += 1; show(); });
pick("v-step").addEventListener("input", () => { step = Number(pick("v-step").value); show(); });
chooseEntries();
performance.mark("viewer-ready");
"""
