"""Pictures for vision models (``chat.images=true``): what the chat layer sends, records and verifies.

The eval runs go through the scripted OpenAI-compatible endpoint
(:mod:`ragen_bench.integrations.scripted_server`), which refuses a request whose picture is not
the chat layer's picture of that state: a run that completes there was sent the right picture on
every turn.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import gymnasium
import numpy as np
import pytest

from ragen_bench.chat import AgentReply, ChatConfig, ChatEpisode
from ragen_bench.chat.images import data_url, picture, pixels_digest, png_bytes, with_picture

pytest.importorskip("httpx")

SOKOBAN = "RAGEN/Sokoban-6x6-v0"
SERVED = {"images": True, "think": False}  # the scripted endpoint's chat settings


def episode(images: bool = True, env_id: str = SOKOBAN, seed: int = 5) -> ChatEpisode:
    chat = ChatConfig(images=images, think=False, max_actions_per_turn=1)
    run = ChatEpisode(gymnasium.make(env_id), chat, env_id=env_id, seed=seed, split="test")
    run.reset()
    return run


# -- the picture and its record ---------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ["RAGEN/Sokoban-6x6-v0", "RAGEN/FrozenLake-4x4-v0", "RAGEN/2048-v0",
                                    "RAGEN/Sudoku-4x4-v0", "RAGEN/RubiksCube-2x2-Depth1-v0"])
def test_the_png_sent_decodes_to_the_envs_own_picture(env_id):
    image = pytest.importorskip("PIL.Image")
    run = episode(env_id=env_id)
    request = run.request()
    decoded = np.asarray(image.open(io.BytesIO(request.image)).convert("RGB"))
    assert np.array_equal(decoded, picture(run.env))


def test_each_turn_records_the_digest_of_the_picture_its_request_showed():
    run = episode()
    shown = []
    for action in ("Up", "Left", "Down"):
        if run.done:
            break
        shown.append(pixels_digest(picture(run.env)))
        run.step(AgentReply(f"<answer>{action}</answer>"))
    turns = run.trajectory().to_dict()["turns"]
    assert [turn["image_sha256"] for turn in turns] == shown
    # The state moved, so the pictures differ: the digest is of this turn's state, not of the first.
    assert len(set(shown)) > 1


def test_without_images_nothing_changes_requests_records_or_the_template_hash():
    run = episode(images=False)
    assert run.request().image is None
    run.step(AgentReply("<answer>Up</answer>"))
    assert "image_sha256" not in run.trajectory().to_dict()["turns"][0]
    assert ChatConfig().template_hash() == ChatConfig(images=False).template_hash() != ChatConfig(images=True).template_hash()
    assert "images" not in json.dumps(run.trajectory().to_dict())


def test_the_digest_covers_the_shape_not_only_the_bytes():
    pixels = np.zeros((4, 6, 3), np.uint8)
    assert pixels_digest(pixels) != pixels_digest(pixels.reshape(6, 4, 3))
    assert png_bytes(pixels).startswith(b"\x89PNG\r\n\x1a\n")


def test_with_picture_puts_the_picture_on_the_last_message_only():
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    sent = with_picture(messages, b"png")
    assert sent[0] == messages[0] and messages[1] == {"role": "user", "content": "u"}
    assert sent[1]["content"] == [{"type": "text", "text": "u"},
                                  {"type": "image_url", "image_url": {"url": data_url(b"png")}}]


# -- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    (["env=RAGEN/Bandit-v0"], "chat.images: RAGEN/Bandit-v0 draws no picture of its states"),
    (["env=RAGEN/TicTacToe-v0", "opponent=random"], "chat.images: multi-agent games send text only"),
])
def test_eval_refuses_pictures_where_there_are_none(args, message):
    from ragen_bench.eval.compose import compose_config
    from ragen_bench.eval.config import ConfigError, load

    with pytest.raises(ConfigError, match=message):
        load(compose_config("eval", [*args, "agent=random", "chat.images=true", "progress=false"]))


def test_training_refuses_pictures():
    from ragen_bench.integrations.tasks import chat_config

    with pytest.raises(ValueError, match="chat.images is an eval mode"):
        chat_config(SOKOBAN, {"images": True})


# -- an eval through an OpenAI-compatible endpoint that checks the picture ------------------------------


@pytest.fixture(scope="module")
def endpoint():
    from ragen_bench.integrations.scripted_server import ScriptedEndpoint, make_server

    server = make_server(ScriptedEndpoint("optimal", chat=SERVED))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_the_endpoint_refuses_a_missing_or_wrong_picture(endpoint):
    import httpx

    from ragen_bench.integrations.scripted_server import EPISODE_HEADER, served_chat

    chat = served_chat(SOKOBAN, SERVED)
    run, other = (ChatEpisode(gymnasium.make(SOKOBAN), chat, env_id=SOKOBAN, seed=seed, split="test") for seed in (130, 131))
    run.reset()
    other.reset()
    good = with_picture(run.messages, run.request().image)
    text, image = good[-1]["content"]
    cases = {
        "no picture": run.messages,
        "another state's picture": with_picture(run.messages, other.request().image),
        "two pictures": [*good[:-1], {**good[-1], "content": [text, image, image]}],
        "a picture on an earlier message": [{**good[0], "content": [{"type": "text", "text": good[0]["content"]}, image]},
                                            *good[1:]],
    }
    headers = {EPISODE_HEADER: f"{SOKOBAN}/test/130/0"}
    for label, messages in cases.items():
        answer = httpx.post(f"{endpoint}/chat/completions", json={"model": "m", "messages": messages}, headers=headers)
        assert answer.status_code == 400 and "picture" in answer.json()["error"]["message"], label
    assert httpx.post(f"{endpoint}/chat/completions", json={"model": "m", "messages": good},
                      headers=headers).status_code == 200


def test_a_vision_eval_verifies_and_a_changed_picture_digest_is_refused(endpoint, tmp_path: Path):
    from ragen_bench.eval import rundir
    from ragen_bench.eval.compose import compose_config
    from ragen_bench.eval.run import run_eval
    from ragen_bench.leaderboard.errors import LeaderboardError
    from ragen_bench.leaderboard.schema import FORMAT
    from ragen_bench.leaderboard.verify import verify

    folder = tmp_path / "vision"
    run_eval(compose_config("eval", [
        f"env={SOKOBAN}", "agent=openai", "agent.model=scripted", f"agent.base_url={endpoint}", "limit=3",
        "chat.images=true", "chat.think=false", f"out={folder}", "progress=false",
        "+agent.episode_header=true",
    ]))
    (folder / rundir.LOCK).unlink()
    (folder / "submission.json").write_text(json.dumps({
        "format": FORMAT, "name": "vision", "model": "scripted", "recipe": "none", "date": "2026-12-03",
        "contact": "tests", "trained_on_train_panels": False,
    }))
    verified = verify(folder)
    assert len(verified.rows) == 3 and all(row["success"] for row in verified.rows)
    lines = (folder / "episodes.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    assert all(len(turn["image_sha256"]) == 64 for turn in record["turns"])
    record["turns"][0]["image_sha256"] = "0" * 64
    (folder / "episodes.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    with pytest.raises(LeaderboardError, match=r"turn 1, field image_sha256"):
        verify(folder)


# -- the vision track ----------------------------------------------------------------------------------


def test_a_run_with_pictures_has_its_own_budget_label_and_ranks_apart():
    from ragen_bench.eval.report import budget_label
    from ragen_bench.leaderboard.build import ranking_rows

    assert budget_label(ChatConfig(images=True)) == "5/5/10 vision"
    assert budget_label(ChatConfig()) == "5/5/10"

    def row(entry: str, success: float, budget: str) -> dict:
        return {"suite": "s", "entry": entry, "env": "E", "split": "test", "success": success, "success_low": 0.0,
                "success_high": 1.0, "progress": success, "progress_low": 0.0, "progress_high": 1.0, "seeds": 2, "panel_seeds": 256, "samples": 1, "model": "m", "recipe": "r",
                "budget": budget}

    ranking = ranking_rows([row("text-a", 0.5, "5/5/10"), row("text-b", 0.25, "5/5/10"),
                            row("vlm", 0.75, "5/5/10 vision")])
    # The vision entry scores highest but is ranked only against entries that were shown pictures too.
    assert [(r["entry"], r["rank"]) for r in ranking] == [("text-a", 1), ("text-b", 2), ("vlm", 1)]
