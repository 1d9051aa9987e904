"""The collapse diagnostics under veRL give the local trainer's numbers on the same episodes.

Episodes are played by our veRL agent loop (a scripted server writes replies with reasoning that
names the seed), and written into an in-memory stand-in for TransferQueue by veRL's own
agent-loop worker code (``AgentLoopWorkerTQ._agent_loop_postprocess``).
Our trainer's old-log-prob hook then runs with a stand-in for veRL's actor worker group whose
``compute_log_prob`` scores each stored row with the tiny model and writes ``log_probs`` back in
the engine's layout (``log_probs[t]`` = log p(``input_ids[t + 1]``), over the whole sequence),
so everything between the trainer and the workers (the split of veRL's rows into turns, the
scoring rows, their padding, the read-back, the clearing) is ours, run for real.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import gymnasium
import pytest
import torch
import transfer_queue
from omegaconf import OmegaConf
from transfer_queue import KVBatchMeta
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.tensordict_utils import list_of_dict_to_tensordict

from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.integrations.verl import collapse
from ragen_bench.integrations.verl.trainer import StarPOTrainer
from ragen_bench.train.collapse_probe import PREFIX, TRAJECTORY_PREFIX, CollapseProbe, all_turns, model_scorer
from ragen_bench.train.config import CollapseDetectionConfig
from ragen_bench.train.policy_agent import TurnSample
from tests_verl.test_agent_loop import ENV, ScriptedServer, make_loop, play, setup, stored_rows  # noqa: F401  (setup: a fixture)

torch.set_num_threads(1)
TEMPERATURE = 0.7


class FakeQueue:
    """``kv_batch_put`` / ``kv_batch_get`` / ``kv_clear`` over rows kept as dicts of tensors, per partition."""

    def __init__(self):
        self.rows: dict[tuple[str, str], dict] = {}
        self.puts: list[str] = []

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        self.puts.append(partition_id)
        for n, key in enumerate(keys):
            row = self.rows.setdefault((partition_id, key), {})
            for name in fields.keys():
                value = fields[name]
                row[name] = value.unbind()[n] if isinstance(value, torch.Tensor) else value[n]

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        return list_of_dict_to_tensordict([{name: self.rows[(partition_id, key)][name] for name in select_fields}
                                           for key in keys])

    def kv_clear(self, keys, partition_id):
        for key in keys:
            del self.rows[(partition_id, key)]

    def partition(self, partition_id):
        return [key for partition, key in self.rows if partition == partition_id]


class ActorWorkers:
    """veRL's actor worker group as the trainer calls it: ``dp`` data-parallel ranks, ``compute_log_prob``."""

    def __init__(self, model, queue, dp):
        self.model, self.queue, self.dp = model, queue, dp
        self._dispatch_info: dict = {}
        self.batches: list[int] = []

    def _query_dispatch_info(self, role):
        assert role == "actor"
        return [rank for rank in range(self.dp)]

    def compute_log_prob(self, meta):
        assert len(meta.keys) % self.dp == 0, "the dispatch splits a batch evenly over the ranks"
        assert meta.extra_info["compute_loss"] is False
        self.batches.append(len(meta.keys))
        for key in meta.keys:
            row = self.queue.rows[(meta.partition_id, key)]
            ids = row["input_ids"]
            assert torch.equal(ids, torch.cat([row["prompts"], row["responses"]]))
            with torch.no_grad():
                logits = self.model(input_ids=ids[None], position_ids=row["position_ids"][None]).logits[0]
            log_p = torch.log_softmax(logits.double() / meta.extra_info["temperature"], dim=-1)
            next_token = log_p[:-1].gather(1, ids[1:, None])[:, 0]
            row["log_probs"] = torch.cat([next_token, torch.zeros(1, dtype=next_token.dtype)]).float()
        return meta


def reply(seed, turn):
    return f"<think>the box sits {seed} squares left, turn {turn}</think><answer>Right</answer>"


