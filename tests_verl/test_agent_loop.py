"""The veRL agent loop plays real episodes through a stand-in for veRL's server manager.

The loop is built the way veRL's agent-loop worker builds it: from the agent-loop YAML the recipe
writes, with ``hydra.utils.instantiate`` and veRL's composed config.  Two stand-in servers:
one samples from the tiny model (real, varied episodes), one replays scripted texts (the edge
cases: stop strings an engine ignores, empty answers, a response budget that runs out).
"""

from __future__ import annotations

import asyncio
import copy

import gymnasium
import hydra
import pytest
import torch
from omegaconf import OmegaConf
from transformers import AutoModelForCausalLM, AutoTokenizer
from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
from verl.trainer.ppo import core_algos
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.workers.rollout.replica import TokenOutput

from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.integrations.verl import job, recipe
from ragen_bench.integrations.verl.data import agent_loop_file
from ragen_bench.starpo.advantages import compute_gae
from ragen_bench.starpo.losses import policy_loss
from ragen_bench.train.batch import build_batch
from ragen_bench.train.policy_agent import TurnSample
from tests_verl.conftest import train_config

torch.set_num_threads(1)
ENV = "RAGEN/Sokoban-6x6-v0"
MAX_NEW_TOKENS = 12
ANSWER = "<think>push</think><answer>Right</answer>"


@pytest.fixture(scope="module")
def setup(tiny_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    config = train_config("starpo-s", [f"env={ENV}", "model=tiny", f"rollout.max_new_tokens={MAX_NEW_TOKENS}", f"out={out}"])
    verl_config = job.compose_verl(recipe.verl_overrides(config))
    agent_loop_file(
        out / "agent_loops.yaml", chat=config.chat, max_new_tokens=MAX_NEW_TOKENS, stop_strings=["</answer>"]
    )
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, local_files_only=True).eval()
    return {"config": config, "verl": verl_config, "entry": OmegaConf.load(out / "agent_loops.yaml")[0],
            "tokenizer": tokenizer, "model": model}


def make_loop(setup, server, verl_config=None, entry=None):
    """The loop as veRL's AgentLoopWorker instantiates it."""
    verl_config = verl_config or setup["verl"]
    return hydra.utils.instantiate(
        entry or setup["entry"],
        trainer_config=DictConfigWrap(config=verl_config),
        server_manager=server,
        tokenizer=setup["tokenizer"],
        processor=None,
        hf_model_type=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(verl_config.data),
        tools=ToolListWrap([]),
    )


def play(loop, seed, session=0):
    params = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
    row = {"extra_info": {"index": 0, "env_id": ENV, "seed": seed, "split": "train"}, "session_id": session,
           "raw_prompt": [], "uid": "u"}
    return asyncio.run(loop.run(params, **row))


class TinyModelServer:
    """Samples from the tiny model with per-call seeded generators; records every call."""

    def __init__(self, model, eos_id):
        self.model, self.eos_id, self.calls = model, eos_id, []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        generator = torch.Generator().manual_seed(1000 + len(self.calls))
        context = torch.tensor([prompt_ids])
        ids, log_probs = [], []
        with torch.no_grad():
            for _ in range(sampling_params["max_tokens"]):
                logits = self.model(input_ids=context).logits[0, -1] / sampling_params["temperature"]
                logp = torch.log_softmax(logits.double(), dim=-1)
                token = int(torch.multinomial(logp.exp(), 1, generator=generator))
                ids.append(token)
                log_probs.append(float(logp[token]))
                context = torch.cat([context, torch.tensor([[token]])], dim=1)
                if token == self.eos_id:
                    break
        self.calls.append({"request_id": request_id, "prompt_ids": list(prompt_ids), "params": dict(sampling_params),
                           "ids": ids, "log_probs": log_probs})
        return TokenOutput(token_ids=ids, log_probs=log_probs)


