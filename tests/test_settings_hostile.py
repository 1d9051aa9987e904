"""Hostile settings: every trainer setting acts or is refused, counts agree, refusals write nothing.

* a filter key is checked in every ``filter.mode``, and an override of one the run's filter
  does not read (``filter.strategy`` under ``mode=std``) is one line naming it;
* a count of groups must be a whole number (``top_k_abs`` 2.5 is refused, never cut to 2);
* the number of groups the filter keeps is one rule (``starpo.filter_spec.groups_to_keep``), so
  the config, its ``--dry-run`` plan, the veRL recipe and the filter itself say the same;
* ``FilterConfig`` takes the rollout filter's defaults from ``FilterSpec`` and ``base.yaml``
  says the same;
* a refused ``eval``, ``train`` or ``play`` leaves its ``out`` folder as it found it
  (absent, a run of another config, or foreign files), so the command its error suggests runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

import pytest

torch = pytest.importorskip("torch")

from ragen_bench import runfiles  # noqa: E402
from ragen_bench.cli import main  # noqa: E402
from ragen_bench.integrations.verl.recipe import fixed_kept_groups  # noqa: E402
from ragen_bench.starpo.filter import filter_rollouts  # noqa: E402
from ragen_bench.starpo.filter_spec import FilterSpec, groups_to_keep  # noqa: E402
from ragen_bench.train import config as train_config  # noqa: E402
from ragen_bench.train.filter_config import FILTER_SPEC_KEYS, FilterConfig  # noqa: E402
from ragen_bench.train.config import RolloutConfig, TrainConfig, TrainConfigError  # noqa: E402
from ragen_bench.train.schedule import describe  # noqa: E402
from tests.conftest import REPO_ROOT, one_line_error  # noqa: E402

# -- filter keys: refused where they would not act ----------------------------------------------

# (preset, overrides, the key refused, where it would act)
UNREAD = [
    ("grpo", ["filter.strategy=top_k", "filter.value=0.5"], "filter.strategy", "filter.mode=rollout"),
    ("starpo-s", ["filter.value=0.5"], "filter.value", "filter.mode=rollout"),
    ("starpo-s", ["filter.type=smallest"], "filter.type", "filter.mode=rollout"),
    ("starpo-s", ["filter.metric=length"], "filter.metric", "filter.mode=rollout"),
    ("starpo-s", ["filter.include_zero=false"], "filter.include_zero", "filter.mode=rollout"),
    ("starpo-s", ["filter.mode=std_rev", "filter.top_p_prob_mode=softmax"], "filter.top_p_prob_mode",
     "filter.mode=rollout"),
    ("dapo", ["filter.ratio=0.5"], "filter.ratio", "filter.mode=std or std_rev"),
    ("starpo-s", ["filter.mode=rollout", "filter.ratio=0.5"], "filter.ratio", "filter.mode=std or std_rev"),
    ("dapo", ["filter.strategy=top_k", "filter.value=0.5", "filter.selection_eps=0.1"], "filter.selection_eps",
     "filter.strategy=top_p and filter.top_p_prob_mode=linear"),
    ("dapo", ["filter.top_p_prob_mode=softmax", "filter.selection_eps=0.1"], "filter.selection_eps",
     "filter.top_p_prob_mode=linear"),
    ("dapo", ["filter.strategy=min_p", "filter.value=0.5", "filter.top_p_prob_mode=softmax"],
     "filter.top_p_prob_mode", "filter.mode=rollout with filter.strategy=top_p"),
]


@pytest.mark.parametrize(("preset", "overrides", "key", "where"), UNREAD)
def test_an_override_the_filter_does_not_read_is_refused_naming_it(preset, overrides, key, where):
    with pytest.raises(TrainConfigError) as error:
        train_config.from_preset(preset, overrides)
    message = str(error.value)
    assert message.startswith(f"{key}: only applies to ") and where in message and "\n" not in message, message


# Overrides that act: the refusal above must not catch them.
ACTING = [
    ("grpo", ["filter.mode=rollout", "filter.strategy=top_k", "filter.value=0.5"], 4),
    ("starpo-s", ["filter.ratio=0.5"], 4),
    ("starpo-s", ["filter.mode=std_rev", "filter.ratio=0.5"], 4),
    ("dapo", ["filter.strategy=top_k_abs", "filter.value=3"], 3),
    ("dapo", ["filter.strategy=top_p", "filter.value=0.5", "filter.top_p_prob_mode=softmax"], 8),
    ("dapo", ["filter.value=0.9", "filter.selection_eps=0.1"], 8),
    ("starpo-s", ["filter.strategy=top_p"], 2),  # the preset's own value: nothing changes
]


@pytest.mark.parametrize(("preset", "overrides", "kept"), ACTING)
def test_overrides_that_act_are_taken(preset, overrides, kept):
    assert train_config.from_preset(preset, overrides).kept_groups == kept


BAD_VALUES = [
    ("filter.strategy=nope", "filter.strategy: must be one of top_p, top_k, top_k_abs, min_p"),
    ("filter.metric=nope", "filter.metric: must be one of reward_variance"),
    ("filter.type=nope", "filter.type: must be one of largest, smallest"),
    ("filter.top_p_prob_mode=nope", "filter.top_p_prob_mode: must be one of linear, softmax"),
    ("filter.value=0", "filter.value: must be a finite number > 0"),
    ("filter.value=nan", "filter.value: expected a finite number"),
    ("filter.selection_eps=-1", "filter.selection_eps: must be >= 0"),
    ("filter.ratio=-5", r"filter.ratio: must be in (0, 1]"),
    ("filter.ratio=1.5", r"filter.ratio: must be in (0, 1]"),
    ("filter.ratio=nan", "filter.ratio: expected a finite number"),
    ("filter.refill_rounds=-1", "filter.refill_rounds: must be >= 0"),
    ("filter.empty_stop_steps=-1", "filter.empty_stop_steps: must be >= 0"),
]


@pytest.mark.parametrize("mode", ["std", "std_rev", "rollout"])
@pytest.mark.parametrize(("override", "message"), BAD_VALUES)
def test_a_bad_filter_value_is_refused_in_every_mode(mode, override, message):
    with pytest.raises(TrainConfigError) as error:
        train_config.from_preset("starpo-s", [f"filter.mode={mode}", override])
    assert str(error.value).startswith(message), str(error.value)


def test_dapos_negative_ratio_is_refused():
    with pytest.raises(TrainConfigError, match=r"^filter\.ratio: must be in \(0, 1\], got -5"):
        train_config.from_preset("dapo", ["filter.ratio=-5"])


@pytest.mark.parametrize("value", ["2.5", "0.5", "1.0001"])
def test_a_count_of_groups_must_be_a_whole_number(value):
    with pytest.raises(TrainConfigError, match=rf"^filter\.value: .*whole number.*top_k_abs, got {value}"):
        train_config.from_preset("dapo", ["filter.strategy=top_k_abs", f"filter.value={value}"])
    assert train_config.from_preset("dapo", ["filter.strategy=top_k_abs", "filter.value=2.0"]).kept_groups == 2


# -- one rule for the kept groups ------------------------------------------------------------------

# (filter settings, groups, kept): hand-computed; 0.29 x 100 and 0.57 x 100 are 28.999... and 56.999...
# in floating point, where int() gives one group less.
COUNTS = [
    ({"ratio": 0.29}, 100, 29),
    ({"ratio": 0.29, "mode": "std_rev"}, 100, 29),
    ({"ratio": 0.57}, 100, 57),
    ({"ratio": 0.7}, 10, 7),
    ({"ratio": 0.25}, 8, 2),
    ({"ratio": 1.0}, 8, 8),
    ({"mode": "rollout", "strategy": "top_k", "value": 0.29}, 100, 29),
    ({"mode": "rollout", "strategy": "top_k", "value": 0.05}, 8, 1),  # at least one
    ({"mode": "rollout", "strategy": "top_k_abs", "value": 3.0}, 8, 3),
    ({"mode": "rollout", "strategy": "top_k_abs", "value": 20.0}, 8, 8),
]


def distinct_spreads(groups: int) -> tuple[torch.Tensor, list[int]]:
    """Two rollouts per group, every group's spread different and non-zero, so every count is met."""
    scores = torch.tensor([[0.0, float(g + 1)] for g in range(groups)]).flatten()
    return scores, [g for g in range(groups) for _ in range(2)]