def episodes(setup, seeds_and_sessions, *, empty_first=(), window=None):
    """``(verl outputs, local trajectories, local samples)`` for the given (seed, session) episodes, each played
    by our agent loop (``window``: its chat.history_window, one output per turn)."""
    tokenizer = setup["tokenizer"]
    chat = dict(setup["config"].chat, history_window=window)
    entry = OmegaConf.merge(setup["entry"], {"chat": {"history_window": window}})
    outputs, trajectories, samples = [], [], {}
    for seed, session in seeds_and_sessions:
        texts = [None if (seed, turn) in empty_first else reply(seed, turn) for turn in range(10)]
        server = ScriptedServer(tokenizer, texts)
        out = play(make_loop(setup, server, entry=entry), seed, session)
        outputs.append((seed, session, out))
        episode = ChatEpisode(gymnasium.make(ENV), ChatConfig(**chat), env_id=ENV, seed=seed, sample=session)
        episode.reset()
        records = []
        for call in server.calls:
            if episode.done:
                break
            ids = call["ids"]
            records.append(TurnSample(tuple(call["prompt_ids"]), tuple(ids), (0.0,) * len(ids), "stop", True))
            episode.step(AgentReply(text=tokenizer.decode(ids, skip_special_tokens=True,
                                                          clean_up_tokenization_spaces=False)))
        trajectories.append(episode.trajectory())
        samples[episode.key] = records
    return outputs, trajectories, samples


def store(queue, outputs, *, padding=0):
    """The rows as veRL's own agent-loop worker writes them (``{uid}_{session}_{output}``), veRL's padding rows after."""
    keys, tags = [], []
    for seed, session, out in outputs:
        rows, row_tags = stored_rows(out, uid=f"uid{seed}", session=session)
        for (key, row), tag in zip(rows.items(), row_tags, strict=True):
            queue.rows[("train", key)] = row
            keys.append(key)
            tags.append(tag)
    for n in range(padding):  # veRL's upsampling: a row that must not be read as a trajectory
        queue.rows[("train", f"pad_{n}_0")] = {}
        keys.append(f"pad_{n}_0")
        tags.append({"status": "success", "is_padding": True})
    return KVBatchMeta(partition_id="train", keys=keys[::-1], tags=tags[::-1])  # veRL's balancing reorders them


def turns_of(batch, tokenizer, *, first_only):
    return collapse.rows_turns(collapse.read_rows(batch.partition_id, collapse.trajectory_keys(batch)), tokenizer,
                               think=True, first_only=first_only)


def trainer(setup, workers, settings, *, step, micro=1, stashed=None):
    t = object.__new__(StarPOTrainer)
    t.config = OmegaConf.create({
        "trainer": {"v1": {"ragen_sync": {"collapse_detection": settings, "think": True, "seed": 11}}},
        "actor_rollout_ref": {"rollout": {"temperature": TEMPERATURE, "log_prob_use_dynamic_bsz": False,
                                          "log_prob_micro_batch_size_per_gpu": micro}},
    })
    t.tokenizer, t.actor_rollout_wg, t.timing_raw, t.global_steps = setup["tokenizer"], workers, {}, step
    t.replay_buffer = SimpleNamespace(collapse_rows=stashed)  # what our sampler kept of the rollout, if anything
    return t


@pytest.fixture
def queue(monkeypatch):
    fake = FakeQueue()
    for name in ("kv_batch_put", "kv_batch_get", "kv_clear"):
        monkeypatch.setattr(transfer_queue, name, getattr(fake, name))
    monkeypatch.setattr(PPOTrainerSync, "_compute_old_log_prob", lambda self, batch, metrics: batch)  # veRL's step
    return fake


SEEDS = [(3, 0), (3, 1), (5, 0), (5, 1), (8, 0), (8, 1)]


