"""DAPO and Dr. GRPO presets, RAGEN-2's rollout filter in the trainer (dynamic sampling, skipped
empty steps), overlong reward shaping, and RAGEN-2's context modes in eval's and train's configs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.chat.context import history_window, translate
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.config import ConfigError, chat_config
from ragen_bench.train import config as train_config
from ragen_bench.train.config import TrainConfigError
from ragen_bench.train.schedule import step_seeds, train_seeds

SMALL = [
    "model=tiny", "env=RAGEN/Bandit-v0", "rollout.groups=4", "rollout.group_size=2", "rollout.max_new_tokens=6",
    "chat.max_turns=2", "actor.mini_batch=4", "actor.micro_batch=2", "val.every=0", "test.split=null",
    "log.progress=false", "threads=1", "collapse_detection.compute_freq=0",
]


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


# -- the presets, as settings -------------------------------------------------------------------


def test_dapo_and_drgrpo_differ_from_grpo_exactly_by_their_techniques():
    grpo, dapo, dr = (train_config.from_preset(p) for p in ("grpo", "dapo", "drgrpo"))
    changed = lambda c: {f"{section}.{k}": v for section in ("advantage", "filter", "actor", "kl", "overlong_buffer")  # noqa: E731
                         for k, v in dataclasses.asdict(getattr(c, section)).items()
                         if v != dataclasses.asdict(getattr(grpo, section))[k]}
    assert changed(dapo) == {
        "filter.mode": "rollout", "filter.include_zero": False, "filter.refill_rounds": 2,  # dynamic sampling
        "actor.clip_high": 0.28,  # clip-higher (clip_low stays 0.2)
        "actor.loss_agg": "token-mean",  # token-level loss
        "actor.entropy_coef": 0.0, "kl.coef": 0.0,
        "overlong_buffer.len": 32,  # soft overlong punishment (penalty_factor 1)
    }
    assert dapo.filter.spec.keeps_all is False and dapo.filter.spec.strategy == "top_p" and dapo.filter.value == 1.0
    assert changed(dr) == {"advantage.grpo_mode": "mean", "actor.loss_agg": "seq-mean-token-sum"}


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("filter.mode=nucleus", "filter.mode: must be one of std, std_rev, rollout"),
        ("filter.strategy=top_q", "filter.strategy: must be one of top_p, top_k, top_k_abs, min_p"),
        ("filter.type=biggest", "filter.type: must be one of largest, smallest"),
        ("filter.metric=entropy_std", "filter.metric: must be one of reward_variance, reward, reward_sum, length, entropy, entropy_variance"),
        ("filter.top_p_prob_mode=cubic", "filter.top_p_prob_mode: must be one of linear, softmax"),
        ("filter.value=0", "filter.value: must be a finite number > 0"),
        ("filter.selection_eps=-1", "filter.selection_eps: must be >= 0"),
        ("filter.refill_rounds=-1", "filter.refill_rounds: must be >= 0"),
        ("filter.empty_stop_steps=-1", "filter.empty_stop_steps: must be >= 0"),
        ("overlong_buffer.len=400", "overlong_buffer.len: must be in 0..rollout.max_new_tokens"),
        ("overlong_buffer.penalty_factor=-1", "overlong_buffer.penalty_factor: must be >= 0"),
    ],
)
def test_bad_filter_and_shaping_values_are_one_error_naming_the_key(override, message):
    extra = ["filter.strategy=top_k"] if override.startswith("filter.value") else []
    with pytest.raises(TrainConfigError) as error:
        train_config.from_preset("dapo", [*extra, override])
    assert str(error.value).startswith(message), str(error.value)


def test_a_top_k_fraction_over_one_names_the_key():
    with pytest.raises(TrainConfigError, match=r"^filter.value: must be in \(0, 1\] for strategy top_k"):
        train_config.from_preset("dapo", ["filter.strategy=top_k", "filter.value=2"])


def test_refill_rounds_give_each_round_its_own_seeds_and_leave_runs_without_refill_alone():
    plain = train_config.from_preset("grpo", ["rollout.groups=4"])
    refill = train_config.from_preset("dapo", ["rollout.groups=4"])  # 2 refill rounds: 3 slices a step
    seeds = list(train_seeds(plain.env, 24))
    assert [step_seeds(plain, k) for k in range(2)] == [seeds[:4], seeds[4:8]]  # as before refill existed
    rounds = [step_seeds(refill, step, r) for step in range(2) for r in range(3)]
    assert rounds == [seeds[i : i + 4] for i in range(0, 24, 4)]  # consecutive slices, never shared


# -- short CPU runs of the new presets on the tiny model -------------------------------------------


def test_drgrpo_trains_on_cpu(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "drgrpo"
    train(train_config.from_preset("drgrpo", [*SMALL, "steps=2", f"out={out}"]))
    rows = metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all("actor/pg_loss" in r and r["filter/kept_groups"] == 4 for r in rows)


@pytest.fixture
def varied_scores(monkeypatch):
    """The tiny model never answers, so every rollout scores the same; this gives the rollouts of
    even seeds a spread (sample 1 gets +1), so that half of each round's groups vary."""
    from ragen_bench.train import trainer

    real = trainer.build_batch

    def varied(trajectories, samples, **kwargs):
        batch = real(trajectories, samples, **kwargs)
        bonus = trainer.torch.tensor([float(t.sample == 1 and t.seed % 2 == 0) for t in trajectories])
        rewards = batch.rewards.clone()
        last = batch.attention_mask.sum(dim=1) - 1
        rewards[trainer.torch.arange(len(bonus)), last] += bonus
        return dataclasses.replace(batch, scores=batch.scores + bonus, rewards=rewards)

    monkeypatch.setattr(trainer, "build_batch", varied)