@pytest.mark.parametrize(("settings", "groups", "kept"), COUNTS)
def test_config_plan_recipe_and_filter_count_the_same_groups(settings, groups, kept):
    config = TrainConfig(rollout=RolloutConfig(groups=groups), filter=FilterConfig(**settings))
    assert config.kept_groups == groups_to_keep(groups, config.filter.spec) == kept
    scores, ids = distinct_spreads(groups)
    assert filter_rollouts(scores, ids, config.filter.spec).groups.numel() == kept
    plan = next(line for line in describe(config) if line.startswith("per step:"))
    assert re.search(rf"keeps (at most )?{kept} groups = {kept * 16} trajectories", plan), plan
    assert fixed_kept_groups(config) == (None if config.filter.mode == "rollout" else kept)


def test_the_dry_run_says_29_groups_for_ratio_029_of_100(capsys):
    assert main(["train", "filter.ratio=0.29", "rollout.groups=100", "--dry-run"]) == 0
    assert "filter std 0.29 keeps 29 groups = 464 trajectories" in capsys.readouterr().out


# -- one source for the filter's defaults ---------------------------------------------------------


def test_filter_config_and_filter_spec_agree_on_fields_types_and_defaults():
    spec_fields = {f.name: f for f in dataclasses.fields(FilterSpec)}
    assert sorted(FILTER_SPEC_KEYS.values()) == sorted(spec_fields)  # every FilterSpec field has its key
    config_fields = {f.name: f for f in dataclasses.fields(FilterConfig)}
    config_hints, spec_hints = get_type_hints(FilterConfig), get_type_hints(FilterSpec)
    for key, name in FILTER_SPEC_KEYS.items():
        assert config_fields[key].default == spec_fields[name].default, key
        assert config_hints[key] == spec_hints[name], key
    assert FilterConfig(mode="rollout").spec == FilterSpec()


