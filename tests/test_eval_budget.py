"""Eval plays each id under its declared chat budget (issue 34), and every reader of a run knows it.

* ``budget=env`` (the default) resolves, at compose, to each single-agent id's declared budget less
  the ``chat.*`` keys given on the command line (they win) and less what the chat section already
  says; ``budget=none`` plays the chat section alone; a recorded mapping is checked.
* the manifest records the resolved budget (nothing when it is empty, as runs before budgets),
  resume, replay (``render``, ``leaderboard verify``) and ``compare`` read it back;
* a suite's ids each play their own budget; its template hash then differs from any one id's;
* the optimal agent's wins under ``budgeted_settings`` (``tests/test_chat_budgets.py``) are eval's:
  the chat settings eval composes for every id are exactly those.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragen_bench import registry
from ragen_bench.chat import ChatConfig
from ragen_bench.chat.config import budgeted_settings
from ragen_bench.cli import main
from ragen_bench.eval import report, rundir, run_eval
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.config import ConfigError, load, resolve_budget
from ragen_bench.leaderboard.build import budget_of, ranking_rows
from ragen_bench.render import checked_record, run_settings

SUDOKU = "RAGEN/Sudoku-4x4-v0"  # declares max_turns=6: every 4x4 win takes 6 placements, one per turn
BANDIT = "RAGEN/Bandit-v0"  # declares RAGEN's 1 turn, 1 action per turn, 1 per episode
BANDIT_BUDGET = {"max_turns": 1, "max_actions_per_turn": 1, "max_actions_per_episode": 1}


def composed(*overrides: str) -> dict:
    return compose_config("eval", list(overrides))


def test_eval_plays_an_id_under_its_declared_budget_unless_a_chat_key_is_given():
    assert composed(f"env={SUDOKU}")["budget"] == {SUDOKU: {"max_turns": 6}}
    run = load(composed(f"env={SUDOKU}"))
    assert run.chat.max_turns == 5 and run.chat_for(SUDOKU).max_turns == 6
    assert run.template_hash == run.chat_for(SUDOKU).template_hash() != run.chat.template_hash()
    # A key the user gives wins, even when it says what the chat default says.
    assert composed(f"env={SUDOKU}", "chat.max_turns=5")["budget"] == {}
    given = composed(f"env={BANDIT}", "chat.max_turns=3")["budget"]
    assert given == {BANDIT: {"max_actions_per_turn": 1, "max_actions_per_episode": 1}}
    # budget=none: the chat section alone; an id whose budget is the defaults has nothing to resolve.
    assert composed(f"env={SUDOKU}", "budget=none")["budget"] == "none"
    assert load(composed(f"env={SUDOKU}", "budget=none")).chats == {}
    assert composed("env=RAGEN/Sokoban-6x6-v0")["budget"] == {}


def test_the_python_api_keeps_chat_settings_that_differ_from_the_defaults():
    # Without the command line, a chat key counts as given when it differs from ChatConfig's default.
    mapping = {**composed(f"env={BANDIT}"), "budget": "env"}
    mapping["chat"] = {**mapping["chat"], "max_turns": 3}
    run = load(mapping)
    assert run.budget == {BANDIT: {"max_actions_per_turn": 1, "max_actions_per_episode": 1}}
    assert (run.chat_for(BANDIT).max_turns, run.chat_for(BANDIT).max_actions_per_turn) == (3, 1)


def test_eval_composes_for_every_id_the_settings_its_budget_was_measured_with():
    """tests/test_chat_budgets.py proves the optimal agent wins under budgeted_settings(id); this is eval's chat."""
    defaults = ChatConfig().to_dict()
    for env_id in registry.ENV_IDS:
        budget = resolve_budget("env", [(env_id, "test")], defaults, given=())
        assert {**defaults, **budget.get(env_id, {})} == {**defaults, **budgeted_settings(env_id)}, env_id


def test_a_suite_plays_each_id_under_its_own_budget(tmp_path: Path):
    out = tmp_path / "suite"
    run_eval(composed("suite=ragen-bandit-generalization-v0", "agent=optimal", "limit=2", f"out={out}",
                      "progress=false"))
    manifest = json.loads((out / rundir.MANIFEST).read_text())
    # Every id of the suite plays RAGEN's bandit budget (the held-out ids take Bandit-v0's).
    assert manifest["config"]["budget"] == {env_id: BANDIT_BUDGET for env_id in (
        "RAGEN/Bandit-v0", "RAGEN/BanditTest-v0", "RAGEN/Bandit-HeldOut-v0", "RAGEN/Bandit-Rev-v0")}
    records = [json.loads(line) for line in (out / rundir.EPISODES).read_text().splitlines()]
    run = load({**manifest["config"], "out": None, "progress": False})
    assert {record["template_hash"] for record in records} == {run.chat_for(BANDIT).template_hash()}
    assert all(len(record["turns"]) == 1 for record in records)
    assert "Each turn you may take one action; the whole episode allows 1 action." in records[0]["messages"][1]["content"]
    # Replay reads the budget back from the manifest: render checks every episode against it.
    settings = run_settings(out)
    for number in range(len(records)):
        checked_record(out, number, settings)
    assert report.run_budgets(manifest) == {env_id: "1/1/1" for env_id in manifest["config"]["budget"]}


def test_ids_with_different_budgets_give_a_suite_its_own_hash():
    run = load(composed("suite=ragen-generalization-v0"))
    assert set(run.budget) == {"RAGEN/Bandit-v0", "RAGEN/BanditTest-v0", "RAGEN/Bandit-HeldOut-v0", "RAGEN/Bandit-Rev-v0"}
    hashes = {run.chat_for(env_id).template_hash() for env_id, _ in run.targets}
    assert len(hashes) == 2 and run.template_hash not in hashes
    # Without budgets, every id shares the chat section's hash, as runs recorded before budgets do.
    plain = load(composed("suite=ragen-generalization-v0", "budget=none"))
    assert plain.template_hash == plain.chat.template_hash() == run.chat.template_hash()