@pytest.mark.parametrize("multi_turn", [False, True])
def test_the_verl_step_logs_the_local_trainers_diagnostics_on_the_same_episodes(setup, queue, multi_turn):
    settings = dict(vars(CollapseDetectionConfig()), multi_turn_enabled=multi_turn, num_samples=5)
    outputs, trajectories, samples = episodes(setup, SEEDS)
    workers = ActorWorkers(setup["model"], queue, dp=4)
    batch = store(queue, outputs, padding=2)
    metrics: dict = {}
    t = trainer(setup, workers, settings, step=1)
    assert t._compute_old_log_prob(batch, metrics) is batch

    # The local trainer's probe on the same episodes, scored by the same model in one forward per prompt.
    local_turns = all_turns(trajectories, samples, setup["tokenizer"], think=True, first_only=not multi_turn)
    assert turns_of(batch, setup["tokenizer"], first_only=not multi_turn) == local_turns
    probe = CollapseProbe(SimpleNamespace(**settings), 11)
    expected = probe.measure(local_turns, model_scorer(setup["model"], temperature=TEMPERATURE, micro_batch=4,
                                                       pad_id=setup["tokenizer"].eos_token_id), 0)
    assert PREFIX + "mi_estimate" in expected and (TRAJECTORY_PREFIX + "mi_estimate" in expected) is multi_turn
    assert set(metrics) == set(expected)
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, rel=1e-4, abs=1e-4), name
    assert metrics["collapse/first_turn_num_total"] == 6 and metrics[PREFIX + "mi_upper_bound"] == pytest.approx(math.log(3))

    assert "collapse" in t.timing_raw  # veRL logs it as timing_s/collapse
    assert all(size % 4 == 0 for size in workers.batches) and len(workers.batches) == 1 + multi_turn
    assert queue.partition(collapse.PARTITION) == []  # the scoring rows are cleared
    assert set(queue.puts) == {collapse.PARTITION}  # and never written where veRL's replay buffer reads


@pytest.mark.parametrize("window", [1, 2])
def test_windowed_rows_give_the_local_trainers_diagnostics(setup, queue, window):
    """Under a context window each turn is a row of its own (its windowed prompt, then its reply): the
    trajectory sample's X is that prompt, as the local trainer's per-turn sample."""
    settings = dict(vars(CollapseDetectionConfig()), multi_turn_enabled=True, num_samples=6)
    outputs, trajectories, samples = episodes(setup, SEEDS, window=window, empty_first={(5, 0)})
    batch = store(queue, outputs)
    local_turns = all_turns(trajectories, samples, setup["tokenizer"], think=True)
    # An empty reply has no row, so its X is not in the store; it has no Z and is never scored.
    def scored(turns):
        return [[(pair.context_ids if pair.reasoning_ids else None, pair.reasoning_ids, pair.group) for pair in t]
                for t in turns]

    assert scored(turns_of(batch, setup["tokenizer"], first_only=False)) == scored(local_turns)
    assert max(len(turns) for turns in local_turns) > 2 and local_turns[2][0].reasoning_ids == ()
    metrics: dict = {}
    trainer(setup, ActorWorkers(setup["model"], queue, dp=2), settings, step=1)._compute_old_log_prob(batch, metrics)
    expected = CollapseProbe(SimpleNamespace(**settings), 11).measure(
        local_turns, model_scorer(setup["model"], temperature=TEMPERATURE, micro_batch=4, pad_id=0), 0)
    assert TRAJECTORY_PREFIX + "mi_estimate" in expected and set(metrics) == set(expected)
    for name, value in expected.items():
        assert metrics[name] == pytest.approx(value, rel=1e-4, abs=1e-4), name


