"""What produced a run: its identity (fingerprint), secrets kept out, and the manifest.

The *fingerprint* is everything that must match for two run directories to hold the
same run: the config's identity (:attr:`ragen_bench.eval.config.EvalConfig.identity`: without
the free keys ``out``, ``progress`` and the launch keys) with secrets redacted,
the panel checksums, the chat template hash and the SHA-256 of every data file the
env arguments name.  The *manifest* adds where and when the run happened (versions,
git commit, machine); ``manifest.json`` is checked here when it is read.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ragen_bench
from ragen_bench import panels as panels_module
from ragen_bench.eval import rundir
from ragen_bench.eval.config import EvalConfig, data_files
from ragen_bench.eval.rundir import RunDirError

FORMAT = "ragen-bench/run/v2"
FINGERPRINT_KEYS = ("config", "panels", "template_hash", "data_files")
REDACTED = "<redacted>"
_SECRET_NAME = re.compile(r"(^|_)(api_?key|key|secret|password|token|auth|authorization|credentials?)$", re.I)
_PACKAGES = ("gymnasium", "numpy", "torch", "transformers", "vllm", "hydra-core")
# The fields every manifest of this FORMAT holds, with their JSON types: what a run
# (resume, merge) and the leaderboard's verifier rely on, checked by bad_manifest_field.
MANIFEST_FIELDS: dict[str, type] = {
    "format": str, "config": dict, "panels": dict, "template_hash": str, "data_files": dict,
    "expected_episodes": int, "envs": list, "started_at": str, "sessions": int, "complete": bool,
}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def redact(settings: Mapping[str, Any]) -> dict[str, Any]:
    """A copy with the value of every secret-looking key (``api_key``, ...) replaced."""
    return {
        key: REDACTED if _SECRET_NAME.search(str(key)) and value is not None else value
        for key, value in settings.items()
    }


def identity_config(config: EvalConfig) -> dict[str, Any]:
    """What a run computes, as the manifest records it: the config's identity with the agent's secrets redacted."""
    return {**config.identity, "agent": redact(config.agent)}


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def data_file_hashes(env_kwargs: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """``{key: {path, sha256}}`` for every data file named in ``env_kwargs``.

    The hash, not the path, is what identifies the data: an edited file under the
    same name is a different run.
    """
    return {
        key: {"path": str(path), "sha256": file_sha256(path)}
        for key, path in sorted(data_files(env_kwargs).items())
        if path is not None
    }


def fingerprint(config: EvalConfig, panels: Sequence[panels_module.Panel]) -> dict[str, Any]:
    """Everything that must match for two run directories to hold the same run (``panels``: its targets')."""
    return {
        "config": identity_config(config),
        "panels": {f"{panel.env_id}:{panel.split}": panel.checksum for panel in panels},
        "template_hash": config.template_hash,
        "data_files": data_file_hashes(config.env_kwargs),
    }


def fingerprint_of(manifest: Mapping[str, Any]) -> dict[str, Any]:
    return {key: manifest[key] for key in FINGERPRINT_KEYS}


def git_state(checkout: Path) -> dict[str, Any] | None:
    """Commit and dirty flag when ``checkout`` is the top of a git work tree.

    Requiring the top level (not just any enclosing repository) keeps an installed
    copy inside someone else's repository from reporting that repository's commit.
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "HEAD"], cwd=checkout, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        toplevel, commit = head.stdout.split()
        if Path(toplevel).resolve() != checkout.resolve():
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=checkout, capture_output=True, text=True, timeout=10,
        )
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return {"commit": commit, "dirty": bool(status.stdout.strip())}


def package_versions() -> dict[str, str]:
    """Installed versions from package metadata (no package is imported)."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def hardware() -> dict[str, Any]:
    """The machine; GPUs only when an agent already imported torch (never imported here)."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return info


def env_entries(panels: Sequence[panels_module.Panel], counts: Mapping[tuple[str, str], int]) -> list[dict[str, Any]]:
    """The manifest's ``envs``: each panel's id, version and checksum, its seeds, and the episodes a suite's
    protocol plays on it (``episodes``, only where the suite sets a count: other runs' manifests stay as they were)."""
    return [
        {
            "env_id": panel.env_id,
            "split": panel.split,
            "version": panel.env_id.rsplit("-", 1)[-1],
            "panel_checksum": panel.checksum,
            "panel_seeds": len(panel.seeds),
            **({"episodes": counts[key]} if (key := (panel.env_id, panel.split)) in counts else {}),
        }
        for panel in panels
    ]


def build_manifest(
    fingerprint_: Mapping[str, Any],
    panels: Sequence[panels_module.Panel],
    *,
    expected_episodes: int,
    previous: Mapping[str, Any] | None,
    counts: Mapping[tuple[str, str], int],
) -> dict[str, Any]:
    """The manifest of a (possibly resumed) run, before it finishes."""
    return {
        "format": FORMAT,
        "ragen_bench_version": ragen_bench.__version__,
        "git": git_state(Path(ragen_bench.__file__).resolve().parent.parent),
        **fingerprint_,
        "envs": env_entries(panels, counts),
        "python": platform.python_version(),
        "packages": package_versions(),
        "hardware": hardware(),
        "expected_episodes": expected_episodes,
        "started_at": previous["started_at"] if previous else utc_now(),
        "sessions": (previous["sessions"] if previous else 0) + 1,
        "finished_at": None,
        "complete": False,
    }


def bad_manifest_field(manifest: Mapping[str, Any]) -> str | None:
    """The first field of :data:`MANIFEST_FIELDS` that ``manifest`` lacks or holds with another JSON type.

    Types are exact, as JSON has them: ``true`` is no count.
    """
    for field, kind in MANIFEST_FIELDS.items():
        if type(manifest.get(field)) is not kind:
            return field
    return None


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    """``manifest.json`` of ``run_dir`` (``None`` if there is none), checked for the fields runs rely on."""
    path = Path(run_dir) / rundir.MANIFEST
    if not path.exists():
        return None
    manifest = rundir.read_json(path)
    if not isinstance(manifest, dict):
        raise RunDirError(f"{path}: not a run manifest (a JSON object is expected)")
    field = bad_manifest_field(manifest)
    if field is not None:
        kind = MANIFEST_FIELDS[field]
        found = "missing" if field not in manifest else f"{type(manifest[field]).__name__}, not {kind.__name__}"
        raise RunDirError(f"{path}: field {field!r} is {found}; not a manifest this version wrote")
    if manifest["format"] != FORMAT:
        raise RunDirError(f"{path}: format {manifest['format']!r}, this version reads {FORMAT!r}")
    if not isinstance(manifest["config"].get("agent"), dict) or not isinstance(manifest["config"].get("shard"), str):
        raise RunDirError(f"{path}: config.agent or config.shard is malformed")
    return manifest


def require_manifest(run_dir: Path) -> dict[str, Any]:
    manifest = read_manifest(run_dir)
    if manifest is None:
        raise RunDirError(f"{run_dir} has no {rundir.MANIFEST}; is it a run directory?")
    return manifest
