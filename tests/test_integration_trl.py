"""TRL 1.16's GRPOTrainer on Sokoban through both paths of ragen_bench.integrations.trl, on the tiny model.

Each path runs two GRPO steps on the CPU.  What the trainer was handed is then checked against
what is independently observable: the chat layer's prompt for each seed, its token layout of the
template text between replies, and a replay of the decoded replies on a fresh env.
"""

from __future__ import annotations

import os

import gymnasium
import pytest

trl = pytest.importorskip("trl")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func and environment_factory are "experimental"

import ragen_bench  # noqa: E402,F401  (registers the env ids)
from ragen_bench.agents.local_models import load_model  # noqa: E402
from ragen_bench.agents.sampling import resolve_model_path  # noqa: E402
from ragen_bench.chat import AgentReply, ChatEpisode, TokenLayout  # noqa: E402
from ragen_bench.integrations import trl as ragen_trl  # noqa: E402
from ragen_bench.integrations.tasks import chat_config, first_messages  # noqa: E402

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
CHAT = {"max_turns": 3}  # three replies an episode keep the test short; the layout is the same at five


def _config(tmp_path, **overrides):
    settings = dict(output_dir=str(tmp_path), use_cpu=True, bf16=False, max_steps=2, per_device_train_batch_size=4,
                    num_generations=2, max_completion_length=256, learning_rate=1e-3, logging_steps=1,
                    report_to="none", save_strategy="no", seed=0)
    return trl.GRPOConfig(**(settings | overrides))


def _tiny():
    model, tokenizer = load_model(resolve_model_path("tiny"))
    tokenizer.padding_side = "left"  # TRL's rule for its processing class
    return model, tokenizer


def _runs(mask):
    """(start, end, value) of each run of equal values."""
    runs, start = [], 0
    for position in range(1, len(mask) + 1):
        if position == len(mask) or mask[position] != mask[start]:
            runs.append((start, position, mask[start]))
            start = position
    return runs


def _replay(tokenizer, seed, prompt_ids, completion_ids, env_mask):
    """The episode the rollout claims, rebuilt from its decoded replies; asserts each bridge is the layout's."""
    layout = TokenLayout(tokenizer)
    config = chat_config(SOKOBAN, CHAT)
    assert prompt_ids == layout.prompt_ids(first_messages(gymnasium.make(SOKOBAN), SOKOBAN, seed, config))
    episode = ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=seed)
    episode.reset()
    runs = _runs(env_mask)
    assert [value for _, _, value in runs] == [1, 0] * (len(runs) // 2) + [1] * (len(runs) % 2)
    ended = False
    for start, end, value in runs:
        ids = completion_ids[start:end]
        if value == 1:
            ended = ids[-1] == layout.end_id
            # The text the policy agent hands the episode: special tokens dropped, spaces as decoded.
            text = tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
            episode.step(AgentReply(text))
        else:  # the env's turn: the template text after the reply, through the next generation prompt
            assert ids == layout.bridge_ids(episode.messages, ended=ended)
    assert episode.done
    return episode.trajectory()


def test_rollout_func_trains_two_grpo_steps_on_eval_prompts(tmp_path):
    model, tokenizer = _tiny()
    before = {name: weight.detach().clone() for name, weight in model.named_parameters()}
    dataset = ragen_trl.panel_dataset(SOKOBAN, "train", limit=2, chat=CHAT)
    rollout = ragen_trl.make_rollout_func(SOKOBAN, chat=CHAT, max_new_tokens=8)
    handed = []

    def recorded(prompts, trainer):
        fields = rollout(prompts, trainer)
        handed.append((prompts, fields))
        return fields

    def first_token_parity(completion_ids, **_):
        # Eight random tokens never make a valid reply, so every episode scores the same; this second
        # reward gives the groups a spread, so an update happens and the masked loss is exercised.
        return [float(ids[0] % 2) for ids in completion_ids]

    trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer,
                              reward_funcs=[ragen_trl.episode_reward, first_token_parity],
                              args=_config(tmp_path), train_dataset=dataset, rollout_func=recorded)
    trainer.train()

    assert len(handed) == 2 and trainer.state.global_step == 2
    episodes = 0
    for prompts, fields in handed:
        seeds = [ragen_trl.prompt_seed(prompt) for prompt in prompts]
        assert sorted(seeds) == sorted(list(dataset["seed"]) * 2)  # each seed once per generation
        for index, seed in enumerate(seeds):
            replayed = _replay(tokenizer, seed, fields["prompt_ids"][index], fields["completion_ids"][index],
                               fields["env_mask"][index])
            assert replayed.num_turns == CHAT["max_turns"]  # eight random tokens never finish a level
            assert fields["episode_reward"][index] == replayed.total_reward
            assert len(fields["logprobs"][index]) == len(fields["completion_ids"][index])
            episodes += 1
    assert episodes == 8
    # The update ran on these rows: the parity reward's spread moved the weights.
    assert any(not weight.equal(before[name]) for name, weight in model.named_parameters())
    assert any(not weight.equal(before[name]) for name, weight in model.named_parameters())


