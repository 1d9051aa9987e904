"""RAGEN-2's rollout filter strategies (top_p linear / softmax, top_k, top_k_abs, min_p) over
each metric: hand-computed selections, then parity with RAGEN-2's own filter on random batches.

The parity test reads ``ragen/trainer/rollout_filter.py`` from a RAGEN-2 checkout named by
``RAGEN2_CHECKOUT`` (``tests/benchmarks/peer_checkout.py``) and skips, saying how to get one,
without it.  That file imports ``DataProto`` from veRL only for its type hints and the batch
it filters; veRL is not in this venv, so a stand-in ``verl`` module (no contents) is present
while the file loads, and the test hands it a minimal batch (a dict of tensors that masks rows).
"""

from __future__ import annotations

import math
import sys
import types

import pytest

torch = pytest.importorskip("torch")

from ragen_bench.starpo.filter import filter_metrics, filter_rollouts, select_groups, trajectory_entropies  # noqa: E402
from ragen_bench.starpo.filter_spec import FilterSpec, preset  # noqa: E402

torch.set_num_threads(1)

# Five groups' selection scores; their sum is 10.
S = torch.tensor([4.0, 0.0, 1.0, 3.0, 2.0], dtype=torch.float64)


def kept(scores, **spec):
    return select_groups(scores, FilterSpec(**spec)).tolist()


def test_top_k_keeps_a_fraction_of_all_groups_best_first():
    assert kept(S, strategy="top_k", value=0.4) == [0, 3]  # floor(0.4 x 5) = 2
    assert kept(S, strategy="top_k", value=0.4, filter_type="smallest") == [1, 2]
    # Without the zero group the two smallest are 1 and 2; the fraction still counts all 5 groups.
    assert kept(S, strategy="top_k", value=0.4, filter_type="smallest", include_zero=False) == [2, 4]
    assert kept(S, strategy="top_k", value=0.1) == [0]  # floor(0.5) = 0 -> at least one group


def test_top_k_abs_keeps_a_count():
    assert kept(S, strategy="top_k_abs", value=3) == [0, 3, 4]
    assert kept(S, strategy="top_k_abs", value=9, include_zero=False) == [0, 3, 4, 2]  # only 4 candidates


def test_top_p_linear_adds_the_best_scores_up_to_value_times_total_minus_eps():
    # 0.7 x 10 - 0.01 = 6.99: 4 + 3 = 7 reaches it.
    assert kept(S, strategy="top_p", value=0.7) == [0, 3]
    # 0.75 x 10 - 0.01 = 7.49: 4 + 3 + 2 = 9.
    assert kept(S, strategy="top_p", value=0.75) == [0, 3, 4]
    # eps = 1 lowers the bar to 6.5: still 4 + 3; eps = 3.6 to 3.9: 4 alone.
    assert kept(S, strategy="top_p", value=0.75, selection_eps=3.6) == [0]


def test_top_p_linear_keeps_nothing_when_no_group_varies_or_a_zero_blocks_the_way():
    # All spreads 0: the threshold is -eps, reached before any group is added (a step to skip).
    assert kept(torch.zeros(4, dtype=torch.float64), strategy="top_p", value=0.9) == []
    # Smallest first: the zero group comes first and a score <= 0 stops the sum short of 2.49.
    scores = torch.tensor([0.0, 2.0, 3.0], dtype=torch.float64)
    assert kept(scores, strategy="top_p", value=0.5, filter_type="smallest") == []
    # Without it: 2 < 2.49, 2 + 3 = 5 reaches it.
    assert kept(scores, strategy="top_p", value=0.5, filter_type="smallest", include_zero=False) == [1, 2]


def test_top_p_softmax_is_the_nucleus_of_the_scores_softmax():
    scores = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64)  # softmax [0.25, 0.75]
    assert kept(scores, strategy="top_p", value=0.7, top_p_prob_mode="softmax") == [1]  # 0.75 >= 0.7
    assert kept(scores, strategy="top_p", value=0.8, top_p_prob_mode="softmax") == [1, 0]
    # Smallest: the softmax of -scores, [0.75, 0.25].
    assert kept(scores, strategy="top_p", value=0.7, top_p_prob_mode="softmax", filter_type="smallest") == [0]


