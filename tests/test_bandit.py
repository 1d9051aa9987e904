"""Bandit: RAGEN fidelity (arm order, payoffs), name pools, reversed semantics, API."""

from __future__ import annotations

import gymnasium
import pytest
from gymnasium.error import InvalidAction
from gymnasium.utils import seeding

import ragen_bench
from ragen_bench.envs.bandit import BanditEnv
from ragen_bench.envs.bandit.env import NAME_POOLS
from ragen_bench.envs.base import ascii_casefold
from ragen_bench.registry import entry
from tests import env_contract
from tests.conftest import reference_records

BANDIT_IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/Bandit")]
RAGEN_BANDITS = {"Bandit": "RAGEN/Bandit-v0", "BanditTest": "RAGEN/BanditTest-v0"}


def make(env_id: str = "RAGEN/Bandit-v0", **kwargs) -> BanditEnv:
    return gymnasium.make(env_id, **kwargs).unwrapped


def test_ids_and_ragen_names():
    assert {"RAGEN/Bandit-v0", "RAGEN/BanditTest-v0", "RAGEN/Bandit-Rev-v0", "RAGEN/Bandit-HeldOut-v0"} <= set(
        BANDIT_IDS
    )
    for ragen_name, env_id in RAGEN_BANDITS.items():
        assert entry(env_id).ragen_name == ragen_name


# -- fidelity to RAGEN ---------------------------------------------------------------


@pytest.mark.parametrize("ragen_name", sorted(RAGEN_BANDITS))
def test_arm_order_and_payoffs_match_ragen_reference_exactly(ragen_name):
    records = reference_records(ragen_name)
    assert len(records) >= 300
    env = make(RAGEN_BANDITS[ragen_name])
    for record in records:
        _, info = env.reset(seed=record["seed"])
        assert list(env.action_names) == record["arm_order"] == list(info["arm_order"]), record["seed"]
        # Each recorded pull is the single step of an episode started by reset(seed).
        for pull in record["pulls"]:
            env.reset(seed=record["seed"])
            _, reward, terminated, truncated, info = env.step(env.action_names.index(pull["action"]))
            assert (reward, info["success"]) == (pull["reward"], pull["success"]), record["seed"]
            assert terminated and not truncated


def test_reference_pulls_exercise_both_arms_and_both_high_risk_outcomes():
    pulls = [p for r in reference_records("Bandit") for p in r["pulls"]]
    assert {p["reward"] for p in pulls} == {0.0, 0.1, 1.0}


def test_observation_names_both_arms_in_action_order():
    env = make("RAGEN/BanditTest-v0")
    orders = set()
    for seed in range(20):
        obs, _ = env.reset(seed=seed)
        first, second = env.action_names
        assert obs.index(first) < obs.index(second)
        orders.add(env.action_names)
    assert orders == {("Trader", "Librarian"), ("Librarian", "Trader")}


# -- payoffs, success, optimal arm -------------------------------------------------------


def test_payoff_distribution_and_success_flag():
    env = make()
    low_rewards, high_rewards = set(), []
    for seed in range(2000):
        env.reset(seed=seed)
        high = env.action_names.index("Dragon")
        _, reward, _, _, info = env.step(1 - high)
        low_rewards.add(reward)
        assert not info["success"]
        env.reset(seed=seed)
        _, reward, _, _, info = env.step(high)
        high_rewards.append(reward)
        assert info["success"]
    assert low_rewards == {0.1} and set(high_rewards) == {0.0, 1.0}
    # RAGEN's rule, independently: the seed's generator orders the arms with its first
    # draw and pays the jackpot when its second draw is below 0.25.
    expected = []
    for seed in range(2000):
        rng = seeding.np_random(seed)[0]
        rng.random()
        expected.append(1.0 if rng.random() < 0.25 else 0.0)
    assert high_rewards == expected
    assert 0.22 < sum(high_rewards) / len(high_rewards) < 0.28  # the seeds are a fair sample


