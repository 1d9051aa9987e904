"""Scale-out: shards are disjoint and complete, and merging them equals one unsharded run."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragen_bench import panels
from ragen_bench.cli import main
from ragen_bench.eval import compose_config, merge_runs, rundir, run_eval
from ragen_bench.eval.config import ConfigError, parse_shard
from ragen_bench.eval.plan import batches, plan
from ragen_bench.eval.run import EnvPool
from ragen_bench.eval.rundir import RunDirError

ENV = "RAGEN/Sokoban-6x6-v0"


def fake_panel(env_id: str, split: str, count: int) -> panels.Panel:
    seeds = tuple(range(100, 100 + count))
    return panels.Panel(env_id, split, seeds, ("0" * 64,) * count, "c")


panel_lists = st.lists(st.integers(1, 12), min_size=1, max_size=3).map(
    lambda sizes: [fake_panel(f"E{i}", "test", n) for i, n in enumerate(sizes)]
)


@given(panel_lists, st.integers(1, 6), st.integers(1, 3), st.one_of(st.none(), st.integers(1, 10)))
def test_shards_partition_the_plan_and_keep_seeds_whole(panel_list, count, samples, limit):
    full = plan(panel_list, samples=samples, limit=limit, shard=(0, 1))
    shards = [plan(panel_list, samples=samples, limit=limit, shard=(i, count)) for i in range(count)]
    keys = [instance.slot for shard in shards for instance in shard]
    assert len(keys) == len(set(keys))  # disjoint
    assert set(keys) == {instance.slot for instance in full}  # complete
    for index, shard in enumerate(shards):
        seeds = {(i.env_id, i.seed) for i in shard}
        assert len(shard) == len(seeds) * samples  # every sample of a seed in one shard
        # deterministic by instance index modulo n
        numbered = [(p.env_id, s) for p in panel_list for s in p.seeds[:limit]]
        assert seeds == {pair for number, pair in enumerate(numbered) if number % count == index}


def test_plan_honours_limit_and_sample_order():
    planned = plan([fake_panel("E", "test", 5)], samples=2, limit=2, shard=(0, 1))
    assert [i.slot for i in planned] == [("E", "test", 100, 0), ("E", "test", 100, 1),
                                     ("E", "test", 101, 0), ("E", "test", 101, 1)]


@pytest.mark.parametrize("text", ["1", "4/4", "-1/2", "a/b", "1/0"])
def test_bad_shard_specs_are_refused(text):
    with pytest.raises(ConfigError, match="shard"):
        parse_shard(text)


def test_batches_are_consecutive_slices_of_at_most_lockstep_episodes():
    instances = plan([fake_panel("A", "test", 5), fake_panel("B", "test", 2)], samples=1,
                             limit=None, shard=(0, 1))
    got = [[(i.env_id, i.seed) for i in batch] for batch in batches(instances, 3)]
    assert got == [[("A", 100), ("A", 101), ("A", 102)], [("A", 103), ("A", 104), ("B", 100)], [("B", 101)]]


def test_env_pool_gives_distinct_envs_within_a_batch_and_reuses_them_across_batches():
    pool = EnvPool({})
    first = pool.take([ENV, ENV, "RAGEN/Sokoban-8x8-v0"])
    assert len({id(env) for env in first}) == 3
    assert first[2].spec.id == "RAGEN/Sokoban-8x8-v0"
    second = pool.take([ENV])
    assert second[0] is first[0]
    pool.close()


def eval_config(out: Path, *overrides: str) -> dict:
    return compose_config("eval", [f"env={ENV}", "limit=10", "samples=2", "agent=random", "progress=false",
                                   f"out={out}", *overrides])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One unsharded random-agent run and the same run in three shards."""
    root = tmp_path_factory.mktemp("shards")
    run_eval(eval_config(root / "whole"))
    for index in range(3):
        run_eval(eval_config(root / f"shard{index}", f"shard={index}/3"))
    return root


def test_merged_shards_equal_the_unsharded_run(runs, tmp_path):
    shard_dirs = [runs / f"shard{i}" for i in range(3)]
    sizes = [len(rundir.read_episodes(d / rundir.EPISODES)) for d in shard_dirs]
    assert sizes == [8, 6, 6]  # seeds 0,3,6,9 / 1,4,7 / 2,5,8 of ten, two samples each

    summary = merge_runs(shard_dirs, tmp_path / "merged")
    assert (tmp_path / "merged" / rundir.SUMMARY).read_bytes() == (runs / "whole" / rundir.SUMMARY).read_bytes()
    assert summary == rundir.read_json(runs / "whole" / rundir.SUMMARY)
    whole = sorted(rundir.read_episodes(runs / "whole" / rundir.EPISODES), key=rundir.slot_of)
    assert rundir.read_episodes(tmp_path / "merged" / rundir.EPISODES) == whole

    manifest = rundir.read_json(tmp_path / "merged" / rundir.MANIFEST)
    assert manifest["complete"] and manifest["expected_episodes"] == 20
    assert manifest["config"] == rundir.read_json(runs / "whole" / rundir.MANIFEST)["config"]
    assert [m["shard"] for m in manifest["merged_from"]] == ["0/3", "1/3", "2/3"]


def test_merging_only_some_shards_is_marked_incomplete(runs, tmp_path):
    merge_runs([runs / "shard0", runs / "shard2"], tmp_path / "partial")
    assert rundir.read_json(tmp_path / "partial" / rundir.MANIFEST)["complete"] is False


def test_merge_refuses_overlapping_inputs(runs, tmp_path):
    with pytest.raises(RunDirError, match="is in both"):
        merge_runs([runs / "whole", runs / "shard1"], tmp_path / "overlap")


def test_merge_refuses_runs_with_different_configs(runs, tmp_path):
    other = tmp_path / "other"
    run_eval(eval_config(other, "shard=1/3", "sampling_seed=5"))
    with pytest.raises(RunDirError, match=r"config\.agent\.sampling_seed"):
        merge_runs([runs / "shard0", other], tmp_path / "mixed")


def test_merge_refuses_to_overwrite_a_run(runs):
    with pytest.raises(RunDirError, match="already holds a run"):
        merge_runs([runs / "shard0"], runs / "whole")


def test_cli_merge(runs, tmp_path, capsys):
    out = tmp_path / "cli-merged"
    assert main(["merge", "--out", str(out), *(str(runs / f"shard{i}") for i in range(3))]) == 0
    assert "merged 3 run directories" in capsys.readouterr().out
    assert (out / rundir.SUMMARY).read_bytes() == (runs / "whole" / rundir.SUMMARY).read_bytes()
