"""``submission.json``: the typed model, its JSON Schema, and validation against it.

The model is the single source: :func:`json_schema` emits the schema published in
``docs/leaderboard.md`` (a test keeps the two equal), and :func:`parse_submission`
validates with the same model, so the document and the check cannot drift apart.
"""

from __future__ import annotations

import datetime as _dt
from typing import Annotated, Any, Literal

from ragen_bench.leaderboard.errors import LeaderboardError, needs_extra

needs_extra("pydantic")  # a one-line hint instead of an ImportError traceback
from pydantic import (  # noqa: E402
    BaseModel, ConfigDict, Field, StrictBool, StringConstraints, ValidationError, field_validator,
)

FORMAT = "ragen-bench/submission/v1"

# Names become file names, CSV cells and HTML ids: a conservative alphabet.
Name = Annotated[str, StringConstraints(strict=True, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]
Text = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=300)]


class SubmissionInfo(BaseModel):
    """Who made an entry and how; the numbers come from the run directory, never from here."""

    model_config = ConfigDict(extra="forbid", title="ragen-bench leaderboard submission")

    format: Literal["ragen-bench/submission/v1"] = Field(description="format of this file")
    name: Name = Field(description="entry name, unique on the leaderboard (letters, digits, '.', '_', '-')")
    model: Text = Field(description="the model or agent, e.g. 'SmolLM2-135M-Instruct' or 'scripted'")
    link: Annotated[str, StringConstraints(strict=True, pattern=r"^https?://\S{1,500}$")] | None = Field(
        default=None, description="where to read about the entry (http or https URL)"
    )
    recipe: Text = Field(description="'prompted' (no training), 'scripted', or the training recipe in brief")
    date: Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")] = Field(
        description="date of the run, YYYY-MM-DD"
    )
    contact: Text = Field(description="who answers questions about the entry")
    trained_on_train_panels: StrictBool = Field(
        description="whether the model was trained on the suite's train panels (seeds disjoint from test)"
    )
    run_dir: Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)] = Field(
        default=".", description="the eval run directory, relative to this file, inside the submission folder"
    )
    notes: Annotated[str, StringConstraints(strict=True, max_length=2000)] = Field(
        default="", description="anything a reader should know (coverage, settings)"
    )
    base_entry: Name | None = Field(
        default=None,
        description=("for a trained entry: the entry of the checkpoint it was trained from (a folder beside this "
                     "one); the leaderboard pairs the two on their shared episodes"),
    )
    training_metrics: Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)] | None = Field(
        default=None,
        description=("the metrics.jsonl copied from the training run, relative to this file, inside the submission "
                     "folder; a validation.jsonl beside it (as the trainer writes both) adds the validation curve"),
    )
    stream_runs: list[Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=16,
        description=("more eval run directories of the same model on the same episodes, each sampled from another "
                     "stream (docs/train.md, the protocol), relative to this file; the pairing with the base entry "
                     "pools every stream both entries hold"),
    )
    selected_on_test: StrictBool = Field(
        default=False,
        description=("whether test-panel runs chose this checkpoint or its recipe: its pairing is then no test on "
                     "fresh data, and the page says so"),
    )

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        _dt.date.fromisoformat(value)  # 2025-02-30 matches the pattern but is no date
        return value


# A training log's rows, drawn by learning_curves.png: the largest step (an int a float holds exactly, so
# the x axis places it), and the longest validation split name, a legend label.
MAX_TRAINING_STEP = 2**53
MAX_LABEL_CHARS = 300


def label_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a plot's label (a validation split name), or ``None``.

    A lone surrogate (JSON can escape one, ``"\\ud800"``) is no character: no font draws it and
    no UTF-8 file holds it, so the plot would fail after verify passed.
    """
    if type(value) is not str:
        return "must be str"
    if not 1 <= len(value) <= MAX_LABEL_CHARS:
        return f"must be 1 to {MAX_LABEL_CHARS} characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (\\ud800-\\udfff), which is no character"
    return None


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``submission.json``."""
    return SubmissionInfo.model_json_schema()


def parse_submission(data: Any, *, name: str) -> SubmissionInfo:
    """Validate the parsed ``submission.json`` ``data``; the first problem names its field."""
    try:
        return SubmissionInfo.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or None
        raise LeaderboardError(f"does not match the submission schema: {first['msg']}",
                               file=name, field=field) from None
