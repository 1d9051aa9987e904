"""TextWorld-Express ids (RAGEN/TWX-<game>-v0): the library's games, folds and gold paths behind our contract.

Needs the ``twx`` extra and a JVM; without them (outside CI) the tests that play skip and
say what to install.  The full test-panel sweep and the full panel verification are
marked slow; the default run plays a sample of each test panel.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import pickle
import shutil
import subprocess
import sys

import gymnasium
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.agents import make_agent
from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep
from ragen_bench.chat.protocol import AgentReply
from ragen_bench.cli import main
from ragen_bench.envs.base import InvalidActionError
from ragen_bench.envs.textworld_express import GAMES, TWXUnavailableError, backend
from ragen_bench.envs.textworld_express.env import UNLISTED, VALID_ACTIONS_HEADER
from ragen_bench.registry import BUILTIN_IDS, ENV_IDS, entry
from tests.conftest import REPO_ROOT, in_ci, one_line_error, run_python

IDS = [f"RAGEN/TWX-{game}-v0" for game in GAMES]
# The default run plays this many seeds of each test panel (the slow sweep plays all 1000).
SAMPLE = 6
# Long enough for the longest gold path on any panel (cookingworld: 130 actions).
LONG_CHAT = ChatConfig(max_turns=200, max_actions_per_episode=200)


def _twx_missing() -> str | None:
    if importlib.util.find_spec("textworld_express") is None:
        return backend.LIBRARY_HINT
    if shutil.which("java") is None:
        return backend.JVM_HINT
    return None


@pytest.fixture(scope="module")
def twx() -> None:
    """Skip (fail in CI) when the library or the JVM is missing."""
    missing = _twx_missing()
    if missing:
        if in_ci():
            pytest.fail(f"{missing}; CI=true, so this is a failure, not a skip")
        pytest.skip(missing)


_ENVS: dict[str, gymnasium.Env] = {}


def _env(env_id: str):
    """One live env per id for the whole module (each runs a JVM: starting one takes ~0.7 s)."""
    if env_id not in _ENVS:
        _ENVS[env_id] = gymnasium.make(env_id).unwrapped
    return _ENVS[env_id]


def teardown_module() -> None:
    for env in _ENVS.values():
        env.close()


def _play_gold(env, seed: int) -> tuple[list, dict]:
    """Reset ``seed`` and follow the optimal action to the end; the steps and the reset info."""
    observation, reset_info = env.reset(seed=seed)
    reset_info = {**reset_info, "opening": observation}
    steps = []
    while (action := env.optimal_action()) is not None:
        assert env.action_space.contains(action), (seed, action, env.action_space.valid)
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps, reset_info


def _assert_wins(env_id: str, count: int) -> int:
    """The first ``count`` test-panel seeds open as the panel says, and the gold path wins every one
    that fits in TWX's 100 steps (``max_steps``); a longer one is truncated there.  Returns how many
    did not fit."""
    env = _env(env_id)
    panel = panels.load(env_id, "test")
    too_long = 0
    for seed, digest in zip(panel.seeds[:count], panel.obs_sha256[:count]):
        steps, reset_info = _play_gold(env, seed)
        assert panels.observation_sha256(reset_info["opening"]) == digest, (env_id, seed)
        observation, reward, terminated, truncated, info = steps[-1]
        assert info["fold"] == "test" and env.optimal_action() is None
        if reset_info["gold_length"] > env.max_steps and len(steps) == env.max_steps:
            assert truncated and not terminated and not info["success"], (env_id, seed)
            too_long += 1
            continue
        assert terminated and not truncated and info["success"], (env_id, seed, observation)
        assert len(steps) <= reset_info["gold_length"]
        assert sum(step[1] for step in steps) == pytest.approx(1.0) and info["score"] == pytest.approx(1.0)
    return too_long


# -- registration, folds, missing pieces ---------------------------------------------


def test_ids_are_registered_without_importing_the_library():
    out = run_python(
        "import sys, gymnasium, ragen_bench\n"
        "env = gymnasium.make('RAGEN/TWX-coin-v0')\n"
        "print(sorted(m for m in ('textworld_express', 'py4j') if m in sys.modules))"
    )
    assert out.strip() == "[]"
    assert [i for i in ENV_IDS if i.startswith("RAGEN/TWX-")] == IDS
    assert all(entry(i).family == "textworld_express" and entry(i).kwargs == {"game": i[10:-3]} for i in IDS)


def test_games_and_folds_are_the_library_s(twx):
    from textworld_express import TextWorldExpressEnv

    server = TextWorldExpressEnv()
    try:
        assert tuple(server.getGameNames()) == GAMES
        for game in GAMES:
            server.load(game, "")
            listed = (server.getValidSeedsTrain(), server.getValidSeedsDev(), server.getValidSeedsTest())
            assert listed == tuple(list(backend.FOLD_SEEDS[f]) for f in ("train", "dev", "test")), game
    finally:
        server.close()


@pytest.mark.parametrize(
    ("seed", "fold"),
    [(0, "train"), (999, "train"), (1000, "train"), (9999, "train"), (10_000, "dev"), (10_999, "dev"),
     (11_000, "train"), (20_000, "test"), (20_999, "test"), (21_000, "train"), (2**31 - 1, "train")],
)
def test_fold_of_a_seed(seed, fold):
    assert backend.fold_of(seed) == fold


def test_panels_are_twx_s_splits():
    for env_id in IDS:
        assert panels.load(env_id, "train").seeds == tuple(range(0, 256))
        assert panels.load(env_id, "val").seeds == tuple(backend.FOLD_SEEDS["dev"])
        assert panels.load(env_id, "test").seeds == tuple(backend.FOLD_SEEDS["test"])
    # Train seeds are decontaminated by seed: the walk skips TWX's whole dev and test lists.
    walk = panels.decontaminated_train_seeds(IDS[0])
    drawn = [next(walk) for _ in range(11_001)]
    assert drawn[:1000] == list(range(1000)) and drawn[-1] == 12_000 and 10_500 not in drawn


def test_missing_jvm_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(backend.shutil, "which", lambda name: None)
    env = gymnasium.make("RAGEN/TWX-coin-v0")
    with pytest.raises(TWXUnavailableError, match="default-jre-headless"):
        env.reset(seed=0)


def test_missing_jvm_is_one_error_line_from_the_cli(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(backend.shutil, "which", lambda name: None)
    command = ["eval", "env=RAGEN/TWX-coin-v0", "agent=optimal", "limit=1", f"out={tmp_path / 'run'}"]
    assert main(command) == 2
    one_line_error(capsys, "ragen-bench eval: error: ", "default-jre-headless")


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.setattr(backend.shutil, "which", lambda name: "/usr/bin/java")
    monkeypatch.setitem(sys.modules, "textworld_express", None)  # import now raises ImportError
    env = gymnasium.make("RAGEN/TWX-coin-v0")
    with pytest.raises(TWXUnavailableError, match=r"ragen-bench\[twx\]"):
        env.reset(seed=0)


def test_envs_list_and_verify_name_the_extra_when_the_library_is_missing(monkeypatch):
    from ragen_bench import catalog

    assert all(entry(i).extra == "twx" for i in IDS) and not set(IDS) & set(BUILTIN_IDS)
    real = importlib.util.find_spec
    monkeypatch.setattr(catalog.importlib.util, "find_spec", lambda n: None if n == "textworld_express" else real(n))
    assert catalog.missing_extra("RAGEN/TWX-coin-v0") == backend.LIBRARY_HINT
    (check,) = catalog.verify_id("RAGEN/TWX-coin-v0", named=True)
    assert check.failed and check.line == f"FAIL RAGEN/TWX-coin-v0: {backend.LIBRARY_HINT}"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [({"game": "zork"}, ValueError), ({"max_steps": 0}, ValueError), ({"valid_actions_in_prompt": 1}, TypeError)],
)
def test_bad_arguments_are_refused_up_front(kwargs, error):
    with pytest.raises(error, match="TextWorldExpressEnv: " + next(iter(kwargs))):
        gymnasium.make("RAGEN/TWX-coin-v0", **kwargs)


def test_seeds_beyond_java_s_int_are_refused():
    env = gymnasium.make("RAGEN/TWX-coin-v0")
    with pytest.raises(ValueError, match=r"seed must be in 0..2147483647"):
        env.reset(seed=2**31)


# -- episodes ----------------------------------------------------------------------


@pytest.mark.parametrize("env_id", IDS)
def test_optimal_wins_a_sample_of_the_test_panel(twx, env_id):
    assert _assert_wins(env_id, SAMPLE) == 0


# Test-panel episodes whose gold path is longer than TWX's 100 steps: 22 of cookingworld's 1000 (measured).
TOO_LONG = {"RAGEN/TWX-cookingworld-v0": 22}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_optimal_wins_every_test_panel_episode(twx, env_id):
    too_long = _assert_wins(env_id, 1000)  # the whole test panel (verified on the way)
    print(env_id, "gold paths over 100 steps:", too_long)
    assert too_long == TOO_LONG.get(env_id, 0)


@pytest.mark.parametrize("env_id", IDS)
def test_panel_sample_regenerates(twx, env_id):
    for split in panels.SPLITS:
        panel = panels.load(env_id, split)
        sample = panels.Panel(env_id, split, panel.seeds[:3], panel.obs_sha256[:3])
        sample.verify()


@pytest.mark.slow
@pytest.mark.parametrize("env_id", IDS)
def test_train_and_val_panels_verify(twx, env_id):
    # The test panel is verified seed by seed by test_optimal_wins_every_test_panel_episode.
    for split in ("train", "val"):
        panels.load(env_id, split).verify()


def test_observation_and_info(twx):
    env = _env("RAGEN/TWX-coin-v0")
    observation, info = env.reset(seed=20_000)
    task, _, rest = observation.partition("\n\n")
    assert task == "Your task is to search the environment and find the coin.  Once you find the coin, take it."
    assert rest.startswith("You are in the kitchen.")
    listed = observation.rsplit("\n", 1)[1]
    assert listed == VALID_ACTIONS_HEADER + ", ".join(info["valid_actions"])
    assert list(info["valid_actions"]) == sorted(set(info["valid_actions"])) and "look around" in info["valid_actions"]
    assert info == {**info, "success": False, "level_seed": 20_000, "fold": "test", "score": 0.0, "gold_length": 5}
    assert info["optimal_length"] is None
    assert not any("," in action for action in info["valid_actions"])  # the list's separator stays unambiguous
    observation, reward, terminated, truncated, info = env.step("inventory")
    assert observation.startswith("Inventory") and (reward, terminated, truncated) == (0.0, False, False)
    assert info["action_is_valid"] and not info["action_is_effective"]
    assert env.optimal_action() is None  # off the gold path: no optimal action is known any more


def test_without_the_valid_action_list(twx):
    env = gymnasium.make("RAGEN/TWX-simonsays-v0", valid_actions_in_prompt=False).unwrapped
    try:
        observation, info = env.reset(seed=20_000)
        assert VALID_ACTIONS_HEADER not in observation and info["valid_actions"]
        assert "listed after each state" not in env.instruction
        assert env.step(env.optimal_action())[1] > 0
    finally:
        env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_gold_path_is_the_same_on_every_reset(twx, env_id):
    env = _env(env_id)
    for seed in (20_000, 20_001):
        golds = {(env.reset(seed=seed), env._gold)[1] for _ in range(3)}
        assert len(golds) == 1 and env.reset(seed=seed)[1]["gold_length"] == len(golds.pop())


def test_simonsays_duplicate_actions_are_listed_once(twx):
    # TWX lists "touch pea" twice for this seed.
    _, info = _env("RAGEN/TWX-simonsays-v0").reset(seed=20_000)
    assert info["valid_actions"].count("touch pea") == 1


def test_wrong_simon_says_action_fails_the_game(twx):
    env = _env("RAGEN/TWX-simonsays-v0")
    _, info = env.reset(seed=20_000)
    wrong = next(a for a in info["valid_actions"] if a != env.optimal_action())
    _, reward, terminated, truncated, info = env.step(wrong)
    assert terminated and not truncated and not info["success"] and reward <= 0


def test_truncation_after_max_steps(twx):
    env = gymnasium.make("RAGEN/TWX-coin-v0", max_steps=3).unwrapped
    try:
        env.reset(seed=20_000)
        results = [env.step("look around") for _ in range(3)]
        assert [r[3] for r in results] == [False, False, True] and not any(r[2] for r in results)
    finally:
        env.close()


def test_unseeded_resets_play_listed_train_seeds(twx):
    env = _env("RAGEN/TWX-arithmetic-v0")
    env.reset(seed=5)
    seeds = [env.reset()[1]["level_seed"] for _ in range(20)]
    assert all(s in backend.FOLD_SEEDS["train"] for s in seeds) and len(set(seeds)) > 10
    env.reset(seed=5)
    assert [env.reset()[1]["level_seed"] for _ in range(20)] == seeds


def test_close_stops_the_jvm_and_a_reset_starts_another(twx):
    env = gymnasium.make("RAGEN/TWX-coin-v0").unwrapped
    first, _ = env.reset(seed=20_001)
    process = env._server.env._gateway.java_process
    env.close()
    assert process.wait(timeout=10) is not None
    assert env.reset(seed=20_001)[0] == first
    env.close()
    env.close()  # twice is fine


# -- copies ---------------------------------------------------------------------------


def _follow_gold(env) -> list:
    """Step ``env`` along the gold path to the end of the episode; the steps."""
    steps = []
    while (action := env.optimal_action()) is not None:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps


@pytest.mark.parametrize("env_id", IDS)
def test_a_copy_mid_episode_goes_on_exactly_as_the_original(twx, env_id):
    """deepcopy and pickle copy the episode; each copy replays it in a JVM of its own when it next steps."""
    env = _env(env_id)
    env.reset(seed=20_003)
    for _ in range(2):
        if (action := env.optimal_action()) is not None:
            env.step(action)
    env.step("dance")  # an unlisted action: counted, never sent to TWX
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    try:
        assert all(other._server is None and other.render() == env.render() for other in copies)
        expected = _follow_gold(env)
        assert expected and (expected[-1][2] or expected[-1][3])
        for other in copies:
            assert _follow_gold(other) == expected
            assert other._server is not env._server
    finally:
        for other in copies:
            other.close()


def test_a_copy_does_not_move_the_original(twx):
    env = _env("RAGEN/TWX-coin-v0")
    env.reset(seed=20_001)
    before = env.step(env.optimal_action())
    other = copy.deepcopy(env)
    try:
        _follow_gold(other)
        assert env.render() == before[0]
        assert env.step(env.optimal_action())[4]["score"] >= 0  # the original's own JVM still plays
    finally:
        other.close()


def test_a_step_after_close_mid_episode_resumes_the_episode(twx):
    env = gymnasium.make("RAGEN/TWX-mapreader-v0").unwrapped
    reference = _env("RAGEN/TWX-mapreader-v0")
    try:
        for game in (env, reference):
            game.reset(seed=20_002)
            game.step(game.optimal_action())
        env.close()
        assert _follow_gold(env) == _follow_gold(reference)
    finally:
        env.close()


def test_a_replay_that_misses_the_position_is_refused(twx):
    env = _env("RAGEN/TWX-coin-v0")
    env.reset(seed=20_004)
    env.step(env.optimal_action())
    other = copy.deepcopy(env)
    other._score += 0.5  # as if the copied episode had scored what TWX's replay does not
    with pytest.raises(RuntimeError, match=r"replaying seed 20004 with its 1 actions in a new JVM reached score"):
        other.step(other.optimal_action())
    assert other._server is None  # the replay's JVM was stopped, not kept


_COPY_AT_EXIT = """
import copy, importlib, pickle
import gymnasium, ragen_bench
from ragen_bench.envs.textworld_express import backend
env = gymnasium.make("RAGEN/TWX-coin-v0")
env.reset(seed=20_001)
env.step(env.unwrapped.optimal_action())
copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env)), copy.deepcopy(env.unwrapped)]
for other in copies:
    other.step(other.unwrapped.optimal_action())  # each starts its JVM; none is closed
