"""The policy agent, its sampler and cache patches, and the training-batch builder (ragen_bench.train), on the tiny local model.

Real Bandit episodes go through ``run_lockstep``; the checks compare the training batch with
what was independently observable: the text the env received, the prompts the eval harness
renders, and a fresh forward pass of the model over the finished rows.
"""

from __future__ import annotations

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import ragen_bench  # noqa: E402,F401  (registers the env ids)
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path  # noqa: E402
from ragen_bench.chat import AgentError, AgentRequest, ChatConfig, ChatEpisode, run_lockstep  # noqa: E402
from ragen_bench.train.batch import build_batch  # noqa: E402
from ragen_bench.train.policy_agent import PolicyAgent, TurnSample  # noqa: E402

BANDIT = "RAGEN/Bandit-v0"


@pytest.fixture(scope="module")
def tiny():
    return load_model(resolve_model_path("tiny"))


def _agent(tiny, **options) -> PolicyAgent:
    model, tokenizer = tiny
    sampling = {"max_new_tokens": 12, "temperature": 1.0, "top_p": 1.0, "sampling_seed": 0}
    sampling.update({key: options.pop(key) for key in list(options) if key in sampling})
    return PolicyAgent(model, tokenizer, sampling=SamplingSettings(**sampling), **options)


def _episodes(seeds, group_size, config=ChatConfig()):
    return [
        ChatEpisode(gymnasium.make(BANDIT), config, env_id=BANDIT, seed=seed, sample=sample, split="train")
        for seed in seeds
        for sample in range(group_size)
    ]


def _rollout(agent, seeds=(3, 4), group_size=3):
    trajectories = run_lockstep(_episodes(seeds, group_size), agent)
    samples = agent.pop_samples(t.episode_key for t in trajectories)
    return trajectories, samples


@pytest.fixture(scope="module")
def rollout(tiny):
    """Six 5-turn Bandit episodes (two seed groups of three) at T = 0.7, and their batch."""
    agent = _agent(tiny, temperature=0.7, sampling_seed=5)
    trajectories, samples = _rollout(agent)
    return agent, trajectories, samples, build_batch(trajectories, samples, pad_id=agent.pad_id)


def _mask_runs(mask_row):
    """(start, end) of each run of True in a 1-D bool tensor."""
    runs, start = [], None
    for position, value in enumerate(mask_row.tolist() + [False]):
        if value and start is None:
            start = position
        elif not value and start is not None:
            runs.append((start, position))
            start = None
    return runs


def _fresh_log_probs(model, batch, temperature):
    """log p(input_ids[t] | input_ids[:t]) at temperature T from one forward pass (position 0: 0)."""
    with torch.inference_mode():
        logits = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits.float()
    picked = torch.log_softmax(logits[:, :-1] / temperature, dim=-1).gather(-1, batch.input_ids[:, 1:, None])[..., 0]
    return torch.cat([torch.zeros(len(picked), 1), picked], dim=1)


# -- the batch holds what was sampled ---------------------------------------------------------


def test_every_turn_of_every_episode_trains_on_the_sampled_ids(rollout):
    agent, trajectories, samples, batch = rollout
    assert [t.num_turns for t in trajectories] == [5] * 6  # the tiny model never answers: all turns played
    for b, trajectory in enumerate(trajectories):
        runs = _mask_runs(batch.response_mask[b])
        turns = samples[trajectory.episode_key]
        assert len(runs) == len(turns) == 5  # one masked run per reply, nothing else masked
        for (start, end), sample, record in zip(runs, turns, trajectory.turns, strict=True):
            trained = batch.input_ids[b, start:end].tolist()
            assert trained == list(sample.response_ids)
            # ... and those are the tokens whose text the env parsed.
            assert agent.tokenizer.decode(trained, skip_special_tokens=True) == record.raw_response
        assert batch.attention_mask[b].sum() == len(turns[-1].prompt_ids) + len(turns[-1].response_ids)
    assert batch.group_ids == [3, 3, 3, 4, 4, 4]
    assert torch.equal(batch.scores, torch.tensor([t.total_reward for t in trajectories]))


