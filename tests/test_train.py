"""The single-machine trainer (`ragen-bench train`): config, plan, a real run on the tiny model, resume.

The runs use the locally built tiny model (no download) on Bandit, with small groups and
short replies, so each takes seconds.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench import panels  # noqa: E402
from ragen_bench.starpo import algorithms  # noqa: E402
from ragen_bench.train import config as train_config  # noqa: E402
from ragen_bench.train.config import CheckpointError, TrainConfigError  # noqa: E402
from ragen_bench.train.schedule import describe, step_seeds, train_seeds  # noqa: E402
from tests.conftest import one_line_error  # noqa: E402

SMALL = [
    "model=tiny", "env=RAGEN/Bandit-v0", "rollout.groups=4", "rollout.group_size=2", "rollout.max_new_tokens=6",
    "chat.max_turns=2", "actor.mini_batch=4", "actor.micro_batch=2", "val.every=0", "test.split=null",
    "log.progress=false", "threads=1",
]


def small(preset: str = "starpo-s", *extra: str, out: Path) -> train_config.TrainConfig:
    return train_config.from_preset(preset, [*SMALL, f"out={out}", *extra])


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def without_timing(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("time/") and not k.endswith("tokens_per_s")}


# -- config and plan (no model) ----------------------------------------------------------------


@pytest.mark.parametrize("preset", algorithms.PRESETS)
def test_every_preset_composes_validates_and_dry_runs(preset):
    config = train_config.from_preset(preset)
    lines = list(describe(config))
    assert lines[0].startswith(f"preset {preset}:")
    assert any("validation on" in line for line in lines)


def test_plan_says_when_nothing_is_validated_or_tested():
    config = train_config.from_preset("starpo-s", ["val.every=0", "test.split=null"])
    plan = list(describe(config))
    assert any(line.startswith("no validation; no final test; out ") for line in plan), plan
    assert not any("None" in line for line in plan), plan


def test_ragen_sokoban_preset_has_ragens_numbers():
    c = train_config.from_preset("ragen-sokoban")
    assert (c.model, c.env, c.rollout.groups, c.rollout.group_size) == (
        "Qwen/Qwen2.5-0.5B-Instruct", "RAGEN/Sokoban-6x6-v0", 8, 16)
    assert (c.chat["max_turns"], c.chat["max_actions_per_turn"], c.chat["max_actions_per_episode"]) == (5, 5, 10)
    assert (c.rollout.max_new_tokens, c.rollout.temperature, c.val.temperature) == (400, 1.0, 0.5)
    assert (c.filter.ratio, c.filter.mode, c.kept_groups) == (0.25, "std", 2)
    assert (c.actor.clip_low, c.actor.clip_high, c.actor.dual_clip, c.actor.entropy_coef) == (0.2, 0.28, 3.0, 0.001)
    assert (c.actor.lr, c.critic.lr, c.actor.weight_decay, c.actor.grad_clip) == (1e-6, 1e-5, 0.01, 1.0)
    assert (c.advantage.estimator, c.advantage.gamma, c.advantage.lam, c.kl.coef) == ("gae", 1.0, 1.0, 0.0)
    assert (c.actor.mini_batch, c.steps, c.val.every, c.val.split) == (32, 200, 10, "test")
    assert c.actor.loss_agg == "seq-mean-token-mean"
    # RAGEN validates on the 256 test seeds 123..378.
    assert list(panels.load(c.env, "test").seeds) == list(range(123, 379))


def test_presets_differ_where_they_should():
    s, plain, ppo, grpo = (train_config.from_preset(p) for p in ("starpo-s", "starpo", "ppo", "grpo"))
    assert s.filter.ratio == 0.25 and plain.filter.ratio == ppo.filter.ratio == grpo.filter.ratio == 1.0
    assert s.actor.clip_high == 0.28 and plain.actor.clip_high == 0.2
    assert plain.kl.coef > 0 and s.kl.coef == 0
    assert grpo.advantage.estimator == "grpo" and not grpo.uses_critic and s.uses_critic
    assert ppo.actor.loss_agg == "token-mean"


@pytest.mark.parametrize(
    ("override", "names"),
    [
        ("rollout.groups=x", "rollout.groups"),
        ("rollout.groups=0", "rollout.groups"),
        ("filter.ratio=0.01", "filter.ratio"),
        ("filter.ratio=1.5", "filter.ratio"),
        ("actor.micro_batch=64", "actor.micro_batch"),
        ("actor.dual_clip=1.0", "actor.dual_clip"),
        ("advantage.estimator=td", "advantage.estimator"),
        ("env=RAGEN/Nope-v0", "env"),
        ("env=RAGEN/TicTacToe-v0", "opponent"),  # a game trains against a named opponent
        ("val.split=nope", "val.split"),
        ("rollout.temperature=0", "rollout.temperature"),
        ("actor.lr=nan", "actor.lr"),
        ("chat.max_turns=0", "chat"),
        ("+chat.nope=1", "chat"),
        ("rollout.stop_strings=['']", "rollout.stop_strings"),
        ("actor.betas=[0.9]", "actor.betas"),
        ("seed=-1", "seed"),
        ("sampling_threads=0", "sampling_threads"),
        ("sampling_threads=two", "sampling_threads"),
        ("model=", "model"),
        ("out=", "out"),
    ],
)
def test_bad_values_are_one_error_naming_the_key(override, names):
    with pytest.raises(TrainConfigError) as error:
        train_config.from_preset("starpo-s", [override])
    assert str(error.value).startswith(names), str(error.value)


def test_unknown_keys_and_presets_are_refused():
    with pytest.raises(TrainConfigError, match="foo: unknown key"):
        train_config.from_mapping({**train_config.compose("grpo"), "foo": 1})
    with pytest.raises(TrainConfigError, match="rollout.bar: unknown key"):
        raw = train_config.compose("grpo")
        raw["rollout"]["bar"] = 1
        train_config.from_mapping(raw)
    with pytest.raises(TrainConfigError, match="unknown preset"):
        train_config.from_preset("nope")


def test_cli_errors_are_one_line_exit_2(tmp_path):
    for args in (["preset=nope"], ["rollout.groups=x"], ["+foo=1"]):
        done = subprocess.run([sys.executable, "-m", "ragen_bench.cli", "train", *args, "--dry-run"],
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 2, done
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("ragen-bench train: error:"), done.stderr


def test_a_dry_run_loads_no_torch(tmp_path):
    # The plan is the quick look before a run; torch alone takes seconds to import.
    code = ("import contextlib, io, sys\n"
            "from ragen_bench.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as plan:\n"
            "    status = main(['train', 'preset=grpo', '--dry-run'])\n"
            "print(status, 'keeps 8 groups' in plan.getvalue(), 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "True", "False"]


def cli_args(out: Path, *extra: str) -> list[str]:
    """``ragen-bench train`` arguments of a one-step SMALL run into ``out``; ``extra`` replaces SMALL's keys."""
    replaced = {override.split("=", 1)[0] for override in extra}
    return ["train", *(o for o in SMALL if o.split("=", 1)[0] not in replaced), "steps=1", f"out={out}", *extra]