class ScriptedServer:
    """Answers turn k with ``replies[k]`` tokenised (``None``: nothing at all), ignoring stop strings."""

    def __init__(self, tokenizer, replies):
        self.tokenizer, self.replies, self.calls = tokenizer, list(replies), []

    async def generate(self, request_id, *, prompt_ids, sampling_params, **kwargs):
        reply = self.replies[len(self.calls)]
        ids = [] if reply is None else self.tokenizer.encode(reply, add_special_tokens=False)
        self.calls.append({"prompt_ids": list(prompt_ids), "ids": ids, "params": dict(sampling_params)})
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids))


def stored_rows(outputs, *, uid, session, global_steps=1):
    """What veRL's own V1 agent-loop worker puts into TransferQueue for one call's output(s):
    ``AgentLoopWorkerTQ._agent_loop_postprocess`` run for real (no reward loop, no teacher, no
    processor), with TransferQueue's put captured.  Returns ``{key: {field: value}}`` and the tags."""
    import transfer_queue
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    worker = object.__new__(AgentLoopWorkerTQ.__ray_actor_class__)  # the class under ray.remote
    worker.reward_loop_worker_handles, worker.distillation_enabled, worker.processor = None, False, None
    captured = {}

    async def put(keys, fields, tags, partition_id):
        captured.update(keys=keys, fields=fields, tags=tags, partition_id=partition_id)

    original = transfer_queue.async_kv_batch_put
    transfer_queue.async_kv_batch_put = put
    try:
        asyncio.run(worker._agent_loop_postprocess(copy.deepcopy(outputs), False, uid=uid, session_id=session,
                                                   global_steps=global_steps))
    finally:
        transfer_queue.async_kv_batch_put = original
    assert captured["partition_id"] == "train"
    fields = captured["fields"]
    rows = {key: {name: (fields[name].unbind()[n] if isinstance(fields[name], torch.Tensor) else fields[name][n])
                  for name in fields.keys()} for n, key in enumerate(captured["keys"])}
    return rows, captured["tags"]


def runs(mask):
    """``[(start, end)]`` of each run of ones."""
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def replayed_score(tokenizer, chat, seed, replies):
    episode = ChatEpisode(gymnasium.make(ENV), ChatConfig(**chat), env_id=ENV, seed=seed)
    episode.reset()
    for ids in replies:
        if episode.done:
            break
        episode.step(AgentReply(text=tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)))
    return episode.trajectory().total_reward


@pytest.fixture(scope="module")
def tiny_episodes(setup):
    """Three real episodes (two seeds, two sessions of one) with the tiny model."""
    episodes = []
    for seed, session in ((5, 0), (5, 1), (9, 0)):
        server = TinyModelServer(setup["model"], setup["tokenizer"].eos_token_id)
        episodes.append((seed, server, play(make_loop(setup, server), seed, session)))
    return episodes


def test_prompt_is_the_chat_template_rendering_of_the_first_messages(setup, tiny_episodes):
    tokenizer = setup["tokenizer"]
    for seed, _, out in tiny_episodes:
        episode = ChatEpisode(gymnasium.make(ENV), ChatConfig(**setup["config"].chat), env_id=ENV, seed=seed)
        episode.reset()
        rendered = tokenizer.apply_chat_template(episode.messages, add_generation_prompt=True, tokenize=False)
        assert tokenizer.decode(out.prompt_ids) == rendered