def test_old_log_probs_equal_a_fresh_forward_pass_at_the_sampling_temperature(rollout):
    agent, _, _, batch = rollout
    fresh = _fresh_log_probs(agent.model, batch, temperature=0.7)
    mask = batch.response_mask
    assert mask.sum() > 200
    assert torch.allclose(batch.old_log_probs[mask], fresh[mask], atol=1e-4, rtol=0)
    assert not batch.old_log_probs[~mask].any()
    # A different temperature gives other numbers: the check above is sensitive to it.
    assert not torch.allclose(batch.old_log_probs[mask], _fresh_log_probs(agent.model, batch, 1.0)[mask], atol=1e-2)


def test_each_turn_prompt_is_a_prefix_of_the_row_and_turn_one_is_the_eval_prompt(rollout):
    agent, trajectories, samples, batch = rollout
    tokenizer = agent.tokenizer
    for b, trajectory in enumerate(trajectories):
        turns = samples[trajectory.episode_key]
        row = batch.input_ids[b].tolist()
        eval_prompt = tokenizer.apply_chat_template(trajectory.messages[:2], add_generation_prompt=True, tokenize=False)
        assert list(turns[0].prompt_ids) == tokenizer.encode(eval_prompt, add_special_tokens=False)
        for k, sample in enumerate(turns, start=1):
            assert row[: len(sample.prompt_ids)] == list(sample.prompt_ids)
            # Turn k's context is the eval harness's conversation with each earlier reply as sampled.
            messages = [dict(m) for m in trajectory.messages[: 2 * k]]
            for j, earlier in enumerate(turns[: k - 1]):
                reply = earlier.response_ids[:-1] if earlier.ended else earlier.response_ids
                messages[2 + 2 * j]["content"] = tokenizer.decode(list(reply), skip_special_tokens=False)
            expected = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            assert tokenizer.decode(list(sample.prompt_ids), skip_special_tokens=False) == expected


def test_rewards_sit_on_the_last_response_token_or_on_each_turn_end(rollout):
    _, trajectories, samples, batch = rollout
    by_turn = build_batch(trajectories, samples, pad_id=0, score_placement="turn")
    for b, trajectory in enumerate(trajectories):
        ends = [end - 1 for _, end in _mask_runs(batch.response_mask[b])]
        assert batch.rewards[b].nonzero().flatten().tolist() in ([ends[-1]], [])
        assert batch.rewards[b, ends[-1]] == pytest.approx(trajectory.total_reward)
        expected = torch.zeros_like(by_turn.rewards[b])
        for end, record in zip(ends, trajectory.turns, strict=True):
            expected[end] = record.reward
        assert torch.allclose(by_turn.rewards[b], expected)
    assert by_turn.rewards.sum().item() == pytest.approx(sum(t.total_reward for t in trajectories), abs=1e-5)
    assert all(t.total_reward != 0 for t in trajectories)  # format penalties make the placement visible


def test_length_cut_replies_hold_exactly_max_new_tokens_and_no_end_token(rollout):
    agent, _, samples, _ = rollout
    turns = [sample for episode in samples.values() for sample in episode]
    cut = [s for s in turns if s.finish_reason == "length"]
    assert cut and all(len(s.response_ids) == 12 and not s.ended for s in cut)
    assert all(s.ended == (s.response_ids[-1] == agent.end_id) for s in turns)


# -- stopping -----------------------------------------------------------------------------


def test_generation_stops_right_after_a_stop_string_and_closes_the_turn(tiny):
    request = AgentRequest(messages=[{"role": "user", "content": "Turn 1: pull an arm"}], episode_key="e/0", turn=1)
    free = _agent(tiny, stop_strings=(), max_new_tokens=24)
    free.act([request])
    sampled = free.samples("e/0")[0]
    tokenizer = free.tokenizer
    stop = tokenizer.decode(list(sampled.response_ids[4:6]))
    assert stop.strip()
    cut = next(i for i in range(1, 25) if stop in tokenizer.decode(list(sampled.response_ids[:i])))

    stopping = _agent(tiny, stop_strings=(stop,), max_new_tokens=24)
    reply = stopping.act([request])[0]
    stopped = stopping.samples("e/0")[0]
    assert list(stopped.response_ids) == [*sampled.response_ids[:cut], tokenizer.eos_token_id]
    assert stopped.ended and stopped.finish_reason == reply.finish_reason == "stop"
    assert stopped.log_probs[:cut] == sampled.log_probs[:cut]
    assert reply.completion_tokens == cut + 1 and stop in reply.text