def test_an_empty_out_or_model_is_refused_even_by_a_dry_run(tmp_path, monkeypatch, capsys):
    from ragen_bench.cli import main

    monkeypatch.chdir(tmp_path)  # where the default out (runs/train/...) would go
    assert main([*cli_args(tmp_path / "run", "model="), "--dry-run"]) == 2
    one_line_error(capsys, "model: must name a model", "''")
    # out= is refused by the rule eval applies, word for word.
    assert main([*cli_args(tmp_path / "run")[:-1], "out=", "--dry-run"]) == 2
    train_error = one_line_error(capsys, "out must be a directory path or null, got ''")
    assert main(["eval", "env=RAGEN/Bandit-v0", "agent=random", "out="]) == 2
    assert capsys.readouterr().err.split(": error: ")[1] == train_error.split(": error: ")[1]
    assert not list(tmp_path.iterdir())


def test_a_mistyped_model_writes_nothing_and_the_corrected_command_runs(tmp_path, capsys):
    from ragen_bench.cli import main

    out = tmp_path / "run"
    assert main(cli_args(out, "model=/no/such/dir")) == 2
    one_line_error(capsys, "/no/such/dir")
    assert not out.exists()
    assert main(cli_args(out)) == 0
    assert json.loads((out / "config.json").read_text())["model"] == "tiny"
    assert (out / "checkpoints" / "latest").read_text() == "step-000001"