def test_base_yaml_says_the_dataclass_defaults():
    assert train_config.compose("starpo-s")["filter"] == dataclasses.asdict(FilterConfig())


# -- a refused command writes nothing ----------------------------------------------------------------

BANDIT = "RAGEN/Bandit-v0"
TRAIN_SMALL = ["model=tiny", f"env={BANDIT}", "rollout.groups=4", "rollout.group_size=2", "rollout.max_new_tokens=4",
               "chat.max_turns=1", "actor.mini_batch=4", "actor.micro_batch=2", "val.every=0", "test.split=null",
               "log.progress=false", "threads=1", "steps=1"]


def eval_argv(out: Path, *extra: str) -> list[str]:
    return ["eval", f"env={BANDIT}", "limit=2", "progress=false", f"out={out}", *extra]


def train_argv(out: Path, *extra: str) -> list[str]:
    return ["train", *TRAIN_SMALL, f"out={out}", *extra]


# (command, names in its one-line error); every refusal of eval, train and play found by hand.
REFUSALS = {
    "eval agent=human at 64 at once": (lambda out: eval_argv(out, "agent=human"), ["lockstep_episodes=1"]),
    "eval human as a game's opponent": (lambda out: ["eval", "env=RAGEN/TicTacToe-v0", "agent=random",
                                                     "opponent={name:human}", "limit=2", f"out={out}"],
                                        ["lockstep_episodes=1", "'human'"]),
    "eval bad setting": (lambda out: eval_argv(out, "samples=0"), ["samples"]),
    "eval unknown agent setting": (lambda out: eval_argv(out, "+agent.bogus=1"), ["bogus"]),
    "eval bad env_kwargs": (lambda out: eval_argv(out, "+env_kwargs.bogus=1"), ["env_kwargs"]),
    "eval game opponent for an env": (lambda out: eval_argv(out, "+opponent=random"), ["opponent"]),
    "train unread filter key": (lambda out: train_argv(out, "filter.strategy=top_k"), ["filter.strategy"]),
    "train unread filter key, dry run": (lambda out: [*train_argv(out, "filter.value=0.5"), "--dry-run"],
                                         ["filter.value"]),
    "train fractional count": (lambda out: train_argv(out, "filter.mode=rollout", "filter.strategy=top_k_abs",
                                                      "filter.value=2.5"), ["filter.value"]),
    "train ratio keeping nothing": (lambda out: train_argv(out, "filter.ratio=0.1"), ["filter.ratio"]),
    "train missing model": (lambda out: train_argv(out, "model=/no/such/model"), ["/no/such/model"]),
    "train veRL overrides without veRL": (lambda out: [*train_argv(out), "--", "trainer.x=1"], ["backend=verl"]),
    "train a game without an opponent": (lambda out: train_argv(out, "env=RAGEN/TicTacToe-v0"), ["opponent"]),
    "play seed outside the panel": (lambda out: ["play", BANDIT, "--seed", "99999", "--out", str(out)], ["--seed"]),
    "play seed and limit": (lambda out: ["play", BANDIT, "--seed", "123", "--limit", "2", "--out", str(out)],
                            ["--limit"]),
    "play unknown split": (lambda out: ["play", BANDIT, "--split", "nosuch", "--out", str(out)], ["nosuch"]),
    "play opponent for an env": (lambda out: ["play", BANDIT, "--opponent", "random", "--out", str(out)],
                                 ["opponent"]),
}


