"""Our veRL trainer's advantage hooks (bi-level GAE, filter_loss_scaling) in veRL's V1 advantage step:
veRL's own ``_compute_advantage`` runs, on batches read from and written to an in-memory
TransferQueue, and the advantages it writes back are ours."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
import transfer_queue
from omegaconf import OmegaConf
from tensordict import NonTensorStack, TensorDict
from transfer_queue import KVBatchMeta
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.v1 import get_trainer_cls, trainer_base

from ragen_bench.integrations.verl import job, recipe
from ragen_bench.integrations.verl.sampler import METRIC_PREFIX
from ragen_bench.integrations.verl.trainer import StarPOTrainer, kept_share_scale
from ragen_bench.starpo.advantages import compute_bi_level_gae
from tests_verl.conftest import train_config

torch.set_num_threads(1)
# Two replies in row 0 (an observation gap between them), one in row 1, right padding.
MASKS = [[1, 1, 0, 0, 1, 1, 1], [1, 1, 1, 0]]
REWARDS = [[0, 0, 0, 0, 0, 0, 2.0], [0, 0, 0.5, 0]]
HIGH_LEVEL_GAMMA = 0.9


def nested(rows, dtype):
    return torch.nested.nested_tensor([torch.tensor(row, dtype=dtype) for row in rows], layout=torch.jagged)


BI_LEVEL = {"bi_level": True, "high_level_gamma": HIGH_LEVEL_GAMMA, "filter_loss_scaling": "none"}


def run_step(monkeypatch, trainer_cls, values, *, settings=BI_LEVEL, metrics=None):
    """veRL's ``_compute_advantage`` of ``trainer_cls`` (our trainer's ``settings``; the step's sampler
    ``metrics``) on the batch above; the advantages and returns it writes back (padded)."""
    stored = TensorDict(
        {
            "response_mask": nested(MASKS, torch.int64),
            "rm_scores": nested(REWARDS, torch.float32),
            "values": nested(values, torch.float32),
            "uid": NonTensorStack("a", "b"),
        },
        batch_size=[2],
    )
    written = {}
    monkeypatch.setattr(transfer_queue, "kv_batch_get", lambda keys, partition_id, select_fields: stored)
    monkeypatch.setattr(transfer_queue, "kv_batch_put", lambda keys, partition_id, fields: written.update(fields))
    trainer = object.__new__(trainer_cls)
    trainer.config = OmegaConf.create(
        {
            "algorithm": {"use_kl_in_reward": False, "adv_estimator": "gae", "gamma": 1.0, "lam": 1.0,
                          "norm_adv_by_std_in_grpo": True, "rollout_correction": None},
            "actor_rollout_ref": {"rollout": {"n": 2}},
            "trainer": {"v1": {recipe.TRAINER_MODE: dict(settings)}},
        }
    )
    trainer._compute_advantage(KVBatchMeta(partition_id="train", keys=["a_0_0", "b_0_0"], tags=[{}, {}]),
                               dict(metrics or {}))
    return written["advantages"].to_padded_tensor(padding=0.0), written["returns"].to_padded_tensor(padding=0.0)


def padded(rows):
    width = max(map(len, rows))
    return torch.tensor([row + [0] * (width - len(row)) for row in rows], dtype=torch.float32)


@pytest.fixture
def values():
    gen = torch.Generator().manual_seed(3)
    return [torch.randn(len(row), generator=gen).tolist() for row in MASKS]


def test_the_trainer_writes_bi_level_advantages_back(monkeypatch, values):
    advantages, returns = run_step(monkeypatch, StarPOTrainer, values)
    mask = padded(MASKS).bool()
    expected, expected_returns = compute_bi_level_gae(
        padded(REWARDS), padded(values), mask, gamma=1.0, lam=1.0, high_level_gamma=HIGH_LEVEL_GAMMA
    )
    torch.testing.assert_close(advantages[mask], expected[mask])
    torch.testing.assert_close(returns[mask], expected_returns[mask])


def test_the_hook_changes_only_the_estimator(monkeypatch, values):
    """veRL's plain sync trainer on the same batch gives veRL's token GAE; ours differs (two turns, gamma_h < 1)."""
    plain, _ = run_step(monkeypatch, get_trainer_cls("sync"), values)
    mask = padded(MASKS).bool()
    gae, _ = core_algos.compute_gae_advantage_return(padded(REWARDS), padded(values), mask.float(), 1.0, 1.0)
    torch.testing.assert_close(plain[mask], gae[mask])
    ours, _ = run_step(monkeypatch, StarPOTrainer, values)
    assert not torch.allclose(ours[mask], plain[mask])
    # Afterwards veRL's own dispatch is back in place for every other trainer.
    assert trainer_base.compute_advantage_for_multi_trajectories.__module__ == "verl.trainer.ppo.v1.utils"


def test_the_trainer_is_registered_and_behaves_as_veRLs_sync_mode():
    assert get_trainer_cls(recipe.TRAINER_MODE) is StarPOTrainer
    trainer = object.__new__(StarPOTrainer)
    trainer.trainer_mode = recipe.TRAINER_MODE  # what veRL's __init__ assigns
    assert trainer.trainer_mode == "sync"


def test_a_failing_step_restores_veRLs_dispatch(monkeypatch, values):
    monkeypatch.setattr(
        "ragen_bench.integrations.verl.bi_level.compute_bi_level_gae",
        lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")),
    )
    with pytest.raises(RuntimeError, match="boom"):
        run_step(monkeypatch, StarPOTrainer, values)
    assert trainer_base.compute_advantage_for_multi_trajectories.__module__ == "verl.trainer.ppo.v1.utils"


def test_the_module_the_recipe_names_registers_the_trainer_on_import_verl():
    """How the trainer reaches veRL's TaskRunner: VERL_USE_EXTERNAL_MODULES, read by `import verl` (fresh process)."""
    config = train_config("starpo-s", ["advantage.estimator=bi_level_gae"])
    verl_config = job.compose_verl(recipe.verl_overrides(config))
    module = verl_config.ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES
    code = "import verl\nfrom verl.trainer.ppo.v1 import get_trainer_cls\nprint(get_trainer_cls('ragen_sync').__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "VERL_USE_EXTERNAL_MODULES": module})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "StarPOTrainer"


