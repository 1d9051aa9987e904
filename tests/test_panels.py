"""Frozen panel files: the checksum covers the whole file's meaning, and every way a file
can be wrong is a PanelError that names the file (never a traceback from inside)."""

from __future__ import annotations

import itertools
import json
import shutil

import pytest

from ragen_bench import data, panels

ENV = "RAGEN/Sokoban-6x6-v0"


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(str(panels.data_dir()), copy)
    monkeypatch.setenv(data.DATA_DIR_OVERRIDE, str(copy))
    return copy


def _panel_file(data_copy, split="test"):
    return data_copy / "sokoban" / "panels" / "Sokoban-6x6-v0" / f"{split}.json"


def _edit(path, change):
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


def _set(key, value):
    return lambda raw: raw.__setitem__(key, value)


def _set_item(key, index, value):
    return lambda raw: raw[key].__setitem__(index, value)


# Each edit keeps the file valid JSON; the checksum (or a field check) must catch it.
EDITS = {
    "seed_start": _set("seed_start", 10_001),
    "optimal_length value": _set_item("optimal_length", 0, 99),
    "optimal_length null": _set_item("optimal_length", 3, None),
    "num_seeds": _set("num_seeds", 255),
    "format v1": _set("format", "ragen-bench/panel/v1"),
    "format missing": lambda raw: raw.pop("format"),
    "seed": _set_item("seeds", 0, 124),
    "seed as bool": _set_item("seeds", 0, True),
    "seed negative": _set_item("seeds", 0, -1),
    "seed as float": _set_item("seeds", 0, 123.0),
    "hash": _set_item("obs_sha256", 0, "0" * 64),
    "hash upper case": lambda raw: raw["obs_sha256"].__setitem__(0, raw["obs_sha256"][0].upper()),
    "hash short": _set_item("obs_sha256", 0, "abc"),
    "extra field": _set("note", "hand-edited"),
    "checksum missing": lambda raw: raw.pop("checksum"),
    "seeds not a list": _set("seeds", "123-378"),
    "lists of different length": lambda raw: raw["seeds"].pop(),
    "drop optimal_length": lambda raw: raw.pop("optimal_length"),
    "env_id": _set("env_id", "RAGEN/Sokoban-8x8-v0"),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_any_edit_of_a_test_panel_is_rejected_naming_the_file(data_copy, name):
    path = _panel_file(data_copy)
    _edit(path, EDITS[name])
    with pytest.raises(panels.PanelError, match="test.json"):
        panels.load(ENV, "test")


def test_train_panel_seed_start_edit_is_rejected(data_copy):
    path = _panel_file(data_copy, "train")
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert raw["seed_start"] == raw["seeds"][0] == panels.TRAIN_SEED_START
    _edit(path, _set("seed_start", panels.TRAIN_SEED_START + 1))
    with pytest.raises(panels.PanelError, match="seed_start"):
        panels.load(ENV, "train")


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1, 2, 3]", b"null", "{\"seeds\": \"\xe9\"}".encode("latin-1"), b"\xff\xfe{}"],
    ids=["empty", "text", "list", "null", "latin-1", "bom"],
)
def test_unreadable_panel_files_are_panel_errors(data_copy, content):
    _panel_file(data_copy).write_bytes(content)
    with pytest.raises(panels.PanelError, match="test.json"):
        panels.load(ENV, "test")


def test_a_directory_where_the_file_should_be_is_a_missing_panel(data_copy):
    path = _panel_file(data_copy)
    path.unlink()
    path.mkdir()
    with pytest.raises(panels.PanelError, match="no 'test' panel"):
        panels.load(ENV, "test")
    assert panels.available(ENV) == ["train", "val"]


def test_round_trip_of_every_field(data_copy):
    panel = panels.load(ENV, "train")
    assert panels.write(panel) == _panel_file(data_copy, "train")
    assert panels.load(ENV, "train") == panel
    assert json.loads(_panel_file(data_copy, "train").read_text(encoding="utf-8")) == panel.to_json()


def test_verify_catches_a_drifted_optimal_length(monkeypatch):
    panel = panels.load(ENV, "test")
    real_reset = panels._reset

    def drifted(env_id, seed):
        observation, info = real_reset(env_id, seed)
        return observation, {**info, "optimal_length": (info["optimal_length"] or 0) + 1}

    monkeypatch.setattr(panels, "_reset", drifted)
    with pytest.raises(panels.PanelError, match="optimal_length"):
        panel.verify()


def test_checksum_is_sha256_of_the_canonical_fields():
    # Computed here from the file itself, independently of Panel.checksum.
    import hashlib

    raw = json.loads(panels.panel_path(ENV, "val").read_text(encoding="utf-8"))
    checksum = raw.pop("checksum")
    canonical = json.dumps(raw, sort_keys=True, separators=(",", ":")).encode("ascii")
    assert hashlib.sha256(canonical).hexdigest() == checksum


def test_an_id_with_no_fresh_train_level_left_says_so_instead_of_searching_forever(monkeypatch):
    # A 2x2 cube scrambled by one turn has 12 levels, and its val and test panels hold all of them.
    env_id = "RAGEN/RubiksCube-2x2-Depth1-v0"
    monkeypatch.setattr(panels, "MAX_REJECTED_IN_A_ROW", 500)
    with pytest.raises(panels.PanelError, match="no decontaminated train seed is left"):
        next(panels.decontaminated_train_seeds(env_id))
    # Where fresh levels exist the guard never fires: Sokoban's first few come as before.
    assert len(list(itertools.islice(panels.decontaminated_train_seeds(ENV), 3))) == 3