def test_a_checkpoint_is_on_disk_before_its_folder_is_renamed_into_place(tmp_path, monkeypatch):
    from ragen_bench import runfiles
    from ragen_bench.cli import main
    from ragen_bench.train import checkpoint

    events = []
    real_fsync_tree, real_replace = runfiles.fsync_tree, checkpoint.os.replace
    monkeypatch.setattr(runfiles, "fsync_tree", lambda path: (events.append(("fsync", Path(path).name)),
                                                              real_fsync_tree(path)))
    monkeypatch.setattr(checkpoint.os, "replace", lambda a, b: (events.append(("rename", Path(a).name)),
                                                                real_replace(a, b)))
    assert main(cli_args(tmp_path / "run")) == 0
    # (os.replace is also how every run file is written: only the checkpoint folder's events count.)
    assert [event for event in events if event[1].startswith(".step-")] == [
        ("fsync", ".step-000001.tmp"), ("rename", ".step-000001.tmp")]


@pytest.mark.parametrize("content", ['{\n  "algo": "starpo",\n  "env": \n', "", "[1, 2]"])
def test_a_corrupt_config_json_is_one_line_naming_the_file(tmp_path, capsys, content):
    from ragen_bench.cli import main

    out = tmp_path / "run"
    out.mkdir()
    (out / "config.json").write_text(content)
    assert main(cli_args(out)) == 2
    one_line_error(capsys, f"{out / 'config.json'}: corrupt", "another out=")
    assert (out / "config.json").read_text() == content and [p.name for p in out.iterdir()] == ["config.json"]


def test_a_run_written_before_a_key_existed_resumes_and_a_changed_value_is_still_refused(tmp_path):
    from ragen_bench.train import checkpoint

    out = tmp_path / "run"
    config = small(out=out)
    checkpoint.prepare_out(out, config)
    recorded = json.loads((out / "config.json").read_text())
    # As a config.json from before the DAPO keys and the rollout filter's strategies.
    del recorded["overlong_buffer"], recorded["filter"]["strategy"], recorded["actor"]["clip_high"]
    (out / "config.json").write_text(json.dumps(recorded))
    checkpoint.check_out(out, config)  # the defaults of the new keys are what the run computed
    recorded["filter"]["ratio"] = 0.5 if config.filter.ratio != 0.5 else 0.25
    (out / "config.json").write_text(json.dumps(recorded))
    with pytest.raises(checkpoint.CheckpointError, match="filter.ratio"):
        checkpoint.check_out(out, config)


def test_step_seeds_are_train_seeds_in_order_and_never_held_out():
    config = train_config.from_preset("starpo-s", ["env=RAGEN/Sokoban-6x6-v0"])
    first_three = [step_seeds(config, step) for step in range(3)]
    assert list(itertools.chain(*first_three)) == list(train_seeds(config.env, 24))
    held_out = set(panels.load(config.env, "test").obs_sha256) | set(panels.load(config.env, "val").obs_sha256)
    for seed in itertools.chain(*first_three):
        assert panels.observation_sha256(panels.initial_observation(config.env, seed)) not in held_out


def test_bandit_train_seeds_skip_held_out_seeds():
    # Every Bandit observation is one of two arm orders, so decontamination is by seed.
    held_out = set(panels.load("RAGEN/Bandit-v0", "val").seeds) | set(panels.load("RAGEN/Bandit-v0", "test").seeds)
    seeds = train_seeds("RAGEN/Bandit-v0", 300)
    assert len(set(seeds)) == 300 and not held_out & set(seeds)


