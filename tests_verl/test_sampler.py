"""The custom sampler keeps exactly the groups the local trainer's filter keeps (StarPO-S's and RAGEN-2's).

The sampler is loaded the way veRL loads it (by file path) and runs against an in-memory
stand-in for TransferQueue's key-value calls (``kv_list``, ``kv_batch_get``, ``kv_clear``), so
veRL's own ReplayBuffer helpers (metadata sync, clearing, batch materialisation) run for real.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import transfer_queue
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from verl.utils.import_utils import load_extern_type
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from ragen_bench.integrations.verl import recipe
from ragen_bench.starpo.filter import filter_groups, filter_rollouts
from ragen_bench.starpo.filter_spec import FilterSpec, check_ratio, groups_to_keep, preset


class FakeQueue:
    """Prompt keys ``{uid}`` with a status tag, trajectory keys ``{uid}_{session}_0`` with scores and seeds."""

    def __init__(self):
        self.tags: dict[str, dict] = {}
        self.values: dict[str, dict] = {}
        self.listed = 0

    def add_group(self, partition, uid, seed, scores, status="finished", step=1, tokens=None, charges=None):
        self.tags[(partition, uid)] = {"is_prompt": True, "status": status, "global_steps": step}
        for session, score in enumerate(scores):
            key = f"{uid}_{session}_0"
            self.tags[(partition, key)] = {"status": "finished"}
            charge = charges[session] if charges else 0.0
            rm = torch.zeros(4)
            rm[-1] = score + charge  # the agent loop's reward_score: the episode's score plus overlong charges
            turns = [{"tokens": tokens[session] if tokens else 1, "overlong_penalty": charge}]
            self.values[(partition, key)] = {"rm_scores": rm, "extra_fields": {"seed": seed, "turns": turns}}

    # -- the TransferQueue calls the sampler makes ------------------------------------------
    def kv_list(self, partition_id=None):
        self.listed += 1
        listing: dict[str, dict] = {}
        for (partition, key), tag in self.tags.items():
            listing.setdefault(partition, {})[key] = dict(tag)
            if tag.get("status") == "running":
                tag["status"] = "finished"  # a running group is done by the next poll
        return listing

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        return {field: [self.values[(partition_id, key)][field] for key in keys] for field in select_fields}

    def kv_clear(self, keys, partition_id):
        for key in keys:
            self.tags.pop((partition_id, key), None)
            self.values.pop((partition_id, key), None)

    def uids(self, partition):
        return {key for (part, key), tag in self.tags.items() if part == partition and tag.get("is_prompt")}


@pytest.fixture
def queue(monkeypatch):
    fake = FakeQueue()
    for name in ("kv_list", "kv_batch_get", "kv_clear"):
        monkeypatch.setattr(transfer_queue, name, getattr(fake, name))
    return fake


def make_sampler(groups, ratio=None, mode="std", refill=None, spec=None, refill_rounds=0, empty_stop_steps=0,
                 **extra):
    cls = load_extern_type(str(recipe.SAMPLER_FILE), recipe.SAMPLER_CLASS)
    spec = spec or preset(mode, ratio)
    sampler = cls(
        trainer_mode="sync",
        trainer_config={},
        max_off_policy_threshold=8,
        max_off_policy_strategy="drop",
        sampler_kwargs={"groups": groups, "refill_rounds": refill_rounds, "empty_stop_steps": empty_stop_steps,
                        **dataclasses.asdict(spec), **extra},
        refill_fn=refill or (lambda count: count),
    )
    sampler.poll_interval = 0.0
    return sampler


def kept_seeds(queue, batch, partition="train"):
    return sorted({queue.values[(partition, key)]["extra_fields"]["seed"] for key in batch.keys})


def test_a_hand_checked_step(queue):
    # Seeds 10..13 with in-group stds 0, 0.71, 2.83, 0: the top half is seeds 12 and 11.
    for uid, seed, scores in (("a", 10, [0, 0]), ("b", 11, [0, 1]), ("c", 12, [0, 4]), ("d", 13, [1, 1])):
        queue.add_group("train", uid, seed, scores)
    batch, metrics = make_sampler(groups=4, ratio=0.5).sample(global_steps=1, partition_id="train", batch_size=2)
    assert kept_seeds(queue, batch) == [11, 12]
    assert sorted(batch.keys) == ["b_0_0", "b_1_0", "c_0_0", "c_1_0"]
    assert queue.uids("train") == set()  # dropped groups cleared; kept prompts consumed by the batch
    assert not any(key.startswith(("a_", "d_")) for _, key in queue.tags)
    assert metrics["training/starpo_s/kept_groups"] == 2.0 and metrics["training/starpo_s/groups"] == 4.0


def test_lowest_spread_mode_and_ties_go_to_the_smaller_seed(queue):
    for uid, seed, scores in (("z", 40, [3, 3]), ("y", 30, [0, 1]), ("x", 20, [5, 5]), ("w", 10, [2, 2])):
        queue.add_group("train", uid, seed, scores)
    batch, _ = make_sampler(groups=4, ratio=0.5, mode="std_rev").sample(1, "train", 2)
    assert kept_seeds(queue, batch) == [10, 20]  # three groups of spread 0: the two smallest seeds


def test_it_over_generates_once_per_step_and_waits_for_every_group(queue):
    refills = []

    def refill(count):
        refills.append(count)
        for i in range(count):
            queue.add_group("train", f"r{i}", 100 + i, [i, 0], status="running")

    queue.add_group("train", "first", 1, [0, 0])
    queue.add_group("train", "second", 2, [0, 0])
    batch, _ = make_sampler(groups=8, ratio=0.25, refill=refill).sample(1, "train", 2)
    assert refills == [6]  # 8 groups rolled out, 2 already submitted by the trainer
    assert queue.listed >= 2  # the running groups were waited for
    assert kept_seeds(queue, batch) == [104, 105]  # spreads 4 and 5 beat 0..3


def test_a_short_refill_at_the_end_of_the_data_is_not_waited_for(queue):
    def refill(count):  # asked for 4 more prompts, the data had 2 left
        queue.add_group("train", "r1", 20, [0, 3])
        queue.add_group("train", "r2", 21, [0, 0])
        return 2

    for uid, seed, scores in (("a", 10, [0, 1]), ("b", 11, [0, 0]), ("c", 12, [0, 2]), ("d", 13, [1, 1])):
        queue.add_group("train", uid, seed, scores)
    batch, _ = make_sampler(groups=8, ratio=0.5, refill=refill).sample(1, "train", 4)
    assert kept_seeds(queue, batch) == [10, 12, 20]  # floor(0.5 x 6 groups) = 3, by spread


def test_on_a_collapse_step_the_sampler_keeps_the_whole_rollout_before_it_filters(queue, monkeypatch):
    # Rows as the agent loop writes them (a one-token reply at the end), read as TransferQueue returns them.
    monkeypatch.setattr(transfer_queue, "kv_batch_get", lambda keys, partition_id, select_fields: (
        list_of_dict_to_tensordict([{f: queue.values[(partition_id, k)][f] for f in select_fields} for k in keys])))
    sampler = make_sampler(groups=4, ratio=0.5, collapse_compute_freq=2)
    for step in (1, 3):
        for uid, seed, scores in (("d", 13, [1, 1]), ("a", 10, [0, 0]), ("b", 11, [0, 1]), ("c", 12, [0, 4])):
            queue.add_group("train", f"{uid}{step}", seed, scores, step=step)
            for session in range(2):
                queue.values[("train", f"{uid}{step}_{session}_0")].update(
                    prompts=torch.tensor([seed, 7]), responses=torch.tensor([5, 6, 8, seed]),
                    response_mask=torch.tensor([0, 0, 0, 1]))
        batch, _ = sampler.sample(global_steps=step, partition_id="train", batch_size=2)
        assert kept_seeds(queue, batch) == [11, 12]
    stashed_step, rows = sampler.collapse_rows
    assert stashed_step == 1  # step 3 is not a diagnostic step: the stash stays step 1's, which the trainer ignores
    assert [(row.seed, row.session) for row in rows] == [(s, n) for s in (10, 11, 12, 13) for n in (0, 1)]
    assert rows[0].prompt_ids == [10, 7] and rows[0].response_ids == [5, 6, 8, 10] and rows[0].tokens == [1]
    assert make_sampler(groups=4, ratio=0.5).collapse_compute_freq == 0  # off unless the recipe asks


def test_validation_batches_pass_through_unfiltered(queue):
    refills = []
    for uid, seed in (("v1", 1), ("v2", 2), ("v3", 3)):
        queue.add_group("val", uid, seed, [1.0])
    batch, _ = make_sampler(groups=8, ratio=0.25, refill=refills.append).sample(1, "val", 3)
    assert kept_seeds(queue, batch, "val") == [1, 2, 3] and refills == []


def test_sampler_settings_are_checked(queue):
    with pytest.raises(ValueError, match=r"lacks \['strategy', 'value'"):
        cls = load_extern_type(str(recipe.SAMPLER_FILE), recipe.SAMPLER_CLASS)
        cls("sync", {}, 8, "drop", {"groups": 4}, refill_fn=lambda n: n)
    with pytest.raises(ValueError, match=r"groups \(2\) is below the 4 groups"):
        make_sampler(groups=2, ratio=0.5).sample(1, "train", 4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    groups=st.integers(2, 10),
    size=st.integers(1, 4),
    ratio=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
    mode=st.sampled_from(["std", "std_rev"]),
)
def test_kept_groups_equal_the_starpo_s_filter(queue, data, groups, size, ratio, mode):
    queue.tags.clear()
    queue.values.clear()
    try:
        check_ratio(groups, ratio)
    except ValueError:
        reject()  # the filter refuses a ratio that keeps no group (tested in tests/test_starpo_filter.py)
    kept = groups_to_keep(groups, preset(mode, ratio))
    seeds = data.draw(st.lists(st.integers(0, 10_000), min_size=groups, max_size=groups, unique=True))
    # Scores on a coarse grid so that equal spreads (ties) are common.
    scores = data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 10.0]), min_size=size, max_size=size),
                                min_size=groups, max_size=groups))
    for number, (seed, group_scores) in enumerate(zip(seeds, scores)):
        queue.add_group("train", f"g{number}", seed, group_scores)
    batch, _ = make_sampler(groups=groups, ratio=ratio, mode=mode).sample(1, "train", kept)

    by_seed = sorted(zip(seeds, scores))
    flat = torch.tensor([s for _, group_scores in by_seed for s in group_scores], dtype=torch.float64)
    ids = [seed for seed, group_scores in by_seed for _ in group_scores]
    expected = filter_groups(flat, ids, ratio=ratio, mode=mode)
    assert kept_seeds(queue, batch) == sorted(ids[row] for row in expected.rows.tolist()[::size])


# -- RAGEN-2's filter, dynamic sampling, empty steps ---------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.data(),
    groups=st.integers(2, 8),
    size=st.integers(1, 4),
    spec=st.builds(
        lambda strategy, value, **rest: FilterSpec(
            strategy=strategy, value=1 + int(value * 3) if strategy == "top_k_abs" else value, **rest),
        strategy=st.sampled_from(["top_p", "top_k", "top_k_abs", "min_p"]),
        value=st.sampled_from([0.3, 0.5, 0.9, 1.0]),
        filter_type=st.sampled_from(["largest", "smallest"]),
        metric=st.sampled_from(["reward_variance", "reward", "reward_sum", "length"]),
        include_zero=st.booleans(),
        top_p_prob_mode=st.sampled_from(["linear", "softmax"]),
    ),
)
def test_kept_groups_equal_ragen2s_filter_run_locally(queue, data, groups, size, spec):
    queue.tags.clear()
    queue.values.clear()
    seeds = data.draw(st.lists(st.integers(0, 10_000), min_size=groups, max_size=groups, unique=True))
    scores = data.draw(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 10.0]), min_size=size, max_size=size),
                                min_size=groups, max_size=groups))
    tokens = data.draw(st.lists(st.lists(st.integers(1, 40), min_size=size, max_size=size),
                                min_size=groups, max_size=groups))
    for number, (seed, group_scores, group_tokens) in enumerate(zip(seeds, scores, tokens)):
        queue.add_group("train", f"g{number}", seed, group_scores, tokens=group_tokens)
    by_seed = sorted(zip(seeds, scores, tokens))
    flat = torch.tensor([s for _, group_scores, _ in by_seed for s in group_scores], dtype=torch.float64)
    lengths = torch.tensor([t for *_, group_tokens in by_seed for t in group_tokens], dtype=torch.float64)
    ids = [seed for seed, group_scores, _ in by_seed for _ in group_scores]
    expected = filter_rollouts(flat, ids, spec, lengths=lengths)
    if expected.groups.numel() == 0:
        with pytest.raises(RuntimeError, match="kept no group"):
            make_sampler(groups=groups, spec=spec).sample(1, "train", groups)
        return
    batch, metrics = make_sampler(groups=groups, spec=spec).sample(1, "train", groups)
    assert kept_seeds(queue, batch) == sorted(ids[row] for row in expected.rows.tolist()[::size])
    assert metrics["training/starpo_s/kept_groups"] == expected.groups.numel()


DROP_EQUAL = FilterSpec(strategy="top_p", value=1.0, include_zero=False)  # DAPO's dynamic sampling


def test_dynamic_sampling_refills_fresh_rounds_until_every_group_slot_is_filled(queue):
    rounds = []

    def refill(count):  # each round: count fresh groups, one of them with varying scores
        rounds.append(count)
        for i in range(count):
            varied = i == 0
            queue.add_group("train", f"r{len(rounds)}x{i}", 100 * len(rounds) + i, [0, 3 if varied else 0])
        return count

    for uid, seed, scores in (("a", 1, [0, 1]), ("b", 2, [0, 0]), ("c", 3, [1, 1])):
        queue.add_group("train", uid, seed, scores)
    batch, metrics = make_sampler(groups=3, spec=DROP_EQUAL, refill=refill, refill_rounds=2).sample(1, "train", 3)
    assert rounds == [3, 3]  # round 1 keeps 1 group, round 2 a second, round 3 a third: 3 kept
    assert kept_seeds(queue, batch) == [1, 100, 200] and metrics["training/starpo_s/rounds"] == 3.0


def test_dynamic_sampling_keeps_the_best_groups_when_a_round_overshoots(queue):
    def refill(count):
        for i in range(count):
            queue.add_group("train", f"r{i}", 50 + i, [0, i + 1])
        return count

    queue.add_group("train", "a", 1, [0, 0.5])
    queue.add_group("train", "b", 2, [0, 0])
    spec = FilterSpec(strategy="top_p", value=1.0, include_zero=False)
    batch, _ = make_sampler(groups=2, spec=spec, refill=refill, refill_rounds=1).sample(1, "train", 2)
    assert kept_seeds(queue, batch) == [50, 51]  # spreads 0.71 and 1.41 beat seed 1's 0.35


def test_a_step_that_keeps_nothing_rolls_out_again_then_stops_the_run(queue):
    rounds = []

    def refill(count):
        rounds.append(count)
        for i in range(count):
            queue.add_group("train", f"r{len(rounds)}x{i}", 10 * len(rounds) + i, [1, 1])
        return count

    queue.add_group("train", "a", 1, [0, 0])
    with pytest.raises(RuntimeError, match=r"kept no group of 3 in 3 rounds .*empty_stop_steps=2"):
        make_sampler(groups=1, spec=DROP_EQUAL, refill=refill, empty_stop_steps=2).sample(1, "train", 1)
    assert rounds == [1, 1]


def test_the_filter_sees_episode_scores_without_the_overlong_charge(queue):
    # Equal episode scores, different overlong charges: RAGEN-2's variance filter drops the group, as locally.
    queue.add_group("train", "a", 1, [1, 1], charges=[0.0, -0.5])
    queue.add_group("train", "b", 2, [0, 1])
    batch, _ = make_sampler(groups=2, spec=DROP_EQUAL).sample(1, "train", 2)
    assert kept_seeds(queue, batch) == [2]