def test_the_rollout_our_sampler_kept_before_filtering_is_what_is_scored(setup, queue):
    """The filter kept two of three groups: the batch holds those, the diagnostics read all three (the sampler's
    rows of this step), as the local trainer scores its rollout before the filter."""
    settings = dict(vars(CollapseDetectionConfig()), num_samples=None)
    outputs, trajectories, samples = episodes(setup, SEEDS)
    whole = store(queue, outputs)
    rows = collapse.read_rows(whole.partition_id, collapse.trajectory_keys(whole))
    kept = KVBatchMeta(partition_id="train", keys=[k for k in whole.keys if not k.startswith("uid5_")],
                       tags=[{} for k in whole.keys if not k.startswith("uid5_")])
    score = model_scorer(setup["model"], temperature=TEMPERATURE, micro_batch=4, pad_id=0)
    expected = CollapseProbe(SimpleNamespace(**settings), 11).measure(
        all_turns(trajectories, samples, setup["tokenizer"], think=True, first_only=True), score, 9)
    for stashed, num_total, columns in (((10, rows), 6, 3), ((9, rows), 4, 2)):  # a stash of another step is stale
        metrics: dict = {}
        trainer(setup, ActorWorkers(setup["model"], queue, dp=1), settings, step=10, stashed=stashed)._compute_old_log_prob(
            kept, metrics)
        assert metrics["collapse/first_turn_num_total"] == num_total
        assert metrics[PREFIX + "mi_upper_bound"] == pytest.approx(math.log(columns))
    first = {}
    t = trainer(setup, ActorWorkers(setup["model"], queue, dp=1), settings, step=10, stashed=(10, rows))
    t._compute_old_log_prob(kept, first)
    assert t.replay_buffer.collapse_rows is None  # read once, then let go
    for name, value in expected.items():
        assert first[name] == pytest.approx(value, rel=1e-4, abs=1e-4), name


def test_the_diagnostics_run_on_schedule_and_carry_their_moving_average(setup, queue):
    outputs, _, _ = episodes(setup, SEEDS)
    workers = ActorWorkers(setup["model"], queue, dp=1)
    t = trainer(setup, workers, dict(vars(CollapseDetectionConfig()), compute_freq=2, num_samples=None), step=1)
    logged = []
    for step in (1, 2, 3, 4):
        t.global_steps = step
        metrics: dict = {}
        t._compute_old_log_prob(store(queue, outputs), metrics)
        logged.append(metrics)
    assert [bool(m) for m in logged] == [True, True, False, True]  # step 1, then every 2nd
    first, second = logged[0][PREFIX + "marginal_std_ema"], logged[1][PREFIX + "marginal_std_ema"]
    assert second == pytest.approx(0.9 * first + 0.1 * logged[1][PREFIX + "marginal_std"])
    assert len(workers.batches) == 3


def test_no_settings_no_diagnostics(setup, queue):
    outputs, _, _ = episodes(setup, SEEDS[:2])
    workers = ActorWorkers(setup["model"], queue, dp=1)
    t = trainer(setup, workers, None, step=1)
    t.config.trainer.v1.ragen_sync.pop("collapse_detection")
    metrics: dict = {}
    t._compute_old_log_prob(store(queue, outputs), metrics)
    assert metrics == {} and workers.batches == []


def test_an_empty_first_reply_counts_as_a_turn_without_reasoning(setup, queue):
    outputs, trajectories, samples = episodes(setup, [(3, 0), (5, 0)], empty_first={(3, 0)})
    batch = store(queue, outputs)
    turns = turns_of(batch, setup["tokenizer"], first_only=False)
    assert turns == all_turns(trajectories, samples, setup["tokenizer"], think=True)
    assert turns[0][0].reasoning_ids == () and turns[0][1].reasoning_ids and turns[1][0].reasoning_ids


def test_reply_spans_follow_the_turn_records():
    mask = [1, 1, 0, 0, 1, 1, 1, 0, 1]
    assert collapse.reply_spans(mask, [2, 3, 1]) == [(0, 2), (4, 7), (8, 9)]
    assert collapse.reply_spans(mask, [2, 0, 3, 1]) == [(0, 2), (2, 2), (4, 7), (8, 9)]  # an empty reply
    assert collapse.reply_spans([0, 1, 1, 1], [2, 1]) == [(1, 3), (3, 4)]  # replies with no ids between them
    with pytest.raises(ValueError, match="masked ids but its turns record 5"):
        collapse.reply_spans(mask, [2, 3])
    with pytest.raises(ValueError, match="split by unmasked ids"):
        collapse.reply_spans(mask, [1, 4, 1])