def test_dapo_refills_until_enough_groups_vary_and_charges_overlong_replies(tmp_path, varied_scores):
    from ragen_bench.train import trainer

    out = tmp_path / "dapo"
    config = train_config.from_preset("dapo", [*SMALL, "steps=1", "overlong_buffer.len=3", f"out={out}"])
    trainer.train(config)
    (row,) = metrics(out)
    # Round 1: seeds 10000-10003 (two even); round 2: 10004-10007 (two more): 4 groups, no third round.
    assert row["filter/rounds"] == 2 and row["filter/groups"] == 8 and row["filter/kept_groups"] == 4
    assert row["filter/chosen_in_group_std"] == pytest.approx(2 ** -0.5)  # every kept group: scores s, s + 1
    # Replies of 6 tokens with max_new_tokens 6 and a buffer of 3 pay the whole factor (1) per turn.
    assert row["reward/overlong_penalty"] < 0 and "actor/pg_loss" in row


def test_steps_whose_filter_keeps_nothing_are_skipped_and_stop_the_run(tmp_path):
    from ragen_bench.train.trainer import train

    # One rollout per group: no group varies, so a linear top_p below 1 keeps none.
    out = tmp_path / "empty"
    result = train(train_config.from_preset("starpo-s", [
        *SMALL, "rollout.group_size=1", "filter.mode=rollout", "filter.value=0.9", "filter.empty_stop_steps=2",
        "steps=5", f"out={out}"]))
    rows = metrics(out)
    assert [r["filter/empty_steps"] for r in rows] == [1, 2] and result.steps == 2
    assert not any("actor/pg_loss" in r for r in rows)


# -- context modes --------------------------------------------------------------------------------


