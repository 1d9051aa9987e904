"""The README's examples run as written."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO_ROOT, run_python

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_readme_has_python_examples():
    assert len(PYTHON_BLOCKS) >= 2


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"block{i}" for i in range(len(PYTHON_BLOCKS))])
def test_readme_python_example_runs(block):
    # A fresh interpreter per block, as a reader would paste it.
    run_python(block)