try:
    copy.deepcopy(env.unwrapped._server)
except TypeError as error:
    print(error)
# A library env whose __init__ never ran (as when the JVM fails to start), collected here.
half_built = backend._library_env_class(importlib.import_module("textworld_express"))
half_built.__new__(half_built)
"""


def test_copies_and_a_half_built_library_env_print_nothing_at_exit(twx):
    done = subprocess.run([sys.executable, "-c", _COPY_AT_EXIT], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == (
        "TWXServer (coin) runs a JVM and cannot be copied or pickled; copy the TextWorldExpressEnv instead, "
        "which replays its episode in a new JVM\n"
    )


# -- hostile action text -------------------------------------------------------------

# Text TWX does not list: answered, never sent to the JVM (lone surrogates could not even be encoded).
UNLISTED_TEXT = [
    "", " ", "Look Around", "LOOK AROUND", " look around", "look around ", "look around\n", "look  around",
    "look around || inventory", "look around\x00", "ｌｏｏｋ around", "help", "\ud800", "é" * 200,
]
# Not a str, or too long: refused.
NOT_ACTIONS = [None, 0, b"look around", ["look around"], 1.5, True, "look around" * 50, "é" * 201]


@pytest.mark.parametrize("action", UNLISTED_TEXT, ids=range(len(UNLISTED_TEXT)))
def test_unlisted_text_changes_nothing_but_counts_a_step(twx, action):
    env = _env("RAGEN/TWX-coin-v0")
    observation, info = env.reset(seed=20_000)
    assert not env.action_space.contains(action)
    text, reward, terminated, truncated, step_info = env.step(action)
    assert text == f"{UNLISTED}\n\n{VALID_ACTIONS_HEADER}{', '.join(info['valid_actions'])}"
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert not step_info["action_is_valid"] and step_info["valid_actions"] == info["valid_actions"]
    assert env.optimal_action() == "look around"  # still on the gold path: the state did not change
    assert env.step("look around")[4]["action_is_valid"]


@pytest.mark.parametrize("action", NOT_ACTIONS, ids=range(len(NOT_ACTIONS)))
def test_non_text_actions_raise_and_change_nothing(twx, action):
    env = _env("RAGEN/TWX-coin-v0")
    observation, _ = env.reset(seed=20_000)
    with pytest.raises(InvalidActionError, match="expected a str of at most 200 characters, one of: close door"):
        env.step(action)
    assert env.render_text() == observation and env.optimal_action() == "look around"


def test_unlisted_actions_run_into_the_step_limit(twx):
    env = gymnasium.make("RAGEN/TWX-coin-v0", max_steps=2).unwrapped
    try:
        env.reset(seed=20_000)
        assert env.step("dance")[3] is False and env.step("dance")[3] is True
    finally:
        env.close()


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=40))
def test_any_text_is_valid_exactly_when_listed(twx, text):
    env = _env("RAGEN/TWX-sorting-v0")
    if env.level_seed != 20_000 or env.episode_finished:
        env.reset(seed=20_000)
    listed = text in env.action_space.valid
    assert env.action_space.contains(text) == listed
    if not listed:
        assert env.step(text)[0].startswith(UNLISTED)


def test_chat_layer_matches_actions_exactly_and_penalises_the_rest(twx):
    env = gymnasium.make("RAGEN/TWX-coin-v0")
    try:
        episode = ChatEpisode(env, LONG_CHAT, env_id="RAGEN/TWX-coin-v0", seed=20_000, split="test")
        episode.reset()
        for text in ("<think>x</think><answer>Look Around</answer>", "<think>x</think><answer>dance</answer>",
                     "no tags at all"):
            episode.step(AgentReply(text))
        episode.step(AgentReply("<think>x</think><answer>look around</answer>"))
        turns = episode.trajectory().turns
        assert [t.valid for t in turns] == [False, False, False, True]
        assert [t.format_penalty for t in turns] == [LONG_CHAT.format_penalty] * 3 + [0.0]
        assert [t.action_ids for t in turns] == [[], [], [], ["look around"]]
    finally:
        env.close()


@pytest.mark.parametrize("env_id", ["RAGEN/TWX-coin-v0", "RAGEN/TWX-cookingworld-v0"])
def test_optimal_and_random_agents_through_the_chat_layer(twx, env_id):
    seeds = panels.load(env_id, "test").seeds[:2]
    results = {}
    for name, config in (("optimal", LONG_CHAT), ("random", ChatConfig(max_turns=20, max_actions_per_episode=20))):
        envs = [gymnasium.make(env_id) for _ in seeds]
        try:
            episodes = [ChatEpisode(e, config, env_id=env_id, seed=s, split="test") for e, s in zip(envs, seeds)]
            results[name] = run_lockstep(episodes, make_agent(name))
        finally:
            for e in envs:
                e.close()
    assert all(t.success and t.optimal_length is None for t in results["optimal"])
    assert all(turn.valid for t in results["optimal"] for turn in t.turns)
    # The random agent only ever names listed actions, so none of its turns is penalised.
    assert all(turn.valid for t in results["random"] for turn in t.turns)


# -- the shared contract ---------------------------------------------------------------


def episodes_digest(make=None) -> str:
    """SHA-256 over resets, random listed actions and the gold path of every id on a test seed
    (coin and twc: TWX's own gold agents walk at random from the clock; ours are seeded), coin
    on a train seed, and unseeded resets."""
    make = make or (lambda env_id: gymnasium.make(env_id).unwrapped)
    digest = hashlib.sha256()
    for env_id, seed in [(env_id, 20_003) for env_id in IDS] + [("RAGEN/TWX-coin-v0", 3)]:
        env = make(env_id)
        digest.update(repr(env.reset(seed=seed)).encode())
        env.action_space.seed(seed)
        for _ in range(4):
            step = env.step(env.action_space.sample())
            digest.update(repr(step).encode())
            if step[2] or step[3]:
                break
        env.reset(seed=seed)
        while (action := env.optimal_action()) is not None:
            digest.update(repr(env.step(action)).encode())
        env.reset(seed=1)
        digest.update(repr([env.reset() for _ in range(2)]).encode())
    return digest.hexdigest()


def test_same_episodes_in_a_fresh_process(twx):
    # This process against one with another PYTHONHASHSEED (and JVMs of its own).
    code = "from tests.test_textworld_express import episodes_digest; print(episodes_digest())"
    fresh = run_python(code, hash_seed="4242")
    assert fresh.strip() == episodes_digest(_env)


def test_panel_files_name_textworld_express_1_1_0_ids():
    for env_id in IDS:
        raw = json.loads(panels.panel_path(env_id, "test").read_text())
        assert raw["env_id"] == env_id and raw["num_seeds"] == 1000 and "optimal_length" not in raw
