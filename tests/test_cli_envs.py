"""`ragen-bench envs verify` where the games extra (PettingZoo) is not installed."""

from __future__ import annotations

import importlib.util
import re
import sys

import gymnasium
import pytest

from ragen_bench.cli import main
from ragen_bench.games.registry import GAME_IDS
from ragen_bench.registry import ENV_IDS, entry

from .conftest import one_line_error


@pytest.fixture
def no_pettingzoo(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "pettingzoo" else real(name, *rest))


def test_a_game_asked_for_by_name_fails_with_the_install_hint(no_pettingzoo, capsys):
    assert main(["envs", "verify", "RAGEN/Bandit-v0", "RAGEN/TicTacToe-v0"]) == 1
    out = capsys.readouterr().out
    assert "ok   RAGEN/Bandit-v0 test" in out
    assert "FAIL RAGEN/TicTacToe-v0: the multi-agent games need PettingZoo: pip install 'ragen-bench[games]'" in out


def test_an_openspiel_game_without_its_extra_names_the_extra_instead_of_crashing(monkeypatch, capsys):
    pytest.importorskip("pettingzoo")  # PettingZoo there, OpenSpiel not: the extra that is missing is named
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "pyspiel" else real(name, *rest))
    assert main(["envs", "verify", "RAGEN/OS-Hex-v0"]) == 1
    assert re.fullmatch(
        r"FAIL RAGEN/OS-Hex-v0: needs the 'openspiel' extra: pip install 'ragen-bench\[openspiel\]'\n"
        r"0 panels of 0 ids verified in \d+\.\ds: 1 id not checked \(extra not installed\)\n",
        capsys.readouterr().out,
    )


def test_with_pettingzoo_the_game_panels_are_verified(capsys):
    pytest.importorskip("pettingzoo")
    assert main(["envs", "verify", "RAGEN/TicTacToe-v0"]) == 0
    assert capsys.readouterr().out.count("ok   RAGEN/TicTacToe-v0") == 3


@pytest.mark.parametrize("env_id", [*GAME_IDS, "RAGEN/Sokoban-6x6-v0"])
def test_envs_show_refuses_a_negative_seed_in_one_line(env_id, capsys):
    if env_id in GAME_IDS:
        pytest.importorskip("pettingzoo")
    assert main(["envs", "show", env_id, "--seed", "-1"]) == 2
    one_line_error(capsys, "ragen-bench envs: error: ", "seed must be ", "got -1")


@pytest.mark.parametrize("env_id", [*GAME_IDS, *ENV_IDS])
def test_envs_show_prints_nothing_before_refusing_the_seed(env_id, capsys):
    if env_id in GAME_IDS:
        pytest.importorskip("pettingzoo")
    assert main(["envs", "show", env_id, "--seed", "-1"]) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("env_id", ["RAGEN/Bandit-v0", "RAGEN/Sokoban-6x6-v0"])
def test_envs_show_of_a_single_agent_id_prints_its_header_once_and_the_seeds_arm_order(env_id, capsys):
    assert main(["envs", "show", env_id, "--seed", "0"]) == 0
    out = capsys.readouterr().out
    row = entry(env_id)
    header = f"{row.id}  ({row.entry_point}, {row.kwargs})"
    assert out.startswith(header + "\n") and out.count(header) == 1
    env = gymnasium.make(env_id)
    observation, _ = env.reset(seed=0)
    names = env.unwrapped.action_names
    assert f"\nactions: {', '.join(names)}\n" in out  # the order of the seed shown, not of the unreset env
    assert out.endswith(f"\nseed 0:\n{observation}\n")