def test_rollout_func_refuses_a_prompt_made_under_other_chat_settings():
    prompt = ragen_trl.panel_dataset(SOKOBAN, "test", limit=1, chat={"think": False})[0]["prompt"]
    rollout = ragen_trl.make_rollout_func(SOKOBAN, chat=CHAT)
    with pytest.raises(ValueError, match="not the chat layer's turn 1"):
        rollout([prompt], trainer=_FakeTrainer())
    with pytest.raises(ValueError, match="history_window=5"):
        ragen_trl.make_rollout_func("RAGEN/2048-v0")  # its budget shows the last five turns
    with pytest.raises(ValueError, match="carries no 'seed'"):
        ragen_trl.prompt_seed([{"role": "system", "content": "hi"}])


class _FakeTrainer:
    """Just enough of a trainer for the prompt check, which runs before any sampling."""

    def __init__(self):
        model, self.processing_class = _tiny()
        self.model = model
        self.accelerator = type("Accelerator", (), {"unwrap_model": staticmethod(lambda m: m)})()
        self.state = type("State", (), {"global_step": 0})()
        self.args = type("Args", (), {"seed": 0})()
        self.temperature, self.top_p = 1.0, 1.0


def test_tool_env_plays_eval_levels_actions_budget_and_rewards():
    tool_env = ragen_trl.environment_factory(SOKOBAN)()
    opening = tool_env.reset(seed=123, prompt=[], env_id=SOKOBAN, split="test")
    env = gymnasium.make(SOKOBAN)
    observation, _ = env.reset(seed=123)
    assert opening.endswith(f"State:\n{observation}") and env.unwrapped.instruction in opening
    assert "Up, Down, Left, Right" in type(tool_env).act.__doc__
    with pytest.raises(ValueError, match="unknown action 'Jump'"):
        tool_env.act("Jump")
    total = 0.0
    for name, action in [("up", 0), ("LEFT", 2), ("Down", 1)] * 4:
        if tool_env.done:
            break
        text = tool_env.act(name)
        observation, reward, *_ = env.step(action)
        total += reward
        assert text.startswith(f"Reward: {round(reward, 6)}\nState:\n{observation}")
    assert tool_env.get_reward() == total
    assert len(tool_env.rewards) == chat_config(SOKOBAN).max_actions_per_episode  # eval's budget: 10 actions
    with pytest.raises(ValueError, match="episode is over"):
        tool_env.act("up")


def test_environment_factory_trains_two_grpo_steps(tmp_path):
    from trl.chat_template_utils import qwen3_chat_template

    model, tokenizer = _tiny()
    # TRL parses tool calls for the templates it knows; Qwen3's is ChatML, which the tiny tokenizer speaks.
    tokenizer.chat_template = qwen3_chat_template
    dataset = ragen_trl.panel_dataset(SOKOBAN, "train", limit=2, tools=True)
    factory = ragen_trl.environment_factory(SOKOBAN)
    trainer = trl.GRPOTrainer(model=model, processing_class=tokenizer, args=_config(tmp_path, max_completion_length=24),
                              train_dataset=dataset, environment_factory=factory)
    trainer.train()

    assert trainer.state.global_step == 2
    # Each rollout's env was reset to its row's seed: its level is that seed's.
    levels = {seed: gymnasium.make(SOKOBAN).reset(seed=seed)[0] for seed in dataset["seed"]}
    for tool_env in trainer.environments:
        assert tool_env.env.unwrapped.level_seed in levels
        assert tool_env.get_reward() == sum(tool_env.rewards)
    logged = [log for log in trainer.state.log_history if "rewards/RagenToolEnv/mean" in log]
    assert len(logged) == 2
