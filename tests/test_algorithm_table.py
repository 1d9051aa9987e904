"""One entry in ragen_bench.starpo.algorithms is enough for a new estimator: the config accepts it,
--dry-run describes it, the trainer computes with it and the veRL recipe maps it (or refuses by name)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ragen_bench.integrations.verl import recipe
from ragen_bench.starpo import algorithms
from ragen_bench.train import config as train_config
from ragen_bench.train.schedule import describe


def _zeros(settings, rewards, values, mask, group_ids, episode_ids):
    return rewards * 0, rewards * 0


@pytest.fixture
def with_fake(monkeypatch):
    def add(**fields):
        entry = algorithms.Estimator(**{"name": "fake", "critic": False, "compute": _zeros, "verl": "reinforce_plus_plus",
                                        "dry_run": "made up, lambda {lam}", **fields})
        monkeypatch.setitem(algorithms.ESTIMATORS, "fake", entry)
        return entry
    return add


def test_one_entry_makes_a_new_estimator_accepted_described_and_mapped(with_fake):
    with_fake()
    config = train_config.from_preset("grpo", ["advantage.estimator=fake", "advantage.lam=0.5"])
    assert config.advantage.estimator == "fake" and not config.uses_critic
    assert any(line.startswith("advantage fake (made up, lambda 0.5), critic off") for line in describe(config))
    overrides = dict(item.split("=", 1) for item in recipe.verl_overrides(config))
    assert overrides["algorithm.adv_estimator"] == "reinforce_plus_plus" and overrides["critic.enable"] == "false"
    assert "algorithm.norm_adv_by_std_in_grpo" not in overrides  # it does not read advantage.grpo_mode


def test_a_new_estimator_with_a_critic_trains_one(with_fake):
    with_fake(critic=True, verl="gae")
    config = train_config.from_preset("grpo", ["advantage.estimator=fake"])
    assert config.uses_critic
    assert "critic.enable=true" in recipe.verl_overrides(config)


def test_the_trainer_calls_the_entrys_function(with_fake):
    torch = pytest.importorskip("torch")
    seen = []
    with_fake(compute=lambda settings, rewards, *rest: seen.append(settings.lam) or (rewards + 1, rewards))
    settings = replace(train_config.AdvantageConfig(), estimator="fake", lam=0.25)
    advantages, _ = algorithms.compute_advantages(settings, torch.zeros(2, 3), None, torch.ones(2, 3), [0, 1])
    assert seen == [0.25] and bool((advantages == 1).all())


def test_an_estimator_verl_lacks_is_refused_by_the_recipe_by_name(with_fake):
    with_fake(verl=None)
    config = train_config.from_preset("grpo", ["advantage.estimator=fake"])
    with pytest.raises(recipe.RecipeError, match=r"advantage.estimator: veRL has no estimator for 'fake'; use one "
                                                 r"of gae, grpo, bi_level_gae"):
        recipe.verl_overrides(config)


def test_without_the_entry_the_config_refuses_it():
    with pytest.raises(train_config.TrainConfigError, match=r"advantage.estimator: must be one of gae, grpo, bi_level_gae"):
        train_config.from_preset("grpo", ["advantage.estimator=fake"])


def test_every_preset_file_is_a_table_entry_and_back():
    from ragen_bench.data import configs_root

    files = {path.stem for path in (configs_root() / "train").glob("*.yaml")} - {"base"}
    assert files == set(algorithms.PRESETS)
    assert algorithms.DEFAULT_PRESET in algorithms.PRESETS


def test_every_loss_aggregation_is_one_losses_computes():
    torch = pytest.importorskip("torch")
    from ragen_bench.starpo.losses import aggregate

    loss, mask = torch.arange(6.0).reshape(2, 3), torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.bool)
    results = {name: float(aggregate(loss, mask, name)) for name in algorithms.LOSS_AGGREGATIONS}
    assert results == pytest.approx({"token-mean": 4 / 3, "seq-mean-token-sum": 2.0, "seq-mean-token-mean": 1.75})