def test_top_p_of_one_keeps_every_candidate():
    for mode in ("linear", "softmax"):
        assert sorted(kept(S, strategy="top_p", value=1.0, top_p_prob_mode=mode)) == [0, 1, 2, 3, 4]
        assert sorted(kept(S, strategy="top_p", value=1.0, top_p_prob_mode=mode, include_zero=False)) == [0, 2, 3, 4]
    assert FilterSpec().keeps_all and not FilterSpec(include_zero=False).keeps_all


def test_min_p_keeps_the_groups_within_a_factor_of_the_best():
    assert kept(S, strategy="min_p", value=0.5) == [0, 3, 4]  # >= 4 x 0.5
    # Smallest among the non-zero: min 1, keep <= 1 / 0.4 = 2.5.
    assert kept(S, strategy="min_p", value=0.4, filter_type="smallest", include_zero=False) == [2, 4]
    # A score exactly at 1 / 0.5 is in: RAGEN-2's 1 / (0.5 + 1e-10) is 2.0 in its float32.
    assert kept(S, strategy="min_p", value=0.5, filter_type="smallest", include_zero=False) == [2, 4]
    # With the zero group the smallest is 0 and only scores <= 0 survive.
    assert kept(S, strategy="min_p", value=0.5, filter_type="smallest") == [1]


def test_ties_go_to_the_earlier_group():
    tied = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    assert kept(tied, strategy="top_k", value=0.4) == [0, 1]
    assert kept(tied, strategy="top_k", value=0.4, filter_type="smallest") == [3, 4]
    assert kept(tied, strategy="top_k_abs", value=1, filter_type="smallest", include_zero=False) == [0]


# Three seeds x 2 rollouts: scores (0, 2), (1, 1), (-1, 0); response lengths (10, 30), (5, 5), (40, 60);
# mean token entropies (1, 3), (0.5, 0.5), (2, 2.5).
SCORES = torch.tensor([0.0, 2.0, 1.0, 1.0, -1.0, 0.0])
SEEDS = [7, 7, 8, 8, 9, 9]
LENGTHS = torch.tensor([10, 30, 5, 5, 40, 60])
ENTROPIES = torch.tensor([1.0, 3.0, 0.5, 0.5, 2.0, 2.5])


@pytest.mark.parametrize(
    ("metric", "group_scores", "best"),
    [
        ("reward_variance", [math.sqrt(2), 0.0, math.sqrt(0.5)], 7),  # the unbiased std (RAGEN-2's name)
        ("reward", [1.0, 1.0, -0.5], 7),  # mean; the tie goes to the earlier seed
        ("reward_sum", [2.0, 2.0, -1.0], 7),
        ("length", [20.0, 5.0, 50.0], 9),  # mean response tokens
        ("entropy", [2.0, 0.5, 2.25], 9),  # mean of the trajectories' mean token entropies
        ("entropy_variance", [math.sqrt(2), 0.0, math.sqrt(0.125)], 7),  # their unbiased std
    ],
)
def test_each_metric_scores_the_groups_by_hand(metric, group_scores, best):
    result = filter_rollouts(SCORES, SEEDS, FilterSpec(strategy="top_k_abs", value=1, metric=metric), lengths=LENGTHS,
                             entropies=ENTROPIES)
    assert result.scores.tolist() == pytest.approx(group_scores)
    assert [SEEDS[i] for i in result.rows.tolist()] == [best, best]


def test_include_zero_drops_groups_whose_score_is_zero_under_the_metric():
    # DAPO's dynamic sampling: no group whose rollouts all scored the same.
    result = filter_rollouts(SCORES, SEEDS, FilterSpec(include_zero=False))
    assert result.rows.tolist() == [0, 1, 4, 5]
    # Under the mean, "zero" is a group whose mean is 0: none here.
    assert filter_rollouts(SCORES, SEEDS, FilterSpec(metric="reward", include_zero=False)).rows.tolist() == list(range(6))


def test_an_empty_selection_logs_zero_means():
    result = filter_rollouts(torch.ones(4), [0, 0, 1, 1], FilterSpec(value=0.9))
    assert result.rows.tolist() == [] and filter_metrics(result)["kept_groups"] == 0
    assert filter_metrics(result)["chosen_in_group_std"] == 0.0