@settings(max_examples=60, deadline=None)
@given(
    before=st.text(alphabet="abc <>/answer|\n", max_size=30),
    after=st.text(alphabet="abc <>/answer|\n", max_size=10),
)
def test_the_answer_stop_string_is_found_at_the_token_that_completes_it(tiny, before, after):
    agent = _agent(tiny)  # stop_strings defaults to </answer>
    ids = agent.tokenizer.encode(before + "</answer>" + after, add_special_tokens=False)
    hits = [agent.hits_stop_string(ids[:i]) for i in range(1, len(ids) + 1)]
    contains = ["</answer>" in agent.tokenizer.decode(ids[:i]) for i in range(1, len(ids) + 1)]
    assert hits.index(True) == contains.index(True)


# -- determinism and shared prompts ---------------------------------------------------------


def _requests(prompts, turn=1):
    return [
        AgentRequest(messages=[{"role": "user", "content": text}], episode_key=f"env/train/7/{i}", turn=turn)
        for i, text in enumerate(prompts)
    ]


def test_samples_depend_on_the_seed_and_request_only_not_on_the_batch(tiny):
    requests = _requests(["Turn 1: arm A or arm B?", "Turn 1: state # _ P", "Turn 1: Up || Left"])
    first = _agent(tiny, sampling_seed=11)
    first.act(requests)
    again = _agent(tiny, sampling_seed=11)
    again.act(requests[1:2])
    other_seed = _agent(tiny, sampling_seed=12)
    other_seed.act(requests)
    key = requests[1].episode_key
    alone, batched = again.samples(key)[0], first.samples(key)[0]
    assert alone.response_ids == batched.response_ids
    assert alone.log_probs == pytest.approx(batched.log_probs, abs=1e-5)  # padding moves only the last bits
    repeat = _agent(tiny, sampling_seed=11)
    repeat.act(requests)
    assert [repeat.samples(r.episode_key) for r in requests] == [first.samples(r.episode_key) for r in requests]
    assert [other_seed.samples(r.episode_key) for r in requests] != [first.samples(r.episode_key) for r in requests]


def test_a_group_with_one_prompt_is_prefilled_once_and_samples_as_naive_batching_does(tiny):
    requests = _requests(["Turn 1: same prompt for the group"] * 4 + ["Turn 1: a different, longer prompt here"])
    model = tiny[0]
    prefill_rows = []
    hook = model.register_forward_pre_hook(
        lambda module, args, kwargs: prefill_rows.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True
    )
    try:
        shared, naive = _agent(tiny), _agent(tiny, share_prompts=False)
        shared.act(requests)
        shared_calls = list(prefill_rows)
        prefill_rows.clear()
        naive.act(requests)
    finally:
        hook.remove()
    assert shared_calls[0][0] == 2 and prefill_rows[0][0] == 5  # distinct prompts vs every request
    assert all(rows[1] == 1 for rows in shared_calls[1:])  # then one new token per live row
    for request in requests:
        a, b = shared.samples(request.episode_key)[0], naive.samples(request.episode_key)[0]
        assert a.response_ids == b.response_ids and a.prompt_ids == b.prompt_ids
        assert a.log_probs == pytest.approx(b.log_probs, abs=1e-5)
    group = {shared.samples(r.episode_key)[0].response_ids for r in requests[:4]}
    assert len(group) == 4  # each member draws with its own generator


def test_top_p_log_probs_are_renormalised_over_the_nucleus(tiny):
    agent = _agent(tiny, top_p=0.5, max_new_tokens=8)
    trajectories, samples = _rollout(agent, seeds=(3,), group_size=2)
    batch = build_batch(trajectories, samples, pad_id=agent.pad_id)
    fresh = _fresh_log_probs(agent.model, batch, temperature=1.0)
    sampled = batch.response_mask.clone()
    for b, trajectory in enumerate(trajectories):  # the appended end tokens carry the untruncated log-prob
        for (start, end), sample in zip(_mask_runs(batch.response_mask[b]), samples[trajectory.episode_key]):
            sampled[b, end - 1] &= not sample.ended
    gain = batch.old_log_probs[sampled] - fresh[sampled]
    assert (gain >= -1e-5).all() and (gain > 0.1).any()  # p / mass kept, mass kept <= 1
    assert (batch.old_log_probs[sampled] <= 1e-6).all()


# -- refusals ---------------------------------------------------------------------------------


