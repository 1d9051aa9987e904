"""``ragen-bench serve`` where the openenv extra is missing (this venv: openenv lives in .venv-openenv,
whose tests_openenv/ cover the server itself)."""

from __future__ import annotations

import importlib.util

import pytest

from ragen_bench.cli import main


@pytest.mark.skipif(importlib.util.find_spec("openenv") is not None, reason="openenv is installed here")
def test_serve_without_the_extra_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "RAGEN/Bandit-v0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragen-bench serve: error: serve needs the openenv extra: pip install 'ragen-bench[openenv]'")
    assert len(err.splitlines()) == 1


def test_serve_help_needs_no_extra(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "--max-sessions" in out and "--mcp" in out and "--stdio" in out


@pytest.mark.skipif(importlib.util.find_spec("mcp") is not None, reason="mcp is installed here")
def test_serve_mcp_without_the_extra_is_one_line_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "RAGEN/Bandit-v0", "--mcp"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragen-bench serve: error: serve --mcp needs the mcp extra: pip install 'ragen-bench[mcp]'")
    assert len(err.splitlines()) == 1


def test_stdio_without_mcp_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "RAGEN/Bandit-v0", "--stdio"]) == 2
    assert capsys.readouterr().err == "ragen-bench serve: error: --stdio serves MCP: add --mcp\n"