def test_mask_covers_exactly_the_sampled_ids_and_every_call_sees_the_context_so_far(setup, tiny_episodes):
    tokenizer = setup["tokenizer"]
    for _, server, out in tiny_episodes:
        assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
        spans = runs(out.response_mask)
        assert len(spans) == len(server.calls) == out.extra_fields["turns"].__len__() >= 1
        for (start, end), call in zip(spans, server.calls, strict=True):
            assert call["prompt_ids"] == out.prompt_ids + out.response_ids[:start]
            assert out.response_ids[start:end] == call["ids"]  # the tiny model never writes "</answer>"
            assert out.response_logprobs[start:end] == pytest.approx(call["log_probs"])
        for (_, end), (start, _) in zip(spans, spans[1:]):
            between = tokenizer.decode(out.response_ids[end:start])
            assert between.startswith(("<|im_end|>", "\n<|im_start|>user")) and between.endswith("<|im_start|>assistant\n")
        assert out.response_mask[-1] == 1  # the score sits on a masked token
        assert len(out.response_ids) <= setup["verl"].actor_rollout_ref.rollout.response_length
        assert len({call["request_id"] for call in server.calls}) == 1  # sticky session per episode
        assert all(call["params"]["stop"] == ["</answer>"] for call in server.calls)
        assert all(1 <= call["params"]["max_tokens"] <= MAX_NEW_TOKENS for call in server.calls)
    request_ids = {server.calls[0]["request_id"] for _, server, _ in tiny_episodes}
    assert len(request_ids) == len(tiny_episodes)


def test_score_is_the_episode_total_replayed_from_the_sampled_text(setup, tiny_episodes):
    for seed, server, out in tiny_episodes:
        expected = replayed_score(setup["tokenizer"], setup["config"].chat, seed, [c["ids"] for c in server.calls])
        assert out.reward_score == pytest.approx(expected)
        assert out.extra_fields["seed"] == seed and out.extra_fields["env_id"] == ENV
        assert sum(t["reward"] for t in out.extra_fields["turns"]) == pytest.approx(expected)
        rm_scores = out.as_dict()["rm_scores"]  # veRL's own placement of the score
        assert float(rm_scores[-1]) == pytest.approx(expected) and float(rm_scores[:-1].abs().sum()) == 0.0


def local_batch(setup, episodes):
    """The single-machine trainer's batch (``build_batch``) for ``[(seed, [(prompt_ids, ids, log_probs)], out)]``.

    Each turn's sample is what the server was given and what the reply's ids are; the rows
    are checked against the agent loop's output, token for token and mask for mask.
    """
    tokenizer = setup["tokenizer"]
    trajectories, samples = [], {}
    for number, (seed, turns, _) in enumerate(episodes):
        episode = ChatEpisode(gymnasium.make(ENV), ChatConfig(**setup["config"].chat), env_id=ENV, seed=seed,
                              sample=number)
        episode.reset()
        records = []
        for prompt_ids, ids, log_probs in turns:
            ended = ids[-1] == tokenizer.eos_token_id
            records.append(TurnSample(tuple(prompt_ids), tuple(ids), tuple(log_probs), "stop" if ended else "length",
                                      ended))
            text = tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
            episode.step(AgentReply(text=text, completion_tokens=len(ids)))
        trajectories.append(episode.trajectory())
        samples[episode.key] = records
    local = build_batch(trajectories, samples, pad_id=tokenizer.eos_token_id)
    for row, (_, _, out) in enumerate(episodes):
        p, n = len(out.prompt_ids), len(out.response_ids)
        assert local.input_ids[row, : p + n].tolist() == out.prompt_ids + out.response_ids
        assert local.response_mask[row, : p + n].tolist() == [False] * p + [bool(b) for b in out.response_mask]
        assert bool(local.attention_mask[row, p + n :].any()) is False  # nothing after the last reply
        assert float(local.rewards[row, p + n - 1]) == pytest.approx(out.reward_score)
    return local


def test_a_stopped_reply_is_the_same_row_as_in_the_local_trainer(setup):
    tokenizer = setup["tokenizer"]
    server = ScriptedServer(tokenizer, [ANSWER + " trailing words"] * 10)
    out = play(make_loop(setup, server), seed=8)
    closed = tokenizer.encode(ANSWER, add_special_tokens=False) + [tokenizer.eos_token_id]  # end id trained on
    turns = [(call["prompt_ids"], closed, [-0.5] * len(closed)) for call in server.calls]
    local_batch(setup, [(8, turns, out)])


