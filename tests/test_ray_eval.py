"""``ragen-bench eval ... launcher=ray`` on a real local Ray cluster (one per module).

What must hold: the merged run's ``summary.json`` is byte-identical to one process's,
the launch keys stay out of the run's identity (either launcher resumes the other's
run), a worker killed mid-shard loses nothing and replays only its episodes in flight,
an interrupted command resumes its shards, and bad launch settings are one line.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.cli import main
from ragen_bench.eval import compose_config, run_eval
from ragen_bench.eval.config import MAX_WORKERS, ConfigError, validate_launch
from tests.conftest import one_line_error, run_python

ray = pytest.importorskip("ray")
launcher = pytest.importorskip("ragen_bench.integrations.ray.launcher")

SOKOBAN = ["env=RAGEN/Sokoban-6x6-v0", "agent=optimal", "limit=6", "samples=2", "lockstep_episodes=2"]
TINY = ["env=RAGEN/Bandit-v0", "agent=hf", "agent.model=tiny", "agent.temperature=0.7", "agent.max_new_tokens=24",
        "limit=2", "samples=2", "lockstep_episodes=2", "chat.max_turns=2"]
GAME = ["env=RAGEN/TicTacToe-v0", "agent=random", "opponent=minimax", "limit=6", "samples=2", "lockstep_episodes=2"]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2)
    yield
    ray.shutdown()


def config(out: Path, *overrides: str) -> dict:
    return compose_config("eval", [*overrides, f"out={out}", "progress=false"])


def episode_lines(out: Path) -> list[str]:
    return sorted((out / "episodes.jsonl").read_text(encoding="utf-8").splitlines())


# Three workers on the two CPUs of the cluster: the third shard waits for a freed CPU.
@pytest.mark.parametrize(("overrides", "workers", "episodes"), [(SOKOBAN, 3, 12), (TINY, 2, 4), (GAME, 2, 12)],
                         ids=["optimal", "tiny-model", "game"])
def test_ray_run_equals_one_process_run(cluster, tmp_path, overrides, workers, episodes):
    if overrides is GAME:
        pytest.importorskip("pettingzoo")  # the games extra
    result = launcher.run_eval_on_ray(config(tmp_path / "ray", *overrides, "launcher=ray", f"workers={workers}"))
    local = run_eval(config(tmp_path / "local", *overrides))
    assert (result.out / "summary.json").read_bytes() == (local.out / "summary.json").read_bytes()
    assert episode_lines(result.out) == episode_lines(local.out)  # the same episodes, not just the same totals
    assert result.complete and result.new_episodes == local.new_episodes == episodes
    # One run directory: the shard folder is gone, and the launch keys are not in the identity.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local", "ray"]
    manifests = [json.loads((run / "manifest.json").read_text()) for run in (result.out, local.out)]
    assert manifests[0]["config"] == manifests[1]["config"]
    assert not {"launcher", "workers", "ray"} & set(manifests[0]["config"])


def test_one_process_resumes_a_ray_run_and_ray_reruns_a_finished_one(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    launcher.run_eval_on_ray(config(out, *SOKOBAN, "launcher=ray", "workers=2"))
    before = (out / "summary.json").read_bytes()
    assert main(["eval", *SOKOBAN, f"out={out}", "progress=false"]) == 0
    assert "0 new episodes; run complete" in capsys.readouterr().out
    again = launcher.run_eval_on_ray(config(out, *SOKOBAN, "launcher=ray", "workers=2"))
    assert again.new_episodes == 0 and again.complete
    assert (out / "summary.json").read_bytes() == before
    # A different run in the same folder is still refused by key, whatever the launcher.
    other = ["env=RAGEN/Sokoban-6x6-v0", "agent=optimal", "limit=6", "samples=3", "lockstep_episodes=2"]
    assert main(["eval", *other, "launcher=ray", f"out={out}"]) == 2
    one_line_error(capsys, "config.samples is 2 there but 3 now")


class KillingAgent(OptimalAgent):
    """The optimal agent, logging every episode it is asked about; it SIGKILLs its own process
    once in the whole test (the first to create ``flag``), at its ``kill_at``-th batch."""

    def __init__(self, *, flag: str, log: str, kill_at: int = 3, think: bool = True,
                 max_actions_per_turn: int = 5, separator: str = "||") -> None:
        super().__init__(think=think, max_actions_per_turn=max_actions_per_turn, separator=separator)
        self.flag, self.log, self.kill_at, self.calls = flag, log, kill_at, 0

    def act(self, requests):
        with open(self.log, "a", encoding="utf-8") as handle:
            handle.writelines(f"{request.episode_key}/{request.turn}\n" for request in requests)
        self.calls += 1
        if self.calls == self.kill_at:
            try:
                os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return super().act(requests)


def test_a_worker_killed_mid_shard_loses_nothing_and_replays_only_its_batch_in_flight(cluster, tmp_path):
    flag, log = tmp_path / "killed", tmp_path / "asked.log"
    # Two shards of 6 episodes each, played in batches of 2 (one turn per Sokoban episode
    # for the optimal agent): the kill comes with a shard's third batch, after two were written.
    agent = [f"agent.name={__name__}:KillingAgent", f"+agent.flag={flag}", f"+agent.log={log}"]
    overrides = [*SOKOBAN, *agent]
    result = launcher.run_eval_on_ray(config(tmp_path / "ray", *overrides, "launcher=ray", "workers=2"))
    assert flag.exists()  # a worker did die
    assert result.complete and result.new_episodes == 12
    asked = log.read_text().splitlines()
    replayed = {key for key in asked if asked.count(key) > 1}
    # Resumed, not restarted: only the batch in flight at the kill was asked twice.
    assert len(asked) == 12 + 2 and len(replayed) == 2
    local = run_eval(config(tmp_path / "local", *overrides))  # the flag exists: this one is not killed
    assert (result.out / "summary.json").read_bytes() == (local.out / "summary.json").read_bytes()
    assert episode_lines(result.out) == episode_lines(local.out)


def test_an_interrupted_ray_command_resumes_its_shards(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    shards = launcher.shards_dir(out)
    # What an interrupted command leaves: shard 0 of 2 played, shard 1 not started; and
    # in shard 0's log a copied line and a line torn by a kill inside its write.
    run_eval(config(shards / "0-of-2", *SOKOBAN, "shard=0/2"))
    log = shards / "0-of-2" / "episodes.jsonl"
    first = log.read_text(encoding="utf-8").splitlines(keepends=True)[0]
    with log.open("a", encoding="utf-8") as handle:
        handle.write(first + first[:40])
    assert main(["eval", *SOKOBAN, "launcher=ray", "workers=3", f"out={out}"]) == 2
    one_line_error(capsys, "workers=2", str(shards))
    result = launcher.run_eval_on_ray(config(out, *SOKOBAN, "launcher=ray", "workers=2"))
    assert result.new_episodes == 6 and result.complete  # shard 0's six were not played again
    assert result.duplicate_lines == 1
    assert not shards.exists()
    local = run_eval(config(tmp_path / "local", *SOKOBAN))
    assert (out / "summary.json").read_bytes() == (local.out / "summary.json").read_bytes()


def test_bad_agent_settings_in_a_worker_are_one_line_and_leave_nothing(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["eval", *SOKOBAN, "+agent.colour=red", "launcher=ray", "workers=2", f"out={out}"]) == 2
    one_line_error(capsys, "colour")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        (["launcher=slurm"], ["launcher", "slurm"]),
        (["launcher=ray", "workers=0"], ["workers", "0"]),
        (["launcher=ray", "workers=2.5"], ["workers", "2.5"]),
        (["launcher=ray", "workers=true"], ["workers", "True"]),
        (["launcher=ray", f"workers={MAX_WORKERS + 1}"], ["workers"]),
        (["workers=4"], ["workers=4", "launcher=ray"]),
        (["ray.address=auto"], ["ray.address", "launcher=ray"]),
        (["launcher=ray", "ray.address=' '"], ["ray.address"]),
        (["launcher=ray", "+ray.port=6379"], ["ray.port"]),
        (["launcher=ray", "ray=5"], ["ray", "5"]),
        (["launcher=ray", "workers=2", "shard=1/2"], ["shard", "shard=0/1"]),
    ],
)
def test_bad_launch_settings_are_one_line_and_write_nothing(tmp_path, capsys, overrides, names):
    assert main(["eval", *SOKOBAN, *overrides, f"out={tmp_path / 'run'}"]) == 2
    one_line_error(capsys, *names)
    assert list(tmp_path.iterdir()) == []


def test_out_that_ray_cannot_merge_into_is_refused_before_any_work(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    assert main(["eval", *SOKOBAN, "launcher=ray", f"out={tmp_path / 'file'}"]) == 2
    one_line_error(capsys, "file")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    assert main(["eval", *SOKOBAN, "launcher=ray", f"out={tmp_path / 'busy'}"]) == 2
    one_line_error(capsys, "busy", "not a run")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "file"]


def test_an_unfinished_one_process_run_is_not_split_by_ray(tmp_path, capsys):
    out = tmp_path / "half"
    run_eval(config(out, *SOKOBAN))
    # What a one-process run stopped half-way (Ctrl-C) leaves: some episodes, complete=false.
    log = out / "episodes.jsonl"
    log.write_text("".join(log.read_text().splitlines(keepends=True)[:5]))
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "complete": False, "finished_at": None}))
    assert main(["eval", *SOKOBAN, "launcher=ray", "workers=2", f"out={out}"]) == 2
    one_line_error(capsys, str(out), "unfinished", "launcher=local")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["half"] and len(log.read_text().splitlines()) == 5


def test_a_local_eval_never_imports_ray(tmp_path):
    out = tmp_path / "run"
    imported = run_python(
        "import sys\n"
        "from ragen_bench.cli import main\n"
        f"assert main(['eval', 'env=RAGEN/Sokoban-6x6-v0', 'limit=2', 'progress=false', 'out={out}']) == 0\n"
        "print('RAY', 'ray' in sys.modules)\n"
    )
    assert "RAY False" in imported


launch_values = st.one_of(st.none(), st.booleans(), st.integers(-2, MAX_WORKERS + 2), st.floats(allow_nan=False),
                          st.text(max_size=6), st.sampled_from(["local", "ray", "auto", "1"]))


@given(st.fixed_dictionaries({"launcher": launch_values, "workers": launch_values, "ray": st.one_of(
    launch_values, st.fixed_dictionaries({"address": launch_values}))}),
    st.sampled_from(["0/1", "1/3"]))
def test_launch_keys_are_accepted_exactly_when_they_mean_one_thing(launch, shard):
    address = launch["ray"].get("address") if isinstance(launch["ray"], dict) else None
    meaningful = (
        launch["launcher"] in ("local", "ray")
        and type(launch["workers"]) is int and 1 <= launch["workers"] <= MAX_WORKERS
        and isinstance(launch["ray"], dict)
        and (address is None or (isinstance(address, str) and address.strip() != ""))
        and (launch["launcher"] == "ray" or (launch["workers"] == 1 and address is None))
        and (launch["launcher"] == "local" or shard == "0/1")
    )
    try:
        settings, parsed = validate_launch({**launch, "shard": shard})
    except ConfigError as error:
        assert not meaningful, error
        assert "\n" not in str(error)
    else:
        assert meaningful
        assert settings == launch and parsed == tuple(int(part) for part in shard.split("/"))
