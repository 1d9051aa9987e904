"""The ground floor every run-file writer and config comparison goes through (ragen_bench.runfiles)."""

from __future__ import annotations

import os

import pytest

from ragen_bench import panels, runfiles, suites


def test_replace_atomically_fsyncs_the_file_and_the_directory(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(runfiles.os, "fsync", lambda fd: (synced.append(os.path.isdir(f"/proc/self/fd/{fd}")),
                                                           real_fsync(fd)))
    runfiles.write_text_atomic(tmp_path / "x.txt", "√\n")
    assert (tmp_path / "x.txt").read_bytes() == "√\n".encode()
    assert synced == [False, True]  # the file, then its directory (after the rename)


def test_fsync_tree_syncs_every_file_and_folder_deepest_first(tmp_path, monkeypatch):
    (tmp_path / "model" / "sub").mkdir(parents=True)
    for name in ("model/sub/weights.bin", "model/config.json", "rng.pt"):
        (tmp_path / name).write_bytes(b"x")
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(runfiles.os, "fsync", lambda fd: (synced.append(os.path.realpath(f"/proc/self/fd/{fd}")),
                                                           real_fsync(fd)))
    runfiles.fsync_tree(tmp_path)
    relative = [os.path.relpath(path, tmp_path) for path in synced]
    assert sorted(relative) == sorted(["model/sub/weights.bin", "model/sub", "model/config.json", "model", "rng.pt", "."])
    # A folder only after everything in it, the root last.
    assert relative.index("model/sub") > relative.index("model/sub/weights.bin")
    assert relative.index("model") > relative.index("model/sub")
    assert relative[-1] == "."


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = tmp_path / "x.bin"
    runfiles.write_bytes_atomic(target, b"old")

    def fail(handle):
        handle.write(b"half")
        raise RuntimeError("disk gone")

    with pytest.raises(RuntimeError):
        runfiles.replace_atomically(target, fail)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]


def test_config_difference_names_the_key_and_both_values():
    old = {"agent": {"name": "hf", "temperature": 0.0}, "limit": 4, "stop": [1, 2]}
    assert runfiles.difference(old, {**old, "limit": 4.0}) is None  # configs: Python equality
    assert runfiles.difference(old, {**old, "stop": [1, 3]}) == ("stop", [1, 2], [1, 3])  # a list whole
    assert runfiles.difference(old, {"limit": 4, "stop": [1, 2]}) == ("agent", old["agent"], runfiles.ABSENT)
    assert runfiles.difference(old, {**old, "b": None}) == ("b", runfiles.ABSENT, None)  # absent is not None
    assert runfiles.difference(1, 2) == ("<root>", 1, 2)
    assert runfiles.first_difference(old, {**old, "agent": {"name": "hf"}}, "config") == "config.agent.temperature"


def test_strict_difference_compares_json_values_exactly():
    assert runfiles.difference({"a": 1}, {"a": 1.0}, "x", strict=True) == ("x.a", 1, 1.0)
    assert runfiles.difference([True], [1], "x", strict=True) == ("x[0]", True, 1)
    assert runfiles.difference([1, 2], [1], "x", strict=True) == ("x (length)", 2, 1)
    # keys in the first value's order, then the second's
    assert runfiles.difference({"b": 1, "a": 1}, {"b": 2, "a": 2}, "x", strict=True)[0] == "x.b"
    assert runfiles.difference({"b": 1, "a": 1}, {"b": 2, "a": 2}, "x")[0] == "x.a"  # configs: sorted


def test_require_same_config_raises_the_callers_error():
    class Refused(Exception):
        pass

    runfiles.require_same_config("out", {"a": {"b": 1}}, {"a": {"b": 1}}, error=Refused)
    with pytest.raises(Refused, match=r"^out holds a run with a different config: a\.b is 1 there but 2 now\. "):
        runfiles.require_same_config("out", {"a": {"b": 1}}, {"a": {"b": 2}}, error=Refused)


def test_identity_drops_only_the_free_keys():
    assert runfiles.identity({"out": "x", "steps": 3, "seed": 0}, ("out", "steps")) == {"seed": 0}


def test_panel_and_suite_files_are_written_atomically_and_unchanged(tmp_path, monkeypatch):
    # Written from what is loaded, each file comes out byte for byte as committed.
    panel = panels.load("RAGEN/Bandit-v0", "test")
    suite = suites.get(suites.names()[0])
    panel_bytes = panels.panel_path(panel.env_id, panel.split).read_bytes()
    suite_bytes = suites.suite_path(suite.name).read_bytes()
    monkeypatch.setattr(panels, "panel_path", lambda env_id, split: tmp_path / "panel.json")
    monkeypatch.setattr(suites, "suite_path", lambda name: tmp_path / "suite.json")
    synced = []
    monkeypatch.setattr(runfiles, "fsync_dir", synced.append)
    assert panels.write(panel).read_bytes() == panel_bytes
    assert suites.write(suite).read_bytes() == suite_bytes
    assert synced == [tmp_path, tmp_path]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["panel.json", "suite.json"]