def test_same_batch_advantages_and_losses_as_the_local_trainer(setup, tiny_episodes):
    """The local trainer's batch from the same samples, and veRL's layout: same ids, masks, GAE and loss."""
    episodes = [(seed, [(c["prompt_ids"], c["ids"], c["log_probs"]) for c in server.calls], out)
                for seed, server, out in tiny_episodes]
    local = local_batch(setup, episodes)
    layouts = [out.as_dict() for _, _, out in tiny_episodes]
    width = max(len(layout["responses"]) for layout in layouts)
    verl_mask = torch.zeros(len(layouts), width)
    verl_scores = torch.zeros(len(layouts), width)
    for row, layout in enumerate(layouts):
        n = len(layout["responses"])
        verl_mask[row, :n] = layout["response_mask"].float()
        verl_scores[row, :n] = layout["rm_scores"]

    gen = torch.Generator().manual_seed(0)
    values = torch.randn(local.input_ids.shape, generator=gen, dtype=torch.float64)
    old = -torch.rand(local.input_ids.shape, generator=gen, dtype=torch.float64)
    new = old + 0.3 * torch.randn(local.input_ids.shape, generator=gen, dtype=torch.float64)

    def response_part(full):
        part = torch.zeros(len(layouts), width, dtype=full.dtype)
        for row, (_, _, out) in enumerate(tiny_episodes):
            p, n = len(out.prompt_ids), len(out.response_ids)
            part[row, :n] = full[row, p : p + n]
        return part

    ours, _ = compute_gae(local.rewards.double(), values, local.response_mask, gamma=1.0, lam=1.0)
    theirs, _ = core_algos.compute_gae_advantage_return(verl_scores.double(), response_part(values), verl_mask.double(),
                                                         1.0, 1.0)
    torch.testing.assert_close(response_part(ours)[verl_mask.bool()], theirs[verl_mask.bool()])

    our_loss, _ = policy_loss(new, old, ours, local.response_mask, 0.2, 0.28, 3.0, agg="seq-mean-token-mean")
    their_loss, *_ = core_algos.compute_policy_loss(
        response_part(old), response_part(new), response_part(ours), verl_mask.double(), cliprange=0.2,
        cliprange_low=0.2, cliprange_high=0.28, clip_ratio_c=3.0, loss_agg_mode="seq-mean-token-mean",
    )
    torch.testing.assert_close(our_loss, their_loss)


def test_a_stop_string_the_engine_ignored_is_cut_and_the_reply_closed(setup):
    tokenizer = setup["tokenizer"]
    server = ScriptedServer(tokenizer, [ANSWER + " and then some more words", ANSWER + "<|im_end|>"] + [ANSWER] * 8)
    out = play(make_loop(setup, server), seed=3)
    first = runs(out.response_mask)[0]
    closed = tokenizer.encode(ANSWER, add_special_tokens=False) + [tokenizer.eos_token_id]
    assert out.response_ids[first[0] : first[1]] == closed  # cut after "</answer>", end-of-turn id appended
    assert tokenizer.decode(server.calls[1]["prompt_ids"]).endswith(
        ANSWER + "<|im_end|>\n<|im_start|>user\n" + server_turn_text(tokenizer, server.calls[1]["prompt_ids"])
    )
    # A reply that closed itself gets no second end-of-turn id.
    second = runs(out.response_mask)[1]
    assert out.response_ids[second[0] : second[1]] == closed
    assert out.response_logprobs[first[1] - 1] == 0.0  # the appended id was not sampled


def server_turn_text(tokenizer, prompt_ids):
    """The text of the last user message and the generation prompt (whatever the env wrote)."""
    text = tokenizer.decode(prompt_ids)
    return text[text.rindex("<|im_start|>user\n") + len("<|im_start|>user\n") :]