# -- pure pieces of the update ---------------------------------------------------------------------


def test_minibatch_order_keeps_groups_together_and_is_a_permutation():
    from ragen_bench.train.minibatches import minibatch_order

    groups = [7, 7, 3, 3, 3, 9, 7, 9]
    order = minibatch_order(groups, seed=1).tolist()
    assert sorted(order) == list(range(8))
    runs = [groups[row] for row in order]
    # Each group id occupies one contiguous run.
    assert len([g for g, _ in itertools.groupby(runs)]) == 3
    assert minibatch_order(groups, seed=1).tolist() == order


@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_micro_batch_gradients_add_up_to_the_mini_batch_gradient(agg):
    from ragen_bench.starpo.losses import aggregate
    from ragen_bench.train.minibatches import micro_weight

    torch.manual_seed(0)
    weights = torch.randn(6, 9, requires_grad=True)
    mask = torch.rand(6, 9) > 0.4
    mask[2] = False  # a row without response tokens counts nowhere
    aggregate(weights**2, mask, agg).backward()
    whole = weights.grad.clone()
    weights.grad = None
    for rows in torch.tensor([0, 4, 2, 5, 1, 3]).split(4):
        (aggregate(weights[rows] ** 2, mask[rows], agg) * micro_weight(agg, mask[rows], mask)).backward()
    torch.testing.assert_close(weights.grad, whole)