# -- filter_loss_scaling ------------------------------------------------------------------------------

# The sampler kept 1 of 4 groups this step (its logged metrics, as veRL hands them to the advantage step).
KEPT_ONE_OF_FOUR = {METRIC_PREFIX + "groups": 4.0, METRIC_PREFIX + "kept_groups": 1.0}


@pytest.mark.parametrize(("scaling", "factor"), [("none", 1.0), ("linear", 0.25), ("sqrt", 0.5)])
def test_filter_loss_scaling_multiplies_veRLs_advantages_by_the_kept_share(monkeypatch, values, scaling, factor):
    plain, plain_returns = run_step(monkeypatch, get_trainer_cls("sync"), values, metrics=KEPT_ONE_OF_FOUR)
    settings = {"bi_level": False, "filter_loss_scaling": scaling}
    ours, returns = run_step(monkeypatch, StarPOTrainer, values, settings=settings, metrics=KEPT_ONE_OF_FOUR)
    mask = padded(MASKS).bool()
    torch.testing.assert_close(ours[mask], factor * plain[mask])
    torch.testing.assert_close(returns[mask], plain_returns[mask])  # the critic's targets are not scaled


def test_filter_loss_scaling_composes_with_bi_level_gae(monkeypatch, values):
    bi_level, _ = run_step(monkeypatch, StarPOTrainer, values)
    scaled, _ = run_step(monkeypatch, StarPOTrainer, values, settings={**BI_LEVEL, "filter_loss_scaling": "linear"},
                         metrics=KEPT_ONE_OF_FOUR)
    mask = padded(MASKS).bool()
    torch.testing.assert_close(scaled[mask], 0.25 * bi_level[mask])


def test_a_step_without_the_filter_sampler_is_not_scaled():
    # veRL's own sampling (a filter that keeps every group) logs no kept share: factor 1.
    assert kept_share_scale({"filter_loss_scaling": "linear"}, {}) == 1.0
    assert kept_share_scale({"filter_loss_scaling": "sqrt"}, KEPT_ONE_OF_FOUR) == 0.5


def test_the_recipe_selects_the_trainer_for_filter_loss_scaling():
    overrides = recipe.verl_overrides(train_config("starpo-s", ["model=tiny", "actor.filter_loss_scaling=sqrt"]))
    assert f"trainer.v1.trainer_mode={recipe.TRAINER_MODE}" in overrides
    assert f"+trainer.v1.{recipe.TRAINER_MODE}.filter_loss_scaling=sqrt" in overrides
    assert f"+trainer.v1.{recipe.TRAINER_MODE}.bi_level=false" in overrides
    plain = recipe.verl_overrides(train_config("starpo-s", ["model=tiny", "collapse_detection.compute_freq=0"]))
    assert not any(item.startswith("trainer.v1.trainer_mode=") for item in plain)  # veRL's own trainer