def test_an_empty_last_reply_does_not_leave_template_ids_at_the_end(setup):
    server = ScriptedServer(setup["tokenizer"], ["<think>x</think><answer>Up</answer>"] + [None] * 10)
    out = play(make_loop(setup, server), seed=4)
    assert out.response_mask[-1] == 1
    assert len(server.calls) >= 2  # the empty replies were played as turns (format penalties)
    assert out.reward_score == pytest.approx(
        replayed_score(setup["tokenizer"], setup["config"].chat, 4, [c["ids"] for c in server.calls])
    )


def test_an_empty_first_reply_still_extends_the_context_by_its_turn(setup):
    tokenizer = setup["tokenizer"]
    server = ScriptedServer(tokenizer, [None] + ["<think>x</think><answer>Up</answer>"] * 10)
    out = play(make_loop(setup, server), seed=4)
    second_prompt = tokenizer.decode(server.calls[1]["prompt_ids"])
    assert second_prompt.startswith(tokenizer.decode(out.prompt_ids))
    assert "<|im_start|>assistant\n<|im_end|>\n<|im_start|>user\n" in second_prompt  # the empty reply, closed
    assert runs(out.response_mask)[0][0] > 0  # the first sampled ids follow template ids


def test_no_token_in_any_turn_is_a_clear_error(setup):
    with pytest.raises(RuntimeError, match="returned no token for any turn of RAGEN/Sokoban-6x6-v0 seed 4"):
        play(make_loop(setup, ScriptedServer(setup["tokenizer"], [None] * 10)), seed=4)


def test_a_response_budget_that_runs_out_ends_the_episode_on_a_reply(setup):
    verl_config = copy.deepcopy(setup["verl"])
    verl_config.actor_rollout_ref.rollout.response_length = 60
    server = ScriptedServer(setup["tokenizer"], ["<think>a</think><answer>Up</answer>"] * 10)
    out = play(make_loop(setup, server, verl_config=verl_config), seed=6)
    assert out.extra_fields["stopped_early"] is True
    assert len(out.response_ids) <= 60 and out.response_mask[-1] == 1
    assert all(call["params"]["max_tokens"] >= 1 for call in server.calls)
    played = replayed_score(setup["tokenizer"], setup["config"].chat, 6, [c["ids"] for c in server.calls])
    assert out.reward_score == pytest.approx(played)


@pytest.mark.parametrize(
    "change, row, message",
    [
        ("prompt_length", None, "data.max_prompt_length=40"),
        (None, {"extra_info": {"seed": 1}}, "lacks ['env_id']"),
        (None, {}, "lacks ['env_id', 'seed']"),
    ],
)
def test_rows_and_configs_the_loop_cannot_play_are_clear_errors(setup, change, row, message):
    verl_config = copy.deepcopy(setup["verl"])
    if change == "prompt_length":
        verl_config.actor_rollout_ref.rollout.prompt_length = 40
    loop = make_loop(setup, ScriptedServer(setup["tokenizer"], [ANSWER] * 10), verl_config=verl_config)
    kwargs = row if row is not None else {"extra_info": {"env_id": ENV, "seed": 1}}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        asyncio.run(loop.run({"temperature": 1.0}, **kwargs))


def windowed_loop(setup, window, replies, **entry_changes):
    entry = OmegaConf.merge(setup["entry"], {"chat": {"history_window": window}, **entry_changes})
    server = ScriptedServer(setup["tokenizer"], replies)
    return make_loop(setup, server, entry=entry), server


WINDOW_REPLIES = [ANSWER, "<think>up</think><answer>Up</answer>", "no tags at all", "<answer>Left</answer>"] * 3