def files_under(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too) and its bytes; folders as entries of their own."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_a_refused_command_writes_nothing(name, tmp_path, capsys, monkeypatch):
    argv, names = REFUSALS[name]
    monkeypatch.chdir(tmp_path)  # where a default out (runs/...) would go
    assert main(argv(tmp_path / "run")) == 2
    one_line_error(capsys, *names)
    assert files_under(tmp_path) == {}


def another_eval_run(out: Path) -> None:
    assert main(eval_argv(out, "agent=random", "samples=1")) == 0


def another_train_run(out: Path) -> None:
    out.mkdir()
    runfiles.write_json_atomic(out / "config.json", train_config.from_preset("grpo", TRAIN_SMALL).to_dict())


def foreign_files(out: Path) -> None:
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")


# (what out= holds, the command refused there, names in its one-line error)
OCCUPIED = {
    "eval human over another run": (another_eval_run, lambda out: eval_argv(out, "agent=human"), ["run"]),
    "eval over another run": (another_eval_run, lambda out: eval_argv(out, "agent=random", "samples=2"), ["run"]),
    "play over an eval run": (another_eval_run, lambda out: ["play", BANDIT, "--limit", "2", "--out", str(out)],
                              ["run"]),
    "train over another run": (another_train_run, lambda out: train_argv(out), ["run", "config"]),
    "train unread key over a run": (another_train_run, lambda out: train_argv(out, "filter.strategy=top_k"),
                                    ["filter.strategy"]),
    "eval over foreign files": (foreign_files, lambda out: eval_argv(out, "agent=random"), ["notes.txt"]),
    "eval human over foreign files": (foreign_files, lambda out: eval_argv(out, "agent=human"), ["notes.txt"]),
    "train over foreign files": (foreign_files, lambda out: train_argv(out), ["not empty"]),
    "play over foreign files": (foreign_files, lambda out: ["play", BANDIT, "--out", str(out)], ["notes.txt"]),
}


@pytest.mark.parametrize("name", list(OCCUPIED))
def test_a_refused_command_leaves_its_out_folder_as_it_was(name, tmp_path, capsys, monkeypatch):
    occupy, argv, names = OCCUPIED[name]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    occupy(out)
    capsys.readouterr()
    before = files_under(tmp_path)
    assert main(argv(out)) == 2
    one_line_error(capsys, *names)
    assert files_under(tmp_path) == before


def test_the_command_the_human_agents_refusal_suggests_then_runs(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(eval_argv(out, "agent=human")) == 2
    assert "give lockstep_episodes=1" in capsys.readouterr().err
    # The person's input ends at once (no terminal): the run stops cleanly, recorded with the fixed setting.
    command = [sys.executable, "-m", "ragen_bench.cli", *eval_argv(out, "agent=human", "lockstep_episodes=1")]
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=REPO_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["lockstep_episodes"] == 1 and manifest["complete"] is False