def test_envs_list_ends_with_the_families_and_their_counts(no_pettingzoo, capsys):
    from ragen_bench.catalog import family_rows

    rows = family_rows()
    *families, total = rows
    assert sum(int(row["ids"]) for row in families) == int(total["ids"]) == len(ENV_IDS) + len(GAME_IDS)
    assert total["kind"] == f"{len(ENV_IDS)} single-agent, {len(GAME_IDS)} games"
    by_name = {row["family"]: row for row in families}
    assert by_name["sokoban"] == {"family": "sokoban", "kind": "single-agent",
                                  "ids": str(sum(entry(i).family == "sokoban" for i in ENV_IDS)),
                                  "extra": "-", "installed": "yes"}
    # Without PettingZoo every game family says so.
    assert {row["installed"] for row in families if row["kind"] == "game"} == {"no"}
    assert main(["envs", "list"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].split()[:2] == ["all", f"{len(ENV_IDS)}"]
    assert "[not installed: extra 'games'] multi-agent (PettingZoo)" in out


@pytest.mark.parametrize("command", [["envs", "show", "RAGEN/RG-word_sorting-v0"],
                                     ["eval", "env=RAGEN/RG-word_sorting-v0", "agent=random", "limit=1"]])
def test_an_id_whose_extra_is_missing_is_one_error_line_naming_the_extra(command, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "reasoning_gym", None)  # as if the 'rg' extra were not installed
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    one_line_error(capsys, "pip install 'ragen-bench[rg]'")


def test_verify_of_every_id_prints_only_what_needs_reading_then_one_closing_line(monkeypatch, capsys):
    # All ids (here three): no "ok" line per panel, the skip of an id whose extra is missing,
    # the progress bar on stderr only, and a closing line with the counts.
    from ragen_bench import games, registry

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "reasoning_gym" else real(name, *rest))
    monkeypatch.setattr(registry, "ENV_IDS", ("RAGEN/Bandit-v0", "RAGEN/RG-ab-v0", "RAGEN/FrozenLake-4x4-v0"))
    monkeypatch.setattr(games.registry, "GAME_IDS", ())
    from ragen_bench.catalog import verify_report

    assert verify_report([], print, bar=True) is True
    captured = capsys.readouterr()
    assert re.fullmatch(
        r"skip RAGEN/RG-ab-v0: reasoning-gym ids need the 'rg' extra: pip install 'ragen-bench\[rg\]'\n"
        r"6 panels of 2 ids verified in \d+\.\ds: all match their checksums; 1 id not checked \(extra not installed\)\n",
        captured.out,
    )
    assert "envs verify" in captured.err and "/3 " in captured.err  # the bar, with its total


def test_verify_counts_a_drifted_panel_in_its_closing_line(monkeypatch, capsys):
    from ragen_bench import panels

    real_load = panels.load

    def drifted(env_id, split):
        panel = real_load(env_id, split)
        return panels.Panel(env_id, split, panel.seeds[:1], ("0" * 64,)) if split == "val" else panel

    monkeypatch.setattr(panels, "load", drifted)
    assert main(["envs", "verify", "RAGEN/Bandit-v0"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ok   RAGEN/Bandit-v0 train" and out[1].startswith("FAIL RAGEN/Bandit-v0 val: ")
    assert re.fullmatch(r"3 panels of 1 id verified in \d+\.\ds: 1 panel failed", out[-1])


def test_a_generator_that_prints_leaves_stdout_alone(capsys):
    # reasoning-gym's bf runs its programs, which print; eval tables and servers own stdout.
    pytest.importorskip("reasoning_gym")
    env = gymnasium.make("RAGEN/RG-bf-v0")
    env.reset(seed=3)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("env_id", ["RAGEN/TicTacToe-v0", "RAGEN/PrisonersDilemma-v0"])
def test_envs_show_of_a_game_says_what_the_draws_are_instead_of_printing_them(env_id, capsys):
    pytest.importorskip("pettingzoo")
    from ragen_bench.games.seeds import TIE_BREAK_DRAWS, seed_view

    assert TIE_BREAK_DRAWS in seed_view(env_id, 5)[0]  # what the panel hashes keeps them
    assert main(["envs", "show", env_id, "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert TIE_BREAK_DRAWS not in out and "draws" not in out.split("seed 5:")[0]
    assert out.endswith("(the panel checksum also covers this seed's random draws: opponents' tie-breaks, dice, cards)\n")


def test_eval_help_lists_every_key_with_its_default_from_the_packaged_configs(capsys):
    # A wheel has no configs/ folder: the help itself shows the keys, as the config files say them.
    from ragen_bench.data import configs_root

    with pytest.raises(SystemExit) as done:
        main(["eval", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ragen-bench eval [-h] [overrides ...]")
    assert (configs_root() / "eval.yaml").read_text(encoding="utf-8") in out
    assert (configs_root() / "chat" / "default.yaml").read_text(encoding="utf-8") in out
    assert "agent=NAME picks an agent config: baseline, hf, human, openai, optimal, random, vllm " in out