@pytest.mark.parametrize("window", [1, 2])
def test_a_context_window_returns_the_local_trainers_per_turn_rows(setup, window):
    """single_turn (1) and limited_multi_turn k=2: one output per turn, the windowed prompt the local trainer's
    policy agent renders (and eval's hf agent sends), then the reply; the episode's total on the last row."""
    tokenizer = setup["tokenizer"]
    loop, server = windowed_loop(setup, window, WINDOW_REPLIES)
    outputs = play(loop, seed=5)
    chat = dict(setup["config"].chat, history_window=window)
    episode = ChatEpisode(gymnasium.make(ENV), ChatConfig(**chat), env_id=ENV, seed=5)
    episode.reset()
    layout = loop.layout
    turns, records = [], []
    for call in server.calls:
        prompt = layout.prompt_ids(episode.messages)
        assert call["prompt_ids"] == prompt  # the rendering of the windowed messages, afresh each turn
        ids = loop.stops.closed(call["ids"])[0]  # cut at the stop string and closed, as the loop trains it
        turns.append((prompt, ids))
        records.append(TurnSample(tuple(prompt), tuple(ids), (-0.5,) * len(ids), "stop", True))
        episode.step(AgentReply(text=tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False),
                                completion_tokens=len(ids)))
    assert episode.done and len(outputs) == len(turns) > 2
    total = episode.trajectory().total_reward
    local = build_batch([episode.trajectory()], {episode.key: records}, pad_id=tokenizer.eos_token_id, per_turn=True)
    for t, (out, (prompt, ids)) in enumerate(zip(outputs, turns, strict=True)):
        assert out.prompt_ids == prompt and out.response_ids == ids and out.response_mask == [1] * len(ids)
        n = len(prompt) + len(ids)
        assert local.input_ids[t, :n].tolist() == prompt + ids
        assert local.response_mask[t, :n].tolist() == [False] * len(prompt) + [True] * len(ids)
        assert out.reward_score == (pytest.approx(total) if t == len(outputs) - 1 else None)
        assert [turn["tokens"] for turn in out.extra_fields["turns"]] == [len(ids)]
    assert float(local.rewards.sum(dim=1)[-1]) == pytest.approx(total)


def test_single_turn_prompts_hold_no_earlier_reply(setup):
    loop, server = windowed_loop(setup, 1, WINDOW_REPLIES)
    outputs = play(loop, seed=5)
    first_reply = setup["tokenizer"].decode(server.calls[0]["ids"], skip_special_tokens=True)
    later = setup["tokenizer"].decode(outputs[1].prompt_ids)
    assert "<think>push</think>" in first_reply and "<think>push</think>" not in later
    assert later.count("<|im_start|>assistant") == 1 and "Turn 2:" in later  # only the generation prompt
    assert len(outputs[1].prompt_ids) < len(outputs[0].prompt_ids) + len(server.calls[0]["ids"])


def test_an_empty_reply_has_no_row_and_its_record_goes_with_the_next_row(setup):
    replies = [None, ANSWER, None, None, ANSWER, None] + [ANSWER] * 6
    loop, server = windowed_loop(setup, 2, replies)
    outputs = play(loop, seed=5)
    tokens = [[turn["tokens"] for turn in out.extra_fields["turns"]] for out in outputs]
    assert all(out.response_ids for out in outputs)
    assert tokens[0][0] == 0 and tokens[0][1] > 0  # turn 1 (empty) rides with turn 2
    assert tokens[1][:3] == [0, 0, tokens[1][2]] and tokens[1][2] > 0  # turns 3 and 4 with turn 5
    assert sum(len(t) for t in tokens) == len(server.calls)  # every turn played has its record, once