def test_shared_prefix_forward_equals_the_plain_forward_with_gradients():
    from ragen_bench.agents.local_models import load_model
    from ragen_bench.agents.sampling import resolve_model_path
    from ragen_bench.starpo import forward as models

    model, _ = load_model(resolve_model_path("tiny"))
    torch.manual_seed(0)
    ids = torch.randint(5, model.config.vocab_size, (4, 50))
    ids[:, :30] = ids[0, :30]
    attention = torch.ones_like(ids)
    attention[1, 44:] = 0
    response = torch.zeros_like(ids, dtype=torch.bool)
    response[:, 33:] = True
    response[:, 36] = False  # an observation token between two replies
    response[1, 44:] = False
    assert models.shared_prefix_length(ids, attention) == 30

    def run(minimum: int):
        model.zero_grad()
        models.MIN_SHARED_PREFIX, saved = minimum, models.MIN_SHARED_PREFIX
        try:
            log_probs, entropy = models.token_log_probs(model, ids, attention, response, 0.7)
        finally:
            models.MIN_SHARED_PREFIX = saved
        (log_probs.sum() + entropy.sum()).backward()
        return log_probs.detach(), [p.grad.clone() for p in model.parameters()]

    shared, plain = run(16), run(10**9)
    torch.testing.assert_close(shared[0], plain[0], atol=1e-5, rtol=1e-5)
    assert (shared[0][~response] == 0).all()
    for a, b in zip(shared[1], plain[1]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)
    # Rows that are identical all the way (a batch of equal SFT records) share everything.
    ids[:] = ids[0]
    attention[:] = 1
    response[:] = response[0]
    assert models.shared_prefix_length(ids, attention) == ids.shape[1]
    shared, plain = run(16), run(10**9)
    torch.testing.assert_close(shared[0], plain[0], atol=1e-5, rtol=1e-5)
    for a, b in zip(shared[1], plain[1]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


# -- real runs on the tiny model -------------------------------------------------------------------------


def test_two_step_run_writes_metrics_checkpoints_curves_and_eval_runs(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    config = small("starpo-s", "steps=2", "val.every=1", "val.limit=3", "test.split=test", "test.limit=3",
                   "checkpoint.every=1", out=out)
    result = train(config)
    rows = metrics(out)
    assert [row["step"] for row in rows] == [1, 2]
    for row in rows:
        # StarPO-S keeps int(0.25 x 4) = 1 group of 2.
        assert row["filter/groups"] == 4 and row["filter/kept_groups"] == 1
        assert 0 <= row["rollout/success"] <= 1 and row["critic/vf_loss"] >= 0
        assert row["rollout/response_length"] <= 6
    validations = [json.loads(line) for line in (out / "validation.jsonl").read_text().splitlines()]
    assert [(v["step"], v["split"]) for v in validations] == [(0, "val"), (1, "val"), (2, "val"), (2, "test")]
    for v in validations:
        summary = json.loads((Path(v["run_dir"]) / "summary.json").read_text())
        assert summary["groups"][0]["episodes"] == 3
    assert result.test_run == out / "test" / "step-000002"
    assert (out / "curves.png").stat().st_size > 1000
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest", "step-000001", "step-000002"]
    # The checkpoint is a plain transformers directory the hf agent loads.
    from ragen_bench.agents import make_agent

    agent = make_agent("hf", model=str(result.final_checkpoint / "model"), max_new_tokens=4)
    agent.close()


def test_resume_redoes_the_same_step_three(tmp_path):
    from ragen_bench.train.trainer import train

    extra = ["advantage.estimator=grpo", "actor.ppo_epochs=2", "checkpoint.every=1"]
    straight = tmp_path / "straight"
    train(small("starpo-s", "steps=3", *extra, out=straight))
    resumed = tmp_path / "resumed"
    train(small("starpo-s", "steps=2", *extra, out=resumed))
    train(small("starpo-s", "steps=3", *extra, out=resumed))
    assert [row["step"] for row in metrics(resumed)] == [1, 2, 3]
    assert without_timing(metrics(resumed)[2]) == without_timing(metrics(straight)[2])
    # Two optimiser steps per batch: the old-log-prob pass ran and matches the sampler's.
    assert metrics(straight)[2]["rollout/log_prob_gap"] < 1e-4


def test_a_run_folder_refuses_another_config(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    train(small("grpo", "steps=1", out=out))
    with pytest.raises(CheckpointError, match="actor.lr"):
        train(small("grpo", "steps=2", "actor.lr=0.5", out=out))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="not empty"):
        train(small("grpo", "steps=1", out=tmp_path / "other"))


def test_lora_run_saves_an_adapter_that_training_continues(tmp_path):
    pytest.importorskip("peft")
    from ragen_bench.train.trainer import train

    first = train(small("grpo", "steps=1", "lora.rank=4", "lora.alpha=8", "kl.coef=0.01", "log.tensorboard=true",
                        out=tmp_path / "a"))
    assert list((tmp_path / "a" / "tensorboard").glob("events.out.tfevents.*"))
    adapter = first.final_checkpoint / "model"
    saved = json.loads((adapter / "adapter_config.json").read_text())
    assert saved["base_model_name_or_path"] == "tiny" and saved["r"] == 4
    assert not (adapter / "model.safetensors").exists()
    rows = metrics(tmp_path / "a")
    assert rows[0]["actor/kl"] == pytest.approx(0.0, abs=1e-6)  # the policy starts as its reference
    # Starting a run from the adapter trains the same adapter further, on the same base.
    # (with a critic, which starts from the adapter merged into its base)
    second = train(small("starpo-s", "steps=1", "lora.rank=4", "lora.alpha=8", f"model={adapter}", out=tmp_path / "b"))
    assert json.loads((second.final_checkpoint / "model" / "adapter_config.json").read_text())[
        "base_model_name_or_path"] == "tiny"


def test_update_lowers_the_surrogate_loss_on_a_fixed_batch(tmp_path):
    from ragen_bench.train.trainer import Trainer

    config = small("grpo", "actor.lr=0.01", "kl.coef=0", out=tmp_path / "run")
    trainer = Trainer(config, tmp_path / "run")
    batch = _rollout_batch(trainer)
    # The tiny model's rollouts all score alike (zero GRPO advantages), so the signal is a fixed random one.
    generator = torch.Generator().manual_seed(0)
    advantages = torch.randn(batch.response_mask.shape, generator=generator) * batch.response_mask
    returns = advantages
    losses = []
    for _ in range(4):
        update = trainer._update(batch, advantages, returns, None, batch.old_log_probs, None)
        losses.append(update["actor/pg_loss"])
    assert losses[-1] < losses[0] - 1e-3, losses


def test_filter_and_advantages_on_a_real_rollout_batch(tmp_path):
    from ragen_bench.starpo.filter import filter_groups
    from ragen_bench.train.batch import select_rows
    from ragen_bench.starpo.algorithms import compute_advantages
    from ragen_bench.train.trainer import Trainer

    config = small("grpo", out=tmp_path / "run")
    trainer = Trainer(config, tmp_path / "run")
    batch = _rollout_batch(trainer)
    assert len(batch.group_ids) == 8 and len(set(batch.group_ids)) == 4
    kept = filter_groups(batch.scores, batch.group_ids, ratio=0.5, mode="std")
    chosen = select_rows(batch, kept.rows)
    assert len(chosen.group_ids) == 4 and len(set(chosen.group_ids)) == 2
    assert chosen.input_ids.shape[1] == batch.input_ids.shape[1]
    advantages, _ = compute_advantages(config.advantage, chosen.rewards, None, chosen.response_mask, chosen.group_ids)
    assert (advantages[~chosen.response_mask] == 0).all()
    for group in set(chosen.group_ids):
        rows = [i for i, g in enumerate(chosen.group_ids) if g == group]
        per_row = [float(advantages[i][chosen.response_mask[i]][0]) for i in rows]
        assert sum(per_row) == pytest.approx(0.0, abs=1e-5)


def _rollout_batch(trainer):
    """One rollout of the trainer's step-0 seeds, as the training batch."""
    from ragen_bench.chat import ChatEpisode, run_lockstep
    from ragen_bench.train.batch import build_batch

    c = trainer.config
    episodes = [
        ChatEpisode(trainer.envs[g * c.rollout.group_size + j], trainer.chat, env_id=c.env, seed=seed, sample=j,
                    split="train")
        for g, seed in enumerate(step_seeds(c, 0))
        for j in range(c.rollout.group_size)
    ]
    trajectories = run_lockstep(episodes, trainer.agent)
    samples = trainer.agent.pop_samples([t.episode_key for t in trajectories])
    return build_batch(trajectories, samples, pad_id=trainer.agent.pad_id)


def test_data_sft_command_writes_records_datasets_reads(tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    from ragen_bench.cli import main

    out = tmp_path / "sft"
    assert main(["data", "sft", "RAGEN/Sokoban-6x6-v0", "--split", "train", "--out", str(out), "--limit", "6",
                 "--no-think"]) == 0
    printed = capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert printed.startswith(f"{manifest['count']} chat records (6 RAGEN/Sokoban-6x6-v0 train seeds played")
    rows = datasets.load_dataset("parquet", data_files=str(out / "sft.parquet"))["train"]
    assert len(rows) == manifest["count"] > 0
    assert all(m["content"].startswith("<answer>") for row in rows for m in row["messages"] if m["role"] == "assistant")
    assert main(["data", "sft", "RAGEN/Sokoban-6x6-v0", "--split", "test", "--out", str(tmp_path / "x")]) == 2


@pytest.mark.parametrize("content", ['{"step": ', '{"step": "one"}', "[" * 100_000])
def test_a_corrupt_checkpoint_state_is_one_line_naming_it(tmp_path, capsys, content):
    from ragen_bench.cli import main

    out = tmp_path / "run"
    assert main(cli_args(out)) == 0
    state = out / "checkpoints" / "step-000001" / "state.json"
    state.write_text(content)
    capsys.readouterr()
    assert main(cli_args(out, "steps=2")) == 2  # resumes from step 1
    err = capsys.readouterr().err  # after the model's loading bar: one error line, no traceback
    assert "Traceback" not in err and err.splitlines()[-1].startswith(f"ragen-bench train: error: {state}: corrupt")
    assert state.read_text() == content and (out / "checkpoints" / "latest").read_text() == "step-000001"
