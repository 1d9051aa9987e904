"""The recipe: train config -> veRL overrides that compose with veRL's own ``ppo_trainer`` config.

Expected numbers are RAGEN's (configs/train/ragen-sokoban.yaml, RAGEN's config/base.yaml) in
veRL's units, written out here rather than recomputed by the code under test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from ragen_bench import panels
from ragen_bench.integrations import verl as integration
from ragen_bench.integrations.verl import job, recipe
from ragen_bench.train.config import TrainConfigError
from tests_verl.conftest import train_config

REPO = Path(__file__).resolve().parent.parent
BASELINE = REPO / "baselines" / "starpo-verl" / "verl-overrides.txt"


def composed(preset="starpo-s", overrides=(), extra=()):
    config = train_config(preset, overrides)
    return config, job.compose_verl(recipe.verl_overrides(config, extra))


@pytest.fixture(scope="module")
def sokoban():
    return composed("ragen-sokoban")[1]


def test_ragen_sokoban_maps_to_ragens_numbers_in_verls_units(sokoban):
    actor, rollout = sokoban.actor_rollout_ref.actor, sokoban.actor_rollout_ref.rollout
    assert rollout.n == 16 and sokoban.data.train_batch_size == 2  # 8 groups of 16, the filter keeps 2
    assert actor.ppo_mini_batch_size == 2 and actor.ppo_micro_batch_size_per_gpu == 1  # 32 trajectories, 1 per GPU
    assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.clip_ratio_c) == (0.2, 0.28, 3.0)
    assert actor.loss_agg_mode == "seq-mean-token-mean" and actor.entropy_coeff == 0.001
    assert actor.optim.lr == 1e-6 and sokoban.critic.optim.lr == 1e-5 and sokoban.critic.cliprange_value == 0.5
    assert not actor.use_kl_loss and not sokoban.algorithm.use_kl_in_reward and actor.kl_loss_coef == 0
    assert sokoban.algorithm.adv_estimator == "gae" and sokoban.algorithm.gamma == sokoban.algorithm.lam == 1.0
    assert sokoban.critic.enable is True
    sampler = sokoban.trainer.v1.sampler
    assert Path(sampler.custom_sampler.path).name == "sampler.py" and sampler.custom_sampler.name == "StarPOSFilterSampler"
    assert dict(sampler.sampler_kwargs) == {  # StarPO-S's std filter: the top_k preset of the rollout filter
        "groups": 8, "refill_rounds": 0, "empty_stop_steps": 5, "collapse_compute_freq": 10, "strategy": "top_k",
        "value": 0.25,
        "filter_type": "largest", "metric": "reward_variance", "include_zero": True, "top_p_prob_mode": "linear",
        "selection_eps": 0.01,
    }
    # The collapse diagnostics are on by default (every 10th step), which our trainer computes.
    assert sokoban.trainer.v1.trainer_mode == "ragen_sync"
    assert dict(sokoban.trainer.v1.ragen_sync.collapse_detection) == {
        "compute_freq": 10, "first_turn_enabled": True, "multi_turn_enabled": False, "num_samples": 64,
        "micro_batch_size": 16, "std_eps": 1e-3, "ema_decay": 0.9}
    assert sokoban.trainer.v1.ragen_sync.think is True and sokoban.trainer.v1.ragen_sync.seed == 0
    assert rollout.response_length == 5 * 400 + 4 * recipe.BRIDGE_TOKENS and rollout.prompt_length == 1024
    assert rollout.max_model_len == rollout.prompt_length + rollout.response_length
    assert rollout.val_kwargs.temperature == 0.5 and rollout.val_kwargs.do_sample is True
    assert sokoban.trainer.total_training_steps == 200 and sokoban.trainer.test_freq == 10
    assert rollout.agent.default_agent_loop == "ragen_chat_episode"
    assert sokoban.actor_rollout_ref.model.path == "Qwen/Qwen2.5-0.5B-Instruct" == sokoban.critic.model.path


@pytest.mark.parametrize(
    "preset, overrides, expected",
    [
        ("grpo", [], {"algorithm.adv_estimator": "grpo", "critic.enable": False, "algorithm.norm_adv_by_std_in_grpo": True,
                      "actor_rollout_ref.actor.use_kl_loss": True, "actor_rollout_ref.actor.kl_loss_coef": 0.001,
                      "actor_rollout_ref.actor.kl_loss_type": "low_var_kl", "trainer.v1.sampler.custom_sampler.path": None}),
        ("grpo", ["advantage.grpo_mode=mean"], {"algorithm.norm_adv_by_std_in_grpo": False}),
        ("grpo", ["advantage.grpo_mode=rloo"], {"algorithm.adv_estimator": "rloo"}),
        ("ppo", [], {"actor_rollout_ref.actor.clip_ratio_c": recipe.NO_DUAL_CLIP,
                     "actor_rollout_ref.actor.loss_agg_mode": "token-mean", "actor_rollout_ref.actor.clip_ratio_high": 0.2}),
        ("starpo", ["kl.placement=reward", "kl.estimator=k1"],
         {"algorithm.use_kl_in_reward": True, "algorithm.kl_ctrl.kl_coef": 0.001, "algorithm.kl_penalty": "kl",
          "actor_rollout_ref.actor.use_kl_loss": False}),
        ("starpo-s", ["advantage.estimator=bi_level_gae", "advantage.high_level_gamma=0.9"],
         {"trainer.v1.trainer_mode": "ragen_sync", "trainer.v1.ragen_sync.high_level_gamma": 0.9,
          "trainer.v1.ragen_sync.bi_level": True, "trainer.v1.ragen_sync.filter_loss_scaling": "none",
          "ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": "ragen_bench.integrations.verl.trainer",
          "critic.enable": True}),
        ("starpo-s", ["lora.rank=8", "log.tensorboard=true"],
         {"actor_rollout_ref.model.lora_rank": 8, "trainer.logger": ["console", "tensorboard"]}),
        # Dr. GRPO: no std normalisation, token losses summed per sequence.
        ("drgrpo", [], {"algorithm.adv_estimator": "grpo", "algorithm.norm_adv_by_std_in_grpo": False,
                        "actor_rollout_ref.actor.loss_agg_mode": "seq-mean-token-sum", "critic.enable": False}),
        # DAPO: clip-higher, token-mean, no KL; dynamic sampling in the sampler, every group slot trained.
        ("dapo", [], {"actor_rollout_ref.actor.clip_ratio_high": 0.28, "actor_rollout_ref.actor.loss_agg_mode": "token-mean",
                      "actor_rollout_ref.actor.use_kl_loss": False, "data.train_batch_size": 8,
                      "trainer.v1.sampler.sampler_kwargs.include_zero": False,
                      "trainer.v1.sampler.sampler_kwargs.refill_rounds": 2,
                      "trainer.v1.sampler.sampler_kwargs.strategy": "top_p",
                      "trainer.v1.sampler.custom_sampler.name": "StarPOSFilterSampler"}),
        # RAGEN-2's filter: a varying number of the 8 groups (veRL pads to mini-batches), so 8 per step.
        ("starpo-s", ["filter.mode=rollout", "filter.strategy=min_p", "filter.value=0.5", "filter.metric=length",
                      "filter.type=smallest"],
         {"data.train_batch_size": 8, "trainer.v1.sampler.sampler_kwargs.strategy": "min_p",
          "trainer.v1.sampler.sampler_kwargs.value": 0.5, "trainer.v1.sampler.sampler_kwargs.metric": "length",
          "trainer.v1.sampler.sampler_kwargs.filter_type": "smallest"}),
        # RAGEN-2's default (top_p 1, zeros kept) keeps every group: veRL's own sampling.
        ("starpo-s", ["filter.mode=rollout"], {"trainer.v1.sampler.custom_sampler.path": None}),
        # No diagnostics and no advantage hook: veRL's own trainer.
        ("grpo", ["collapse_detection.compute_freq=0"], {"trainer.v1.trainer_mode": "sync",
                                                         "trainer.v1.ragen_sync": None}),
        ("grpo", ["collapse_detection.first_turn_enabled=false"], {"trainer.v1.trainer_mode": "sync"}),
        ("grpo", ["collapse_detection.first_turn_enabled=false", "collapse_detection.multi_turn_enabled=true",
                  "collapse_detection.num_samples=null", "chat.think=false", "seed=3"],
         {"trainer.v1.trainer_mode": "ragen_sync", "trainer.v1.ragen_sync.collapse_detection.num_samples": None,
          "trainer.v1.ragen_sync.collapse_detection.multi_turn_enabled": True, "trainer.v1.ragen_sync.think": False,
          "trainer.v1.ragen_sync.seed": 3, "trainer.v1.ragen_sync.bi_level": False}),
    ],
)
def test_presets_and_options_compose_with_verls_config(preset, overrides, expected):
    _, verl_config = composed(preset, ["model=tiny", *overrides])
    for key, value in expected.items():
        assert OmegaConf.select(verl_config, key) == value, key


@pytest.mark.parametrize("mode, prompt, response", [
    ([], 1024, 5 * 400 + 4 * recipe.BRIDGE_TOKENS),  # the full history: one row per episode
    (["context_window_mode=single_turn", "max_context_window=1"], 1024, 401),  # one row per turn
    (["context_window_mode=limited_multi_turn", "max_context_window=3"], 1024 + 2 * (400 + recipe.BRIDGE_TOKENS), 401),
    (["context_window_mode=limited_multi_turn", "max_context_window=-1"], 1024, 5 * 400 + 4 * recipe.BRIDGE_TOKENS),
    (["context_window_mode=limited_multi_turn", "max_context_window=9"], 1024 + 4 * (400 + recipe.BRIDGE_TOKENS), 401),
])
def test_a_context_window_trains_one_row_per_turn_with_room_for_its_prompt(mode, prompt, response, tmp_path):
    config, verl_config = composed("ragen-sokoban", [*mode, f"out={tmp_path}"])
    rollout = verl_config.actor_rollout_ref.rollout
    assert (rollout.prompt_length, rollout.response_length) == (prompt, response)
    assert rollout.max_model_len == prompt + response
    loops = OmegaConf.load(job.write_run_folder(config) / "agent_loops.yaml")
    assert loops[0].chat.history_window == config.chat["history_window"]


def test_extra_overrides_replace_the_recipes_and_add_new_keys():
    overrides = recipe.verl_overrides(train_config("starpo-s"), ["trainer.n_gpus_per_node=4", "+trainer.note=x"])
    assert [o for o in overrides if o.startswith("trainer.n_gpus_per_node=")] == ["trainer.n_gpus_per_node=4"]
    assert "+trainer.note=x" in overrides


def test_dry_run_runs_verls_own_checks_on_a_local_model():
    report = job.dry_run(train_config("starpo-s", ["model=tiny"]))
    command, checked = report.splitlines()[:3:2]
    assert command.startswith("python -m verl.trainer.main_ppo ") and checked == "# veRL's own config checks passed"
    assert "ppo_mini_batch_size: 2" in report  # the resolved config follows


@pytest.mark.parametrize(
    "overrides, extra, message",
    [
        (["actor.mini_batch=24"], [], r"actor.mini_batch \(24\) must be a multiple of rollout.group_size \(16\)"),
        (["rollout.groups=4"], [], r"keeps 16 trajectories per step .* fewer than actor.mini_batch \(32\)"),
        (["rollout.groups=12"], [], r"the 48 kept trajectories do not split into mini-batches of 32"),
        ([], ["trainer.n_gpus_per_node=16"], r"multiple of actor.micro_batch x GPUs \(4 x 16\)"),
        ([], ["trainer.n_gpus_per_node=2", "actor_rollout_ref.rollout.tensor_model_parallel_size=4"],
         r"tensor_model_parallel_size \(4\) must divide the 2 GPUs"),
        ([], ["actor_rollout_ref.rollout.max_model_len=100"], r"max_model_len \(100\) is below prompt \+ response"),
        (["algo=sft"], [], r"algo: the veRL backend trains algo=starpo only"),
        (["advantage.score_placement=turn"], [], r"advantage.score_placement: .* use 'last'"),
        (["advantage.whiten=false"], [], r"advantage.whiten: veRL's GAE always whitens"),
        (["critic.coef=0.5"], [], r"critic.coef: "),
        (["lora.dropout=0.1"], [], r"lora.dropout: "),
        (["chat.history_window=2", "overlong_buffer.len=8"], [], r"overlong_buffer.len: with chat.history_window"),
        (["filter.mode=rollout", "filter.metric=entropy_variance"], [],
         r"filter.metric: the sampler filters before veRL computes any entropy"),
        ([], ["trainer.no_such_key=1"], r"veRL's config refused an override: .*no_such_key"),
        ([], ["oops"], r"veRL override 'oops': expected key=value"),
        ([], ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"], r"veRL's config check failed"),
    ],
)
def test_configs_the_recipe_cannot_run_are_one_clear_error(overrides, extra, message):
    with pytest.raises(recipe.RecipeError, match=message):
        job.dry_run(train_config("starpo-s", ["model=tiny", *overrides]), extra)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["filter.mode=rollout", "filter.strategy=top_k", "filter.value=2"],
         r"^filter.value: must be in \(0, 1\] for strategy top_k"),
        (["advantage.estimator=reinforce"], r"^advantage.estimator: must be one of gae, grpo, bi_level_gae"),
        (["kl.coef=0.1", "kl.placement=both"], r"^kl.placement: must be loss or reward"),
    ],
)
def test_choices_the_train_config_refuses_never_reach_the_recipe(overrides, message):
    # The recipe takes a checked TrainConfig: its choices are the train config's to refuse.
    with pytest.raises(TrainConfigError, match=message):
        train_config("starpo-s", ["model=tiny", *overrides])


def test_main_prints_the_dry_run_or_one_error_line(capsys):
    assert integration.main(train_config("grpo", ["model=tiny"]), dry_run=True) == 0
    assert "algorithm:\n" in capsys.readouterr().out
    assert integration.main(train_config("starpo-s", ["actor.mini_batch=24"]), dry_run=True) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "actor.mini_batch (24)" in err and "Traceback" not in err


def test_main_without_verl_prints_the_install_hint(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "verl", None)  # `import verl` raises ImportError
    assert integration.main(train_config("starpo-s"), dry_run=True) == 2
    assert "scripts/setup_verl_venv.sh" in capsys.readouterr().err


def test_launch_writes_the_run_folder_and_runs_main_ppo(tmp_path, monkeypatch, tiny_dir):
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda argv, **kw: calls.append(argv) or subprocess.CompletedProcess(argv, 7))
    config = train_config("starpo-s", ["env=RAGEN/Sokoban-6x6-v0", "model=tiny", "steps=3", "val.limit=5",
                                       f"out={tmp_path}"])
    assert job.launch(config) == 7
    overrides = recipe.verl_overrides(config)
    assert calls == [[sys.executable, "-m", "verl.trainer.main_ppo", *overrides]]
    assert (tmp_path / "command.sh").read_text().splitlines()[1] == job.command_line(overrides)

    import pandas
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    train = pandas.read_parquet(tmp_path / "train.parquet")
    seeds = [row["seed"] for row in train["extra_info"]]
    assert len(seeds) == 3 * 8  # steps x groups rolled out per step
    held_out = set(panels.load("RAGEN/Sokoban-6x6-v0", "test").obs_sha256) | set(
        panels.load("RAGEN/Sokoban-6x6-v0", "val").obs_sha256)
    assert not {panels.observation_sha256(panels.initial_observation("RAGEN/Sokoban-6x6-v0", s)) for s in seeds} & held_out
    val = pandas.read_parquet(tmp_path / "val.parquet")
    assert [row["seed"] for row in val["extra_info"]] == list(panels.load("RAGEN/Sokoban-6x6-v0", "val").seeds[:5])

    # veRL's own dataset reads the file and hands the agent loop what it needs.
    verl_config = job.compose_verl(overrides)
    dataset = RLHFDataset(data_files=[str(tmp_path / "train.parquet")],
                          tokenizer=AutoTokenizer.from_pretrained(tiny_dir, local_files_only=True),
                          config=verl_config.data)
    item = dataset[0]
    assert item["extra_info"]["seed"] == seeds[0] and item["agent_name"] == "ragen_chat_episode"
    assert item["raw_prompt"][0]["role"] == "system"
    loops = OmegaConf.load(tmp_path / "agent_loops.yaml")
    assert loops[0].name == "ragen_chat_episode" and loops[0].max_new_tokens == 128


def baseline_text() -> str:
    """The ragen-sokoban overrides with this checkout's absolute paths written relative to it."""
    overrides = recipe.verl_overrides(train_config("ragen-sokoban"))
    return "\n".join(o.replace(str(REPO) + "/", "") for o in overrides) + "\n"


def test_the_committed_baseline_overrides_are_what_the_recipe_builds():
    assert BASELINE.read_text(encoding="utf-8") == baseline_text(), (
        "baselines/starpo-verl/verl-overrides.txt is stale: regenerate it with "
        "`.venv-verl/bin/python -c 'from tests_verl.test_recipe import baseline_text; print(baseline_text(), end=\"\")'`"
    )