def test_greedy_and_empty_stop_strings_are_refused(tiny):
    with pytest.raises(ValueError, match="temperature must be > 0"):
        _agent(tiny, temperature=0.0)
    with pytest.raises(ValueError, match="stop_strings must be non-empty"):
        _agent(tiny, stop_strings=("",))
    with pytest.raises(ValueError, match="generate_batch"):
        _agent(tiny, generate_batch=0)


def test_a_later_turn_without_its_history_is_refused(tiny):
    agent = _agent(tiny)
    with pytest.raises(AgentError, match="without its earlier turns"):
        agent.act(_requests(["Turn 2: where did turn 1 go?"], turn=2))
    windowed = ChatConfig(history_window=1)
    with pytest.raises(AgentError, match="history_window=None"):
        run_lockstep(
            [ChatEpisode(gymnasium.make(BANDIT), windowed, env_id=BANDIT, seed=1, split="train")], _agent(tiny)
        )


def test_build_batch_refuses_samples_that_do_not_belong_to_the_trajectory(rollout):
    _, trajectories, samples, _ = rollout
    first, second = trajectories[0], trajectories[1]
    with pytest.raises(ValueError, match="no samples for episode"):
        build_batch([first], {}, pad_id=0)
    with pytest.raises(ValueError, match="5 turns but 4 samples"):
        build_batch([first], {first.episode_key: samples[first.episode_key][:4]}, pad_id=0)
    swapped = samples[first.episode_key][:4] + samples[second.episode_key][4:]
    with pytest.raises(ValueError, match="turn 1 is not a prefix|completion tokens"):
        build_batch([first], {first.episode_key: swapped}, pad_id=0)
    shortened = list(samples[first.episode_key])
    last = shortened[-1]
    shortened[-1] = TurnSample(last.prompt_ids, last.response_ids[:-1], last.log_probs[:-1], "length", False)
    with pytest.raises(ValueError, match="turn 5: the record has"):
        build_batch([first], {first.episode_key: shortened}, pad_id=0)
    with pytest.raises(ValueError, match="score_placement"):
        build_batch([first], samples, pad_id=0, score_placement="first")
    with pytest.raises(ValueError, match="at least one trajectory"):
        build_batch([], samples, pad_id=0)


def test_make_agent_builds_the_policy_agent_by_its_factory_path():
    from ragen_bench.agents import make_agent

    target = "ragen_bench.train.policy_agent:make_policy_agent"
    agent = make_agent(target, model="tiny", max_new_tokens=4, stop_strings=("</answer>", "\n\n"))
    try:
        replies = agent.act(_requests(["Turn 1: go"]))
    finally:
        agent.close()
    assert isinstance(agent, PolicyAgent) and agent.name == "policy:tiny"
    assert 1 <= replies[0].completion_tokens <= 5  # 4 sampled, plus the end token after a stop string
    with pytest.raises(AgentError, match="stop_strings"):
        make_agent(target, model="tiny", stop_strings="</answer>")


def test_later_turns_prefill_only_what_their_context_gained_and_sample_the_same(tiny):
    model = tiny[0]
    widths = []
    hook = model.register_forward_pre_hook(
        lambda module, args, kwargs: widths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        reused = _rollout(_agent(tiny, sampling_seed=2), seeds=(5,), group_size=2)[1]
        reuse_widths = list(widths)
        widths.clear()
        recomputed = _rollout(_agent(tiny, sampling_seed=2, reuse_cache=False), seeds=(5,), group_size=2)[1]
    finally:
        hook.remove()
    for key, turns in reused.items():
        for a, b in zip(turns, recomputed[key], strict=True):
            assert a.prompt_ids == b.prompt_ids and a.response_ids == b.response_ids
            assert a.log_probs == pytest.approx(b.log_probs, abs=1e-4)
    prompt_2 = len(next(iter(reused.values()))[1].prompt_ids)
    prefills = [w for w in reuse_widths if w > 1]  # decode steps feed one token per row
    assert len(prefills) == 5 and max(prefills[1:]) < prompt_2 // 3  # turn 1 in full, then the new ids only
    assert sorted(w for w in widths if w > 1)[1] >= prompt_2  # without reuse every turn prefills its context


_CACHE_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.integers(1, 5)),
        st.tuples(st.just("select"), st.lists(st.integers(0, 3), min_size=1, max_size=4, unique=True)),
        st.tuples(st.just("reorder"), st.lists(st.integers(0, 3), min_size=1, max_size=6)),
    ),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(first=st.integers(1, 6), room=st.integers(0, 4), steps=_CACHE_STEPS)
