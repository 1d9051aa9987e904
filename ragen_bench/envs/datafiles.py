"""Reading user-supplied local instance files (JSONL, or Parquet when pandas can read it).

Nothing here downloads: the path must name an existing local file.  Errors name the
file, the line (JSONL) or row (Parquet), and the field at fault.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

# field name -> check returning the cleaned value or raising ValueError with a reason
FieldCheck = Callable[[Any], Any]


class InstanceFileError(ValueError):
    """A local instance file is missing, unreadable or malformed."""


def _rows(path: Path) -> list[tuple[str, Any]]:
    """(location, raw record) pairs, location being "line N" or "row N" (1-based)."""
    if path.suffix == ".parquet":
        try:
            import pandas
        except ImportError as error:
            raise InstanceFileError(
                f"{path}: reading Parquet needs pandas and pyarrow (pip install pandas pyarrow)"
            ) from error
        try:
            frame = pandas.read_parquet(path)
        except Exception as error:  # pyarrow missing or a corrupt file: both reported plainly
            raise InstanceFileError(f"{path}: cannot read as Parquet ({error})") from error
        return [(f"row {index + 1}", record) for index, record in enumerate(frame.to_dict(orient="records"))]
    rows = []
    try:
        handle = path.open("rb")
    except OSError as error:
        raise InstanceFileError(f"{path}: cannot open ({error.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InstanceFileError(
                    f"{path}: line {number}: not UTF-8 (byte {raw[error.start]:#04x} at column {error.start + 1}); "
                    "save the file as UTF-8"
                ) from None
            if not line.strip():
                continue
            try:
                rows.append((f"line {number}", json.loads(line, parse_constant=_refuse_constant)))
            except json.JSONDecodeError as error:
                raise InstanceFileError(f"{path}: line {number}: not valid JSON ({error.msg})") from None
            except ValueError as error:  # NaN/Infinity, or an integer too long to convert
                raise InstanceFileError(f"{path}: line {number}: {error}") from None
            except RecursionError:
                raise InstanceFileError(f"{path}: line {number}: JSON nested too deeply") from None
    return rows


def _refuse_constant(name: str) -> NoReturn:
    """JSON has no NaN/Infinity; Python's reader accepts them unless told otherwise."""
    raise ValueError(f"{name} is not a number an instance may hold")


def read_records(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """(location, record) pairs of a local file; ``.parquet`` via pandas, anything else as JSON Lines."""
    path = Path(path)
    if not path.is_file():
        raise InstanceFileError(f"{path}: no such file (give the path of a local .jsonl or .parquet file)")
    records = _rows(path)
    for location, record in records:
        if not isinstance(record, dict):
            raise InstanceFileError(f"{path}: {location}: expected a JSON object, got {type(record).__name__}")
    if not records:
        raise InstanceFileError(f"{path}: no instances in the file")
    return records


def check_fields(
    path: str | Path, records: list[tuple[str, dict[str, Any]]], fields: dict[str, FieldCheck]
) -> list[dict[str, Any]]:
    """Each record reduced to ``fields``, every value passed through its check."""
    instances = []
    for location, record in records:
        cleaned = {}
        for name, check in fields.items():
            if name not in record:
                raise InstanceFileError(f"{path}: {location}: missing field {name!r}")
            try:
                cleaned[name] = check(record[name])
            except (TypeError, ValueError) as error:
                raise InstanceFileError(f"{path}: {location}: field {name!r}: {error}") from None
        instances.append(cleaned)
    return instances


def load_instances(path: str | Path, fields: dict[str, FieldCheck]) -> list[dict[str, Any]]:
    """Every record of ``path``, reduced to ``fields`` and checked by them."""
    return check_fields(path, read_records(path), fields)