def test_veRL_grpo_on_windowed_rows_is_the_local_trainers_episode_grpo(setup):
    """veRL's own multi-output GRPO (each session's last row, broadcast) against ``compute_grpo`` with
    ``episode_ids`` on the same rows: every turn gets its episode's advantage, each episode counted once."""
    from verl import DataProto
    from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories

    from ragen_bench.starpo.advantages import compute_grpo

    stored, groups, episodes = {}, [], []
    many = "<think>go</think><answer>Left || Down || Right</answer>"  # three moves a turn: three step penalties
    plans = {(3, 0): [ANSWER] * 12, (3, 1): [many, "garbage"] * 6, (7, 0): ["x"] * 12, (7, 1): [many] * 12}
    for number, ((seed, session), replies) in enumerate(plans.items()):
        outputs = play(windowed_loop(setup, 1, replies)[0], seed=seed, session=session)
        rows, _ = stored_rows(outputs, uid=f"u{seed}", session=session)  # veRL's own worker writes them
        assert list(rows) == [f"u{seed}_{session}_{turn}" for turn in range(len(outputs))]
        stored.update(rows)
        groups += [seed] * len(rows)
        episodes += [number] * len(rows)
    keys = list(stored)
    width = max(len(row["responses"]) for row in stored.values())
    mask = torch.zeros(len(keys), width)
    scores = torch.zeros(len(keys), width)
    for r, row in enumerate(stored.values()):
        n = len(row["responses"])
        mask[r, :n] = row["response_mask"].float()
        scores[r, :n] = row["rm_scores"]  # veRL copied the last row's score onto every row of the episode
    last_score = {key.rsplit("_", 1)[0]: float(row["rm_scores"].sum()) for key, row in stored.items()}
    data = DataProto.from_dict(tensors={"token_level_rewards": scores, "response_mask": mask},
                               non_tensors={"uid": [f"u{g}" for g in groups]})
    theirs = compute_advantage_for_multi_trajectories(data, batch_keys=keys, adv_estimator="grpo", num_repeat=2,
                                                      norm_adv_by_std_in_grpo=True).batch["advantages"]
    assert all(float(row["rm_scores"].sum()) == last_score[key.rsplit("_", 1)[0]] for key, row in stored.items())
    ours, _ = compute_grpo(scores, mask, groups, episode_ids=episodes)
    torch.testing.assert_close(theirs.float(), ours.float(), rtol=1e-5, atol=1e-5)
    assert len(set(last_score.values())) > 2, last_score  # the groups' scores differ


def test_overlong_charges_need_the_full_history(setup):
    with pytest.raises(Exception, match="overlong_buffer needs the full history"):
        windowed_loop(setup, 2, [], overlong_buffer={"len": 4, "penalty_factor": 1.0})


def test_dapo_overlong_charge_is_the_local_trainers_on_the_same_row(setup):
    """Each reply near the token limit pays what ``overlong_rewards`` charges it on the local layout."""
    from ragen_bench.starpo.shaping import overlong_rewards

    tokenizer = setup["tokenizer"]
    replies = [ANSWER, "<answer>Up</answer>", "a long reply that runs into the cap " * 3] + [ANSWER] * 8
    plain = play(make_loop(setup, ScriptedServer(tokenizer, replies)), seed=5)
    entry = OmegaConf.merge(setup["entry"], {"overlong_buffer": {"len": 8, "penalty_factor": 0.5}})
    out = play(make_loop(setup, ScriptedServer(tokenizer, replies), entry=entry), seed=5)
    mask = torch.tensor([out.response_mask])
    local = overlong_rewards(mask, MAX_NEW_TOKENS, 8, 0.5)
    charges = [turn["overlong_penalty"] for turn in out.extra_fields["turns"]]
    assert out.response_ids == plain.response_ids and out.response_mask == plain.response_mask
    assert charges == pytest.approx(local[0][local[0] != 0].tolist() + [0.0] * (len(charges) - int((local != 0).sum())))
    assert min(charges) == -0.5  # the reply cut at max_new_tokens pays the whole factor
    assert out.reward_score == pytest.approx(plain.reward_score + float(local.sum()))


def test_a_bad_overlong_buffer_is_refused_when_the_loop_is_built(setup):
    entry = OmegaConf.merge(setup["entry"], {"overlong_buffer": {"len": MAX_NEW_TOKENS + 1}})
    with pytest.raises(Exception, match="overlong buffer must be in 1..max_length"):
        make_loop(setup, ScriptedServer(setup["tokenizer"], []), entry=entry)
