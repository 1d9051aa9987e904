"""The trainer's collapse diagnostics (`ragen_bench.train.collapse_probe`): RAGEN-2's X/Z split of a
first turn, the schedule, the draw, the cross-scoring forward passes on the tiny model, and a
short run where the metrics appear on schedule in metrics.jsonl, TensorBoard and curves.png.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.train.collapse_probe import (  # noqa: E402
    PREFIX,
    TRAJECTORY_PREFIX,
    TurnPair,
    cross_log_probs,
    due,
    first_turn_diagnostics,
    last_ema_std,
    model_scorer,
    reasoning_text,
    sample_rows,
    sample_trajectory_turns,
    trajectory_diagnostics,
)
from ragen_bench.train.config import TrainConfigError  # noqa: E402
from tests.test_train import metrics, small  # noqa: E402


def test_reasoning_is_the_first_think_block_without_tags_or_special_tokens():
    reply = "<think> go left <|im_end|>\n</think> <answer>Left</answer><think>again</think>"
    assert reasoning_text(reply, think=True, special_tokens=["<|im_end|>"]) == "go left"
    assert reasoning_text("<answer>Left</answer>", think=True) == ""  # no reasoning: not a valid row
    assert reasoning_text("<think>\n</think><answer>Up</answer>", think=True) == ""
    assert reasoning_text(" <answer>Left</answer> ", think=False) == "<answer>Left</answer>"


def test_schedule_is_step_one_then_every_kth_step():
    assert [s for s in range(1, 13) if due(s, 5)] == [1, 5, 10]
    assert [s for s in range(1, 4) if due(s, 1)] == [1, 2, 3]
    assert not any(due(s, 0) for s in range(1, 20))


def test_the_draw_takes_valid_rows_without_replacement_and_depends_on_the_seed():
    rows = [TurnPair((1,), (2,) if i % 3 else (), group=i) for i in range(30)]  # every third row has no Z
    valid = [i for i in range(30) if i % 3]
    picked = sample_rows(rows, 8, seed=1)
    assert len(set(picked)) == 8 and set(picked) <= set(valid) and picked == sorted(picked)
    assert picked == sample_rows(rows, 8, seed=1) != sample_rows(rows, 8, seed=2)
    assert sample_rows(rows, None, seed=1) == valid == sample_rows(rows, 100, seed=1)


@pytest.mark.parametrize("bad", ["collapse_detection.compute_freq=-1", "collapse_detection.num_samples=1",
                                 "collapse_detection.micro_batch_size=0", "collapse_detection.std_eps=0",
                                 "collapse_detection.ema_decay=1"])
def test_bad_diagnostic_settings_are_one_error_naming_the_key(bad, tmp_path):
    with pytest.raises(TrainConfigError, match=bad.split("=")[0].replace(".", r"\.")):
        small("starpo-s", bad, out=tmp_path / "run")


@pytest.fixture(scope="module")
def tiny():
    from ragen_bench.agents.local_models import load_model
    from ragen_bench.agents.sampling import resolve_model_path

    model, _ = load_model(resolve_model_path("tiny"))
    return model.eval()


def test_cross_log_probs_equal_one_forward_per_pair_whatever_the_micro_batch(tiny):
    from ragen_bench.starpo.forward import token_log_probs

    generator = torch.Generator().manual_seed(0)
    vocab = tiny.config.vocab_size
    # Contexts of 20 tokens: the shared-prefix path (one prompt pass per micro-batch) is taken.
    contexts = [torch.randint(5, vocab, (20,), generator=generator).tolist() for _ in range(3)]
    reasonings = [torch.randint(5, vocab, (n,), generator=generator).tolist() for n in (1, 4, 7, 2, 5)]
    mean, total = cross_log_probs(tiny, contexts, reasonings, temperature=0.7, micro_batch=2, pad_id=0)
    assert total.shape == (5, 3)
    for i, z in enumerate(reasonings):
        for j, x in enumerate(contexts):
            ids = torch.tensor([[*x, *z]])
            response = torch.zeros_like(ids, dtype=torch.bool)
            response[0, len(x):] = True
            with torch.no_grad():
                alone, _ = token_log_probs(tiny, ids, torch.ones_like(ids), response, 0.7, with_entropy=False)
            assert float(total[i, j]) == pytest.approx(float(alone.sum()), abs=1e-4)
            assert float(mean[i, j]) == pytest.approx(float(alone.sum()) / len(z), abs=1e-4)
    # Another micro-batch and padding id, and a repeated context (scored once, the same column).
    other_mean, other_total = cross_log_probs(tiny, [*contexts, contexts[1]], reasonings, temperature=0.7,
                                              micro_batch=5, pad_id=3)
    assert torch.allclose(other_total[:, :3], total, atol=1e-4) and torch.allclose(other_mean[:, :3], mean, atol=1e-5)
    assert torch.equal(other_total[:, 3], other_total[:, 1])


class StateModel(torch.nn.Module):
    """A causal LM stand-in over 8 tokens whose every next-token distribution is set by the row's
    first token (the "state") when ``looks`` is true, and is one fixed distribution otherwise."""

    def __init__(self, looks: bool) -> None:
        super().__init__()
        self.looks = looks
        self.head = torch.nn.Linear(8, 8, bias=False)
        with torch.no_grad():
            self.head.weight.copy_(10 * torch.eye(8))

    def get_decoder(self):
        def backbone(input_ids, attention_mask, **_):
            state = input_ids[:, :1] if self.looks else torch.zeros_like(input_ids[:, :1])
            hidden = torch.nn.functional.one_hot(state, 8).float().expand(-1, input_ids.shape[1], -1)
            return type("Out", (), {"last_hidden_state": hidden})

        return backbone

    def get_output_embeddings(self):
        return self.head


@pytest.mark.parametrize("looks", [True, False])
def test_reasoning_that_copies_the_state_is_retrieved_and_a_template_is_not(looks):
    # Four states, two replies each.  A policy that looks writes its state's token: its reasoning
    # under its own prompt is likely, under another unlikely.  One that does not look writes
    # token 0 whatever the state (rows below carry that text), the same likelihood under every prompt.
    rows = [TurnPair((state, 7), (state if looks else 0,) * 3, group=state) for state in range(4) for _ in range(2)]
    found = first_turn_diagnostics(model_scorer(StateModel(looks), temperature=1.0, micro_batch=3, pad_id=7), rows,
                                   list(range(8)), std_eps=1e-3, ema_decay=0.9, ema_std=None)
    if looks:
        assert found[PREFIX + "mi_estimate"] == pytest.approx(math.log(4), abs=1e-3)
        assert found[PREFIX + "retrieval_accuracy"] == 1.0
    else:
        assert found[PREFIX + "mi_estimate"] == pytest.approx(0.0, abs=1e-6)
        assert found[PREFIX + "retrieval_accuracy"] == found[PREFIX + "retrieval_chance_level"] == 0.25
    assert found[PREFIX + "mi_upper_bound"] == pytest.approx(math.log(4))


def test_first_turn_diagnostics_count_invalid_rows_and_need_two_prompts(tiny):
    rows = [TurnPair((7, 8, 9), (10, 11), group=0), TurnPair((7, 8, 9), (), group=0),
            TurnPair((7, 8, 9), (12,), group=0)]
    found = first_turn_diagnostics(model_scorer(tiny, temperature=1.0, micro_batch=4, pad_id=0), rows, [0, 2],
                                   std_eps=1e-3, ema_decay=0.9, ema_std=None)
    assert found == {"collapse/first_turn_num_total": 3.0, "collapse/first_turn_num_valid": 2.0,
                     "collapse/first_turn_valid_rate": pytest.approx(2 / 3)}
    rows.append(TurnPair((7, 8, 13), (14, 15, 16), group=5))
    found = first_turn_diagnostics(model_scorer(tiny, temperature=1.0, micro_batch=4, pad_id=0), rows, [0, 2, 3],
                                   std_eps=1e-3, ema_decay=0.9, ema_std=(1.0, 2.0))
    assert found[PREFIX + "mi_upper_bound"] == pytest.approx(math.log(2))
    assert found[PREFIX + "marginal_std_ema"] == pytest.approx(0.9 + 0.1 * found[PREFIX + "marginal_std"])
    assert last_ema_std([{"step": 1}, found, {"step": 3}]) == (found[PREFIX + "marginal_std_ema"],
                                                              found[PREFIX + "marginal_std_ema_seq"])
    assert last_ema_std([{"step": 1}]) is None


def test_a_short_run_logs_the_diagnostics_on_schedule_and_resumes_their_moving_average(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    # think=false: the tiny model writes no <think> block, so Z is the whole reply.
    extra = ["chat.think=false", "collapse_detection.compute_freq=2", "checkpoint.every=1", "log.tensorboard=true"]
    train(small("starpo-s", "steps=3", *extra, out=out))
    rows = metrics(out)
    assert [PREFIX + "mi_estimate" in row for row in rows] == [True, True, False]  # steps 1, 2; not 3
    for row in rows[:2]:
        assert row["collapse/first_turn_num_total"] == 8 and row["collapse/first_turn_valid_rate"] == 1.0
        # 8 first turns of 4 seeds: all drawn (num_samples 64), 4 prompts.
        assert row[PREFIX + "mi_upper_bound"] == pytest.approx(math.log(4))
        assert row[PREFIX + "mi_estimate"] <= math.log(4) + 1e-6
        assert 0 < row["time/collapse"] < row["time/step"]
    assert "time/collapse" not in rows[2]
    tags = EventAccumulator(str(out / "tensorboard")).Reload().Tags()["scalars"]
    assert f"train/{PREFIX}mi_estimate" in tags and "train/collapse/first_turn_valid_rate" in tags
    assert (out / "curves.png").stat().st_size > 1000
    # Resumed to step 4 (due): the moving average continues from step 2's, as in one run.
    train(small("starpo-s", "steps=4", *extra, out=out))
    step2, step4 = metrics(out)[1], metrics(out)[3]
    assert step4[PREFIX + "marginal_std_ema"] == pytest.approx(
        0.9 * step2[PREFIX + "marginal_std_ema"] + 0.1 * step4[PREFIX + "marginal_std"])
    # The diagnostics are a free key: a run resumes with them switched off.
    train(small("starpo-s", "steps=5", *extra[:-3], "collapse_detection.compute_freq=0", "checkpoint.every=1",
                out=out))
    assert PREFIX + "mi_estimate" not in metrics(out)[4]


def test_replies_without_reasoning_log_only_the_counts(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    train(small("starpo-s", "steps=1", "collapse_detection.compute_freq=1", out=out))
    row = metrics(out)[0]
    # think=true: the tiny model's six random tokens hold no <think> block, so no row has a Z.
    assert (row["collapse/first_turn_num_total"], row["collapse/first_turn_num_valid"]) == (8, 0)
    assert not any(key.startswith(PREFIX) for key in row)


# -- beyond the first turn: RAGEN-2's trajectory-uniform sample ------------------------------------


def test_the_trajectory_draw_weighs_trajectories_equally_and_takes_only_turns_with_a_z():
    # Trajectory 0: one turn with a Z; 1: 99 with a Z (turn 0 has none); 2: none with a Z.
    turns = [[TurnPair((1,), (2,), group=0)],
             [TurnPair((1,), (), group=1)] + [TurnPair((1, t), (3,), group=1) for t in range(99)],
             [TurnPair((1,), (), group=2)] * 3]
    pairs = sample_trajectory_turns(turns, None, seed=4)
    assert all(turns[m][t].reasoning_ids for m, t in pairs) and (1, 0) not in pairs
    # 100 draws (the turns with a Z), about a third on each trajectory whatever its length; those on
    # trajectory 2 give no pair.
    counts = [sum(m == k for m, _ in pairs) for k in range(2)]
    assert 20 < counts[0] < 45 and 20 < counts[1] < 45 and len(pairs) == sum(counts) < 100
    # A draw is with replacement: trajectory 0's one turn comes up again and again.
    assert pairs.count((0, 0)) == counts[0]
    assert sample_trajectory_turns(turns, 10, seed=4) == sample_trajectory_turns(turns, 10, seed=4)
    assert len(sample_trajectory_turns(turns, 10, seed=4)) <= 10
    assert sample_trajectory_turns(turns, 10, seed=4) != sample_trajectory_turns(turns, 10, seed=5)


@pytest.mark.parametrize("looks", [True, False])
def test_later_turns_that_copy_the_state_are_retrieved_and_a_template_is_not(looks):
    # Four trajectories in states 0..3, two turns each (turn 2's context is longer); one turn has no Z.
    def turn(state, length):
        return TurnPair((state,) + (7,) * length, (state if looks else 0,) * 3, group=state)

    turns = [[turn(state, 1), turn(state, 3)] for state in range(4)] + [[TurnPair((5, 7), (), group=9)]]
    pairs = [(0, 0), (1, 1), (2, 0), (3, 1)]
    found = trajectory_diagnostics(model_scorer(StateModel(looks), temperature=1.0, micro_batch=3, pad_id=7), turns,
                                   pairs, std_eps=1e-3, ema_decay=0.9, ema_std=None)
    assert found["collapse/valid_thinking_rate"] == pytest.approx(8 / 9)
    assert found[TRAJECTORY_PREFIX + "mi_upper_bound"] == pytest.approx(math.log(4))
    if looks:
        assert found[TRAJECTORY_PREFIX + "mi_estimate"] == pytest.approx(math.log(4), abs=1e-3)
        assert found[TRAJECTORY_PREFIX + "retrieval_accuracy"] == 1.0
    else:
        assert found[TRAJECTORY_PREFIX + "mi_estimate"] == pytest.approx(0.0, abs=1e-6)
        assert found[TRAJECTORY_PREFIX + "retrieval_accuracy"] == 0.25
    assert not any(key.startswith(PREFIX) for key in found)


def test_a_run_with_multi_turn_sampling_logs_the_trajectory_sample(tmp_path):
    from ragen_bench.train.trainer import train

    out = tmp_path / "run"
    train(small("starpo-s", "steps=1", "chat.think=false", "collapse_detection.compute_freq=1",
                "collapse_detection.first_turn_enabled=false", "collapse_detection.multi_turn_enabled=true", out=out))
    (row,) = metrics(out)
    assert row["collapse/valid_thinking_rate"] == 1.0  # think=false: every reply is its Z
    assert TRAJECTORY_PREFIX + "mi_estimate" in row and 0 < row["time/collapse"] < row["time/step"]
    assert not any(key.startswith(PREFIX) or key.startswith("collapse/first_turn") for key in row)