@pytest.mark.parametrize("dp, micro, dynamic, expected", [(1, 1, False, 1), (4, 2, False, 8), (4, 2, True, 4)])
def test_the_scoring_batch_is_a_multiple_the_dispatch_can_split(dp, micro, dynamic, expected):
    workers = ActorWorkers(None, None, dp)
    rollout = {"log_prob_use_dynamic_bsz": dynamic, "log_prob_micro_batch_size_per_gpu": micro}
    assert collapse.actor_batch_multiple(workers, rollout) == expected


def test_the_worker_scorer_is_the_local_forward_and_scores_equal_prompts_once(setup, queue):
    workers = ActorWorkers(setup["model"], queue, dp=3)
    contexts = [(5, 6, 7), (8, 9), (5, 6, 7)]
    reasonings = [(10, 11, 12), (13,), (14, 15)]
    score = collapse.WorkerScorer(workers, temperature=TEMPERATURE, multiple=3, step=7)
    mean, total = score(contexts, reasonings)
    local_mean, local_total = model_scorer(setup["model"], temperature=TEMPERATURE, micro_batch=2,
                                           pad_id=0)(contexts, reasonings)
    torch.testing.assert_close(total, local_total, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, local_mean, rtol=1e-4, atol=1e-4)
    assert workers.batches == [6]  # two distinct prompts x three reasonings
    assert torch.equal(total[:, 0], total[:, 2])


def test_scoring_rows_are_cleared_when_the_workers_fail(setup, queue):
    class Failing(ActorWorkers):
        def compute_log_prob(self, meta):
            raise RuntimeError("worker died")

    score = collapse.WorkerScorer(Failing(setup["model"], queue, 1), temperature=1.0, multiple=1, step=1)
    with pytest.raises(RuntimeError, match="worker died"):
        score([(5, 6), (7, 8)], [(9,), (10,)])
    assert queue.partition(collapse.PARTITION) == []


def test_a_row_whose_turn_records_do_not_match_its_mask_is_a_clear_error(setup, queue):
    outputs, _, _ = episodes(setup, [(3, 0)])
    batch = store(queue, outputs)
    row = queue.rows[("train", "uid3_0_0")]
    row["extra_fields"] = dict(row["extra_fields"], turns=[{"tokens": 1}])
    with pytest.raises(ValueError, match="masked ids but its turns record 1"):
        turns_of(batch, setup["tokenizer"], first_only=True)


def test_scoring_rows_have_the_agent_loops_layout():
    row = collapse.scoring_row((5, 6, 7), (8, 9))
    assert row["input_ids"].tolist() == [5, 6, 7, 8, 9] and row["position_ids"].tolist() == [0, 1, 2, 3, 4]
    assert row["response_mask"].tolist() == row["loss_mask"].tolist() == [1, 1]
    assert set(row) >= {"prompts", "responses", "response_mask", "loss_mask", "input_ids", "position_ids"}


def test_two_groups_of_one_seed_stay_two_trajectories(setup):
    # Refill rounds that cross the end of the seed list can roll out one seed under two uids.
    def row(uid, output, reasoning):
        ids = setup["tokenizer"](f"<think>{reasoning}</think>", add_special_tokens=False)["input_ids"]
        return collapse.StoredRow(seed=4, uid=uid, session=0, output=output, prompt_ids=[5, 6], response_ids=ids,
                                  response_mask=[1] * len(ids), tokens=[len(ids)])

    rows = [row("a", 0, "first a"), row("a", 1, "second a"), row("b", 0, "first b")]
    turns = collapse.rows_turns(rows, setup["tokenizer"], think=True, first_only=False)
    assert [len(t) for t in turns] == [2, 1] and all(pair.group == 4 for t in turns for pair in t)
    first = collapse.rows_turns(rows, setup["tokenizer"], think=True, first_only=True)
    assert [len(t) for t in first] == [1, 1] and first[1][0].reasoning_ids != first[0][0].reasoning_ids