def test_the_growing_cache_layer_holds_what_a_dynamic_layer_holds(first, room, steps):
    from transformers.cache_utils import DynamicLayer

    from ragen_bench.train.cache_patches import growing_layer_class

    growing, dynamic = growing_layer_class()(room), DynamicLayer()
    generator = torch.Generator().manual_seed(first * 100 + room)
    batch = 4

    def update(width):
        keys, values = torch.randn((2, batch, 2, width, 3), generator=generator)
        got, want = growing.update(keys, values), dynamic.update(keys, values)
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))

    update(first)
    for kind, argument in steps:
        if kind == "update":
            update(argument)
        else:
            rows = torch.tensor([row % batch for row in argument])
            for layer in (growing, dynamic):
                layer.batch_select_indices(rows) if kind == "select" else layer.reorder_cache(rows)
            batch = len(rows)
        assert torch.equal(growing.keys, dynamic.keys) and torch.equal(growing.values, dynamic.values)


def test_the_growing_cache_layer_writes_a_decoding_step_in_place():
    from ragen_bench.train.cache_patches import growing_layer_class

    layer = growing_layer_class()(3)
    layer.update(torch.zeros(2, 2, 5, 4), torch.zeros(2, 2, 5, 4))
    buffer = layer.buffers[0]
    for _ in range(3):  # the room: three one-token steps land in the same buffer
        layer.update(torch.ones(2, 2, 1, 4), torch.ones(2, 2, 1, 4))
        assert layer.buffers[0] is buffer and layer.keys.data_ptr() == buffer.data_ptr()
    layer.update(torch.ones(2, 2, 1, 4), torch.ones(2, 2, 1, 4))  # out of room: moved, with room again
    assert layer.buffers[0] is not buffer and layer.buffers[0].shape[2] == 9 + 3
    assert torch.equal(layer.keys[:, :, 5:], torch.ones(2, 2, 4, 4)) and not layer.keys[:, :, :5].any()


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 4), kv_heads=st.sampled_from([1, 2, 3]), group=st.sampled_from([1, 3]),
    keys=st.integers(1, 9), masked=st.booleans(), seed=st.integers(0, 2**16),
)
def test_grouped_decode_attention_equals_sdpa(batch, kv_heads, group, keys, masked, seed):
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from ragen_bench.train.cache_patches import decode_attention

    generator = torch.Generator().manual_seed(seed)
    query = torch.randn((batch, kv_heads * group, 1, 8), generator=generator)
    key, value = torch.randn((2, batch, kv_heads, keys, 8), generator=generator)
    mask = None
    if masked:  # holes where a row was padded; the last key (the row's own token) always attends
        mask = torch.rand((batch, 1, 1, keys), generator=generator) < 0.6
        mask[..., -1] = True
    module = torch.nn.Module()
    module.num_key_value_groups, module.is_causal, module.training = group, True, False
    want, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=0.3)
    got, _ = decode_attention(module, query, key, value, mask, scaling=0.3)
    assert got.shape == want.shape == (batch, 1, kv_heads * group, 8)
    assert torch.allclose(got, want, atol=1e-5)


def test_decoding_with_grouped_attention_samples_what_sdpa_samples_and_restores_the_model(tiny, monkeypatch):
    import contextlib

    from ragen_bench.train import cache_patches

    model = tiny[0]
    assert model.config._attn_implementation == "sdpa"
    requests = [_episodes([7], 4)[i] for i in range(4)]
    for episode in requests:
        episode.reset()
    from transformers import AttentionInterface

    calls = []
    cache_patches.register_grouped_decode()

    def counted(*args, **kwargs):
        calls.append(args[1].shape[2])  # query positions
        return cache_patches.decode_attention(*args, **kwargs)

    monkeypatch.setitem(AttentionInterface._global_mapping, cache_patches.GROUPED_DECODE, counted)
    grouped = _agent(tiny, max_new_tokens=16).act([e.request() for e in requests])
    assert model.config._attn_implementation == "sdpa", "the model's own setting is back"
    layers = model.config.num_hidden_layers
    assert calls.count(1) >= layers and max(calls) > 1, "decoding steps attend through it, the prefill through sdpa"
    monkeypatch.setattr(cache_patches, "grouped_decode_attention", lambda model: contextlib.nullcontext())
    plain = _agent(tiny, max_new_tokens=16).act([e.request() for e in requests])
    assert grouped == plain
