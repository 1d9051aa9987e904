"""`ragen_bench.starpo` stays light to import: torch loads only with its submodules."""

from __future__ import annotations

import json

from tests.conftest import run_python


def test_importing_the_package_does_not_load_torch():
    out = run_python(
        "import sys, json, ragen_bench.starpo\n"
        "print(json.dumps([m for m in ('torch', 'verl') if m in sys.modules]))"
    )
    assert json.loads(out) == []