def test_a_run_recorded_before_budgets_loads_as_played(tmp_path: Path):
    old = {key: value for key, value in composed(f"env={BANDIT}").items() if key != "budget"}
    run = load(old)
    assert run.budget == {} and run.chat_for(BANDIT) == run.chat and "budget" not in run.identity
    # Resuming under a budget is another run: the identity names the key.
    out = tmp_path / "run"
    run_eval(composed(f"env={BANDIT}", "agent=random", "limit=1", "budget=none", f"out={out}", "progress=false"))
    with pytest.raises(rundir.RunDirError, match="budget"):
        run_eval(composed(f"env={BANDIT}", "agent=random", "limit=1", f"out={out}", "progress=false"))


def test_compare_shows_each_runs_budget_and_names_envs_whose_budgets_differ(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    for name, extra in (("budgeted", []), ("short", ["chat.max_turns=5"])):
        assert main(["eval", f"env={SUDOKU}", "agent=optimal", "limit=2", f"out={tmp_path / name}", "progress=false",
                     *extra]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "budgeted"), str(tmp_path / "short")]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines()[1:3]]
    assert [(row[3], row[5]) for row in rows] == [("6/5/10", "1.000"), ("5/5/10", "0.000")]
    assert f"note: {SUDOKU}: runs played under different chat budgets ({tmp_path / 'budgeted'}: 6/5/10; " \
           f"{tmp_path / 'short'}: 5/5/10)" in out


def test_a_recorded_budget_is_checked():
    base = composed(f"env={SUDOKU}")
    for bad in (True, 2.0, "6", None):
        with pytest.raises(ConfigError, match=rf"budget\.{SUDOKU}\.max_turns must be an integer >= 1, got"):
            load({**base, "budget": {SUDOKU: {"max_turns": bad}}})
    with pytest.raises(ConfigError, match="budget.RAGEN/Sudoku-4x4-v0 must be a mapping of chat settings"):
        load({**base, "budget": {SUDOKU: 6}})


def test_the_leaderboard_ranks_only_entries_of_one_budget_together():
    def row(entry: str, success: float, budget: str) -> dict:
        return {"suite": "env X", "entry": entry, "env": "RAGEN/Sokoban-6x6-v0", "success": success,
                "success_low": success, "success_high": success, "progress": success, "progress_low": success,
                "progress_high": success, "seeds": 4, "panel_seeds": 4, "samples": 1,
                "model": "m", "recipe": "r", "budget": budget}

    ranked = ranking_rows([row("a", 0.5, "5/5/10"), row("b", 0.9, "1/1/1"), row("c", 0.2, "5/5/10")])
    assert [(r["entry"], r["budget"], r["rank"]) for r in ranked] == [
        ("a", "5/5/10", 1), ("c", "5/5/10", 2), ("b", "1/1/1", 1)]
    # Over a suite: one label when every env shares it, "each id's" when each env had its id's own.
    envs = [{"env": SUDOKU, "budget": "6/5/10"}, {"env": BANDIT, "budget": "1/1/1"}]
    assert budget_of(envs) == "each id's"
    # The same addition to every id's own budget (BALROG's history window) is said once.
    assert budget_of([{"env": SUDOKU, "budget": "6/5/10 h16"}, {"env": BANDIT, "budget": "1/1/1 h16"}]) == "each id's h16"
    # NetHack declares h16 itself: the run's window is still the one addition all its envs share.
    assert budget_of([{"env": "RAGEN/NetHack-v0", "budget": "1000/1/1000 h16"}, {"env": BANDIT, "budget": "1/1/1 h16"}]) \
        == "each id's h16"
    assert budget_of([{"env": SUDOKU, "budget": "6/5/10 h16"}, {"env": BANDIT, "budget": "1/1/1"}]) == \
        "Bandit 1/1/1, Sudoku-4x4 6/5/10 h16"
    assert budget_of([{"env": SUDOKU, "budget": "6/5/100"}, {"env": BANDIT, "budget": "1/1/10"}]) == \
        "Bandit 1/1/10, Sudoku-4x4 6/5/100"
    assert budget_of([{"env": SUDOKU, "budget": "5/5/10"}, {"env": BANDIT, "budget": "1/1/1"}]) == \
        "Bandit 1/1/1, Sudoku-4x4 5/5/10"
    assert budget_of([{"env": SUDOKU, "budget": "5/5/10"}, {"env": "RAGEN/Sokoban-6x6-v0", "budget": "5/5/10"}]) == "5/5/10"


def test_one_action_a_reply_reads_as_one_action_and_changes_no_other_prompts_hash():
    one = ChatConfig(max_turns=1, max_actions_per_turn=1, max_actions_per_episode=1)
    from ragen_bench.chat.episode import first_prompt_intro

    intro = first_prompt_intro(one, "Pull.", (), ("Dragon", "Phoenix"))
    assert "up to 1 actions" not in intro and "allows 1 actions" not in intro
    assert "Each turn you may take one action; the whole episode allows 1 action." in intro
    assert "allows 7 actions" in first_prompt_intro(ChatConfig(max_actions_per_turn=1, max_actions_per_episode=7),
                                                     "Pull.", (), ("Dragon", "Phoenix"))
    # The one-action text joins the hash only where it is shown: a committed run's hash is today's.
    committed = json.loads(Path(__file__).parents[1].joinpath(
        "leaderboard/submissions/random/manifest.json").read_text())
    assert load({**committed["config"], "out": None, "progress": False}).template_hash == committed["template_hash"]
