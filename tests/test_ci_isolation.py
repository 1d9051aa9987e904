"""CI runs with every per-user cache pointed at an empty folder inside the run (``.ci/run``).

A test that passes only because an earlier run left a file in ``~/.cache`` (a converted
SmolLM2, a built tiny model) hides a missing install step from CI; this module fails CI when
``.ci/run`` stops isolating a cache that the project or its libraries read.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import in_ci

# Each variable, and the library default it overrides.
ISOLATED = (
    "RAGEN_BENCH_CACHE",  # ragen_bench.cache: converted SmolLM2, the tiny model
    "HF_HOME",  # huggingface_hub / transformers / datasets
    "XDG_CACHE_HOME",  # pip, matplotlib and anything else that follows XDG
    "TORCH_HOME",
    "VLLM_CACHE_ROOT",
    "MPLCONFIGDIR",
    "PLAYWRIGHT_BROWSERS_PATH",  # a downloaded browser would hide the missing apt install
)
# More specific variables that would take precedence over the ones above: CI unsets them.
OVERRIDES = (
    "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE", "HF_ASSETS_CACHE",
    "PIP_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TRITON_HOME", "RAY_ADDRESS",
)

pytestmark = pytest.mark.skipif(not in_ci(), reason="only CI (CI=true, via .ci/run) isolates the per-user caches")


def ci_home() -> Path:
    home = os.environ.get("RAGEN_BENCH_CI_HOME")
    assert home, "CI=true but RAGEN_BENCH_CI_HOME is unset: run CI through .ci/run"
    return Path(home).resolve()


@pytest.mark.parametrize("name", ISOLATED)
def test_each_per_user_cache_points_inside_the_run(name):
    value = os.environ.get(name)
    assert value, f"{name} is unset: it falls back to a per-user folder"
    assert Path(value).resolve().is_relative_to(ci_home()), f"{name}={value} is outside {ci_home()}"


@pytest.mark.parametrize("name", OVERRIDES)
def test_no_more_specific_override_points_elsewhere(name):
    value = os.environ.get(name)
    assert value is None or Path(value).resolve().is_relative_to(ci_home()), f"{name}={value}"


def test_the_libraries_resolve_their_caches_inside_the_run():
    from ragen_bench.cache import cache_root

    assert cache_root().resolve().is_relative_to(ci_home())
    hub = pytest.importorskip("huggingface_hub.constants")
    for where in (hub.HF_HOME, hub.HF_HUB_CACHE, hub.HF_ASSETS_CACHE):
        assert Path(where).resolve().is_relative_to(ci_home()), where
    assert hub.HF_HUB_OFFLINE, "the hub must be offline: nothing downloads weights"
    datasets_config = pytest.importorskip("datasets.config")
    assert Path(datasets_config.HF_DATASETS_CACHE).resolve().is_relative_to(ci_home())
    matplotlib = pytest.importorskip("matplotlib")
    assert Path(matplotlib.get_cachedir()).resolve().is_relative_to(ci_home())
    torch_hub = pytest.importorskip("torch.hub")
    assert Path(torch_hub.get_dir()).resolve().is_relative_to(ci_home())


def test_pip_caches_inside_the_run():
    import subprocess
    import sys

    where = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).resolve().is_relative_to(ci_home()), where.stdout


def test_ray_sessions_live_apart_from_the_machines():
    # Ray's default /tmp/ray is shared by every run on the machine; CI gives it a folder of its own
    # (outside .ci-home: Ray's socket paths must stay under 107 characters).
    value = os.environ.get("RAY_TMPDIR")
    assert value and Path(value).resolve() != Path("/tmp/ray"), f"RAY_TMPDIR={value}"


def test_no_user_site_packages():
    import site
    import sys

    assert os.environ.get("PYTHONNOUSERSITE") == "1" and not site.ENABLE_USER_SITE
    assert not any(p.startswith(site.getuserbase()) for p in sys.path if site.getuserbase())