def test_optimal_action_is_the_high_risk_arm_then_none():
    env = make("RAGEN/Bandit-Rev-v0")
    for seed in range(10):
        env.reset(seed=seed)
        assert env.action_names[env.optimal_action()] == "Phoenix"  # reversed: Phoenix is the gamble
        env.step(env.optimal_action())
        assert env.optimal_action() is None


def _payoffs_by_name(env_id: str, seeds: range) -> dict[str, set[float]]:
    env, payoffs = make(env_id), {}
    for seed in seeds:
        for arm in (0, 1):
            env.reset(seed=seed)
            payoffs.setdefault(env.action_names[arm], set()).add(env.step(arm)[1])
    return payoffs


def test_reversed_variant_swaps_the_payoffs_behind_the_same_names():
    normal = _payoffs_by_name("RAGEN/Bandit-v0", range(40))
    reversed_ = _payoffs_by_name("RAGEN/Bandit-Rev-v0", range(40))
    assert normal == {"Phoenix": {0.1}, "Dragon": {0.0, 1.0}}
    assert reversed_ == {"Dragon": {0.1}, "Phoenix": {0.0, 1.0}}


def test_name_pools_are_disjoint_and_held_out_env_cycles_through_its_pool():
    train_names = {name for pair in NAME_POOLS["train"] for name in pair}
    test_names = {name for pair in NAME_POOLS["test"] for name in pair}
    assert not train_names & test_names
    env = make("RAGEN/Bandit-HeldOut-v0")
    seen = {(env.reset(seed=seed)[1]["arm_order"], env.high_risk_name) for seed in range(12)}
    assert {high for _, high in seen} == {high for _, high in NAME_POOLS["test"]}
    assert all(set(order) in [set(pair) for pair in NAME_POOLS["test"]] for order, _ in seen)


def test_arm_names_are_a_constructor_argument_and_are_checked():
    env = BanditEnv(low_risk_name="Savings", high_risk_name="Lottery")
    obs, _ = env.reset(seed=0)
    assert "Savings" in obs and "Lottery" in obs and env.observation_space.contains(obs)
    with pytest.raises(ValueError, match="differ"):
        BanditEnv(low_risk_name="Same", high_risk_name="Same")
    with pytest.raises(ValueError, match="differ"):
        BanditEnv(low_risk_name="Oak", high_risk_name="OAK")
    with pytest.raises(ValueError, match="name_pool"):
        BanditEnv(name_pool="nope")
    with pytest.raises(ValueError, match="name_pool"):
        BanditEnv(name_pool="reversed")  # Bandit-Rev names its arms explicitly


@pytest.mark.parametrize("name", ["\u212aelvin", "O\u212a", "Dr\u00e4gon", "", "   ", "x" * 41, "Tab\tName"])
def test_arm_names_must_be_short_printable_ascii(name):
    # Non-ASCII names are refused so that no look-alike letter (the Kelvin sign folds to
    # "k" under str.lower) can make two names, or a name and a model's answer, collide.
    with pytest.raises(ValueError, match="low_risk_name"):
        BanditEnv(low_risk_name=name, high_risk_name="Dragon")


@pytest.mark.parametrize("name", [None, 3, b"Oak", ["Oak"]])
def test_arm_names_must_be_strings(name):
    with pytest.raises(TypeError, match="high_risk_name"):
        BanditEnv(low_risk_name="Oak", high_risk_name=name)


def test_arm_names_fold_ascii_case_only():
    assert ascii_casefold("OAK") == "oak"
    assert ascii_casefold("OA\u212a") == "oa\u212a"  # str.lower would give "oak"
    assert "OA\u212a".lower() == "oak"  # the look-alike this guards against


def test_invalid_action_and_step_before_reset_fail_clearly():
    with pytest.raises(RuntimeError, match="reset"):
        BanditEnv().step(0)
    env = BanditEnv()
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match=r"BanditEnv: invalid action 2 .*0\.\.1"):
        env.step(2)


# -- determinism and RNG hygiene ---------------------------------------------------------


@pytest.mark.parametrize("env_id", BANDIT_IDS)
def test_global_random_states_are_untouched(env_id):
    env_contract.assert_global_rngs_untouched(env_id, [0])