def test_context_modes_map_onto_the_history_window():
    assert history_window("full") is None
    assert history_window("limited_multi_turn", 3) == 3
    assert history_window("limited_multi_turn", -1) is None
    assert history_window("single_turn", 1) == 1
    assert translate(["env=x", "context_window_mode=limited_multi_turn", "max_context_window=2"]) == [
        "env=x", "chat.history_window=2"]
    assert translate(["context_window_mode=full"]) == ["chat.history_window=null"]
    assert translate(["env=x"]) == ["env=x"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["context_window_mode=sliding"], "context_window_mode must be one of full, limited_multi_turn, single_turn"),
        (["context_window_mode=single_turn"], "max_context_window=-1 with context_window_mode=single_turn"),
        (["context_window_mode=single_turn", "max_context_window=3"], "use max_context_window=1"),
        (["context_window_mode=full", "max_context_window=3"], "max_context_window=3 needs context_window_mode="),
        (["context_window_mode=limited_multi_turn", "max_context_window=0"], "max_context_window must be -1"),
        (["context_window_mode=limited_multi_turn", "max_context_window=two"], "max_context_window must be -1"),
        (["max_context_window=2"], "max_context_window=2 needs context_window_mode"),
        (["context_window_mode=full", "chat.history_window=2"], "chat.history_window: give it or context_window_mode"),
    ],
)
def test_bad_context_settings_are_refused_by_eval_with_one_line(overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", *overrides])


def _prompts(overrides: list[str], turns: int = 3) -> list[list[dict]]:
    """The prompts eval's chat settings for ``overrides`` give turns 1..``turns`` of a Sokoban episode."""
    config = chat_config(compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", *overrides])["chat"])
    episode = ChatEpisode(gymnasium.make("RAGEN/Sokoban-6x6-v0"), config, env_id="RAGEN/Sokoban-6x6-v0", seed=123,
                          split="test")
    episode.reset()
    prompts = []
    for _ in range(turns):
        prompts.append(episode.messages)
        episode.step(AgentReply("<think>ok</think><answer>Left</answer>"))
    return prompts


def test_eval_prompts_under_each_context_mode():
    full = _prompts(["context_window_mode=full"])
    assert [len(p) for p in full] == [2, 4, 6]  # system, then every turn's user message and reply
    assert full == _prompts([])  # full is the default layout
    limited = _prompts(["context_window_mode=limited_multi_turn", "max_context_window=2"])
    assert [len(p) for p in limited] == [2, 4, 4]  # the current turn and the one before it
    assert "Turn 1:" not in limited[2][1]["content"] and "Turn 2:" in limited[2][1]["content"]
    assert limited[2][2:] == full[2][4:]  # the kept turns are the full conversation's, word for word
    single = _prompts(["context_window_mode=single_turn", "max_context_window=1"])
    assert [[m["role"] for m in p] for p in single] == [["system", "user"]] * 3
    assert "Turn 3:" in single[2][1]["content"] and "Turn 2:" not in single[2][1]["content"]
    assert single == _prompts(["chat.history_window=1"])  # exactly the chat layer's Markov prompt


def test_train_takes_the_same_keys():
    assert train_config.from_preset("grpo", ["context_window_mode=full"]).chat_config.history_window is None
    # Windowed modes train one row per turn: tests/test_train_context.py.
    assert train_config.from_preset("grpo", ["context_window_mode=limited_multi_turn", "max_context_window=2"]
                                    ).chat_config.history_window == 2
    with pytest.raises(TrainConfigError, match="max_context_window=2 needs context_window_mode"):
        train_config.from_preset("grpo", ["max_context_window=2"])


def test_filter_loss_scaling_shrinks_the_advantages_by_the_kept_share(tmp_path, varied_scores):
    from ragen_bench.train.trainer import train

    rows = {}
    for scaling in ("none", "linear", "sqrt"):
        out = tmp_path / scaling
        train(train_config.from_preset("starpo-s", [*SMALL, "steps=1", f"actor.filter_loss_scaling={scaling}",
                                                    f"out={out}"]))
        (rows[scaling],) = metrics(out)
    # starpo-s keeps int(0.25 x 4) = 1 of 4 groups: advantages x 1/4, or x 1/2 with sqrt.
    assert rows["none"]["filter/kept_groups"] == 1 and rows["none"]["adv/abs_mean"] > 0
    assert rows["linear"]["adv/abs_mean"] == pytest.approx(rows["none"]["adv/abs_mean"] / 4)
    assert rows["sqrt"]["adv/abs_mean"] == pytest.approx(rows["none"]["adv/abs_mean"] / 2)


def test_entropy_filter_keeps_the_group_of_highest_mean_token_entropy(tmp_path, monkeypatch):
    """filter.metric=entropy scores each group by its trajectories' mean token entropy of the sampling
    policy: the trainer's value equals a plain full forward's, and top_k_abs 1 keeps the highest group."""
    from ragen_bench.train import trainer

    seen = {}
    real_entropies, real_filter = trainer.Trainer._episode_entropies, trainer.filter_rollouts

    def checked_entropies(self, batch):
        found = real_entropies(self, batch)
        with trainer.torch.no_grad():  # the whole distribution at every position, no shared-prefix pass
            logits = self.policy(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
        log_p = trainer.torch.log_softmax(logits[:, :-1] / self.config.rollout.temperature, dim=-1)
        per_token = -(log_p.exp() * log_p).sum(-1)
        mask = batch.response_mask[:, 1:].float()
        assert found.tolist() == pytest.approx(((per_token * mask).sum(1) / mask.sum(1)).tolist(), rel=1e-4)
        return found

    def recorded_filter(scores, group_ids, spec, **kwargs):
        seen.update(kwargs, group_ids=list(group_ids), result=real_filter(scores, group_ids, spec, **kwargs))
        return seen["result"]

    monkeypatch.setattr(trainer.Trainer, "_episode_entropies", checked_entropies)
    monkeypatch.setattr(trainer, "filter_rollouts", recorded_filter)
    out = tmp_path / "entropy"
    trainer.train(train_config.from_preset("starpo-s", [
        *SMALL, "steps=1", "filter.mode=rollout", "filter.metric=entropy", "filter.strategy=top_k_abs",
        "filter.value=1", f"out={out}"]))
    (row,) = metrics(out)
    entropies, groups = seen["entropies"], seen["group_ids"]
    means = {g: float(entropies[[i for i, h in enumerate(groups) if h == g]].mean()) for g in dict.fromkeys(groups)}
    assert len(set(means.values())) == len(means)  # no tie: the expected group is unambiguous
    kept_rows = seen["result"].rows.tolist()
    assert row["filter/kept_groups"] == 1 and "actor/pg_loss" in row
    assert {groups[i] for i in kept_rows} == {max(means, key=means.get)} and len(kept_rows) == 2