def test_std_presets_are_top_k_of_the_spread():
    assert preset("std", 0.25) == FilterSpec(strategy="top_k", value=0.25, filter_type="largest")
    assert preset("std_rev", 0.5).filter_type == "smallest"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"strategy": "top_q"}, "strategy must be one of top_p, top_k, top_k_abs, min_p"),
        ({"filter_type": "biggest"}, "filter_type must be one of largest, smallest"),
        ({"metric": "entropy_std"}, "metric must be one of"),
        ({"top_p_prob_mode": "cubic"}, "top_p_prob_mode must be one of linear, softmax"),
        ({"value": 0.0}, "value must be a finite number > 0"),
        ({"value": float("nan")}, "value must be a finite number > 0"),
        ({"strategy": "top_k", "value": 2.0}, r"value must be in \(0, 1\] for strategy top_k"),
        ({"strategy": "min_p", "value": 1.5}, r"value must be in \(0, 1\] for strategy min_p"),
        ({"strategy": "top_k_abs", "value": 0.5}, r"a whole number >= 1\) for strategy top_k_abs, got 0.5"),
        ({"strategy": "top_k_abs", "value": 2.5}, r"a whole number >= 1\) for strategy top_k_abs, got 2.5"),
        ({"selection_eps": -0.1}, "selection_eps must be >= 0"),
    ],
)
def test_bad_specs_are_refused_naming_the_setting(spec, message):
    with pytest.raises(ValueError, match=message):
        FilterSpec(**spec)


def test_length_needs_lengths():
    with pytest.raises(ValueError, match="needs the trajectories' response lengths"):
        filter_rollouts(SCORES, SEEDS, FilterSpec(metric="length"))


@pytest.mark.parametrize("metric", ["entropy", "entropy_variance"])
def test_entropy_metrics_need_entropies(metric):
    with pytest.raises(ValueError, match=f"metric '{metric}' needs the trajectories' mean token entropies"):
        filter_rollouts(SCORES, SEEDS, FilterSpec(metric=metric), lengths=LENGTHS)


def test_trajectory_entropy_is_the_mean_over_response_tokens_only():
    per_token = torch.tensor([[9.0, 1.0, 2.0, 9.0], [9.0, 9.0, 9.0, 9.0], [0.0, 4.0, 0.0, 5.0]])
    mask = torch.tensor([[0, 1, 1, 0], [0, 0, 0, 0], [0, 1, 0, 1]], dtype=torch.bool)
    # (1 + 2) / 2; a row without response tokens averages to 0 (RAGEN-2's count clamped at 1); (4 + 5) / 2.
    assert trajectory_entropies(per_token, mask).tolist() == [1.5, 0.0, 4.5]


# -- parity with RAGEN-2's filter -------------------------------------------------------------

# Every file importing ragen.trainer.rollout_filter runs (ragen/trainer has no __init__.py).
RAGEN2_FILTER_BLOBS = {"ragen/trainer/rollout_filter.py": "d18cd611a58b16ff18393855cd9aabb342d595c9"}


@pytest.fixture(scope="module")
def ragen2_filter():
    from tests.benchmarks.peer_checkout import RAGEN2, load

    stand_in = "verl" not in sys.modules
    if stand_in:
        verl = types.ModuleType("verl")
        verl.DataProto = object  # only named in hints and in `from verl import DataProto`
        sys.modules["verl"] = verl
    try:
        return load(RAGEN2, "ragen.trainer.rollout_filter", RAGEN2_FILTER_BLOBS)
    finally:
        if stand_in:
            del sys.modules["verl"]


class _Rows(dict):
    """The part of a tensordict RAGEN-2's filter uses: tensors by key, rows by a boolean mask."""

    def __getitem__(self, key):
        if isinstance(key, torch.Tensor):
            return _Rows({name: value[key] for name, value in self.items()})
        return super().__getitem__(key)


def _ragen2_kept(module, spec: FilterSpec, scores: torch.Tensor, lengths: torch.Tensor, groups: int, size: int,
                 token_entropies: torch.Tensor):
    batch = types.SimpleNamespace(non_tensor_batch=None, batch=_Rows({
        # Token-level scores: the trajectory's score on its last token.
        "original_rm_scores": torch.nn.functional.pad(scores.float().unsqueeze(1), (3, 0)),
        "response_mask": response_mask(lengths),
        # veRL's per-token entropies, as its compute_log_prob would have put them in the batch.
        "entropys": token_entropies.float(),
    }))

    def compute_log_prob(_batch):  # unused: the batch already holds its entropys
        raise AssertionError("RAGEN-2's entropy filter recomputed the entropies")

    ragen_filter = module.build_rollout_filter(
        value=spec.value, filter_type=spec.filter_type, num_groups=groups, group_size=size, metric=spec.metric,
        include_zero=spec.include_zero, strategy=spec.strategy, top_p_prob_mode=spec.top_p_prob_mode,
        selection_eps=spec.selection_eps, compute_log_prob=compute_log_prob,
    )
    _, metrics = ragen_filter.filter(batch)
    if spec.metric in CHOSEN_MEAN:  # these filters log no group ids; the kept count and means pin them down
        return None, metrics
    return metrics["rollout/_selected_group_ids"].tolist(), metrics


