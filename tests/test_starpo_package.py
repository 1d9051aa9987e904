"""`ragen_bench.starpo` stays light to import: torch loads only with its submodules."""

from __future__ import annotations

import json

from tests.conftest import REPO_ROOT, run_python
from tests.test_layers import _imports


def test_importing_the_package_does_not_load_torch():
    out = run_python(
        "import sys, json, ragen_bench.starpo\n"
        "print(json.dumps([m for m in ('torch', 'verl') if m in sys.modules]))"
    )
    assert json.loads(out) == []


def test_the_algorithm_core_imports_nothing_of_the_project_but_itself():
    """starpo/ is the algorithm only: the policy agent, sampler and SFT data live in ragen_bench.train."""
    for path in sorted((REPO_ROOT / "ragen_bench" / "starpo").glob("*.py")):
        outside = sorted(name for name in _imports(path) if not name.startswith("ragen_bench.starpo"))
        assert outside == [], f"{path.name} imports {outside}"