def response_mask(lengths: torch.Tensor) -> torch.Tensor:
    return torch.arange(80).expand(len(lengths), 80) < lengths.unsqueeze(1)


# RAGEN-2's logged mean of the kept groups' selection scores, for its filters that log no group ids.
CHOSEN_MEAN = {"length": "rollout/chosen_in_group_length_mean", "entropy": "rollout/chosen_in_group_entropy_mean",
               "entropy_variance": "rollout/chosen_in_group_entropy_std"}


SPECS = [
    FilterSpec(strategy=strategy, value=value, filter_type=kind, metric=metric, include_zero=zero, top_p_prob_mode=mode)
    for strategy, value, mode in [("top_p", 0.9, "linear"), ("top_p", 0.6, "softmax"), ("top_p", 0.9, "softmax"),
                                  ("top_p", 1.0, "linear"), ("top_k", 0.25, "linear"), ("top_k_abs", 3, "linear"),
                                  ("min_p", 0.5, "linear")]
    for kind in ("largest", "smallest")
    for metric in ("reward_variance", "reward", "reward_sum", "length", "entropy", "entropy_variance")
    for zero in (True, False)
]


@pytest.mark.parametrize("discrete", [False, True], ids=["continuous", "win-loss"])
def test_parity_with_ragen2_on_random_batches(ragen2_filter, discrete):
    generator = torch.Generator().manual_seed(20)
    compared = same_groups = 0
    for trial in range(12):
        groups, size = [(8, 4), (6, 5), (10, 2)][trial % 3]
        if discrete:  # success or failure, minus a format penalty: many equal spreads and means
            scores = torch.randint(0, 2, (groups * size,), generator=generator).double()
            scores -= 0.1 * torch.randint(0, 2, (groups * size,), generator=generator)
        else:
            scores = torch.randn(groups * size, generator=generator, dtype=torch.float64)
            flat = torch.randperm(groups, generator=generator)[: groups // 3]  # groups that all scored the same
            for g in flat.tolist():
                scores[g * size : (g + 1) * size] = scores[g * size]
        lengths = torch.randint(1, 80, (groups * size,), generator=generator)
        token_entropies = 3 * torch.rand(groups * size, 80, generator=generator, dtype=torch.float64)
        # A group whose every reply has one entropy (1.5 exactly at every token): its entropy spread is exactly 0.
        token_entropies[:size] = 1.5
        seeds = [g for g in range(groups) for _ in range(size)]
        entropies = trajectory_entropies(token_entropies.float(), response_mask(lengths))
        for spec in SPECS:
            ours = filter_rollouts(scores.float(), seeds, spec, lengths=lengths, entropies=entropies)
            theirs, metrics = _ragen2_kept(ragen2_filter, spec, scores, lengths, groups, size, token_entropies)
            assert ours.groups.numel() == int(metrics["rollout/filter_kept_count"]), spec
            kept_scores = ours.scores[ours.groups]
            if theirs is None:  # the mean kept score is the same whichever tied group is kept
                expected = float(metrics[CHOSEN_MEAN[spec.metric]])
                assert (float(kept_scores.mean()) if len(kept_scores) else 0.0) == pytest.approx(expected), spec
                continue
            # Ties may be broken differently (theirs: topk's order); the kept scores may not differ.
            assert sorted(kept_scores.tolist()) == pytest.approx(sorted(ours.scores[theirs].tolist()), abs=1e-5), spec
            if sorted(ours.groups.tolist()) == sorted(theirs):
                ours_metrics = filter_metrics(ours)
                for name in ("std", "mean", "max"):
                    assert ours_metrics[f"chosen_in_group_{name}"] == pytest.approx(
                        float(metrics[f"rollout/chosen_in_group_reward_{name}"]), abs=1e-5), (spec, name)
                same_groups += 1
            compared += 1
    # Most selections are not decided by a tie, so the same groups come out.
    assert compared == 12 * len([s for s in SPECS if s.metric not in CHOSEN_MEAN]) and same_groups > compared // 2
