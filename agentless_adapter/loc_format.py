"""Agentless's file-level `loc_outputs.jsonl`, as its later stages read it.

`agentless/fl/localize.py --start_file FILE` reads each line's `instance_id` and `found_files`
(repository-relative paths, best first; an empty list makes it skip the instance) and, because
`additional_artifact_loc_file` is present, `file_traj`. Agentless's own `fl/combine.py` writes
both as `{}`. A `found_related_locs` key makes it treat the related level as done and read
`additional_artifact_loc_related` and `related_loc_traj` too, so a file-level line has none of
the three and a related-level line (`blagent batch --related-locs`: blagent's functions of the top
3 files, `{path: ["class: C\nfunction: C.m"]}`, for Agentless's edit-location stage) has all
three, naming only files of `found_files`. Other keys are ignored: the localizer's full result
rides along under `blagent`. `schemas/agentless-loc-line.schema.json` is the same contract as a
JSON Schema.

`blagent batch` writes these lines itself (from the Rust core); `to_loc_line` makes the same
from the result of any `blagent.FileLocalizer`, so another localizer can feed Agentless too.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from blagent import LocalizationResult

from .offline import MAX_INPUT_BYTES, OutputRefused, cut_short_start, json_lines, rows_with

#: The key under which a line carries the localizer's own result (Agentless ignores it).
EXTRA_KEY = "blagent"
#: The keys Agentless reads from a file-level line.
AGENTLESS_KEYS = ("instance_id", "found_files", "additional_artifact_loc_file", "file_traj")
#: The fields every line `blagent batch` and `write_loc_outputs` write has; what a file they
#: append to must hold (Agentless's own `loc_outputs.jsonl` or a dataset does not).
LINE_FIELDS = ("instance_id", "found_files", EXTRA_KEY)
#: How each of those lines starts, so how one cut short by an interrupted write starts.
LINE_PREFIX = '{"instance_id":'
#: Keys whose presence would make Agentless skip its related-level inputs.
RELATED_LEVEL_KEYS = ("found_related_locs", "additional_artifact_loc_related", "related_loc_traj")


def to_loc_line(result: LocalizationResult | dict[str, Any]) -> dict[str, Any]:
    """The Agentless line for one result (a `LocalizationResult` or its JSON data)."""
    data = result.to_dict() if isinstance(result, LocalizationResult) else result
    files = data.get("files") if isinstance(data, dict) else None
    if (
        not isinstance(files, list)
        or not all(isinstance(f, dict) and isinstance(f.get("path"), str) for f in files)
        or not isinstance(data.get("instance_id"), str)
        or not data["instance_id"]
    ):
        raise ValueError(
            "a result must be a LocalizationResult or its JSON data: an object with a "
            "non-empty `instance_id` and `files`, a list of objects with a `path`"
        )
    paths: list[str] = []
    for f in files:
        if f["path"] not in paths:
            paths.append(f["path"])
    return {
        "instance_id": data["instance_id"],
        "found_files": paths,
        "additional_artifact_loc_file": {},
        "file_traj": {},
        EXTRA_KEY: data,
    }


def contract_problems(line: dict[str, Any]) -> list[str]:
    """What, if anything, keeps Agentless from reading `line` as a file-level result."""
    problems = [f"missing `{key}`" for key in AGENTLESS_KEYS if key not in line]
    if not isinstance(line.get("instance_id"), str) or not line.get("instance_id"):
        problems.append("`instance_id` is not a non-empty string")
    files = line.get("found_files")
    if not isinstance(files, list) or not all(isinstance(f, str) and f for f in files):
        problems.append("`found_files` is not a list of paths")
    else:
        if any(f.startswith("/") or f.startswith("./") for f in files):
            problems.append("`found_files` holds a path that is not repository-relative")
        if len(set(files)) != len(files):
            problems.append("`found_files` repeats a path")
    for key in ("additional_artifact_loc_file", "file_traj"):
        if key in line and not isinstance(line[key], dict):
            problems.append(f"`{key}` is not an object")
    present = [key for key in RELATED_LEVEL_KEYS if key in line]
    if present and len(present) < len(RELATED_LEVEL_KEYS):
        missing = ", ".join(f"`{k}`" for k in RELATED_LEVEL_KEYS if k not in line)
        problems.append(f"a related level line without {missing}: Agentless would fail reading it")
    related = line.get("found_related_locs")
    if related is not None:
        if not isinstance(related, dict) or not all(
            isinstance(v, list) and all(isinstance(s, str) for s in v) for v in related.values()
        ):
            problems.append("`found_related_locs` is not {path: [locations]}")
        elif isinstance(files, list) and not set(related) <= set(files):
            problems.append("`found_related_locs` names a file not in `found_files`")
    return problems


def write_loc_outputs(
    results: Iterable[LocalizationResult | dict[str, Any]], path: str | Path
) -> int:
    """Appends one line per result to `path` (created when missing); returns how many were
    written. A result that is neither a `LocalizationResult` nor its JSON data is a
    `ValueError` before the file is opened. Refused (`offline.OutputRefused`) before anything
    is written: a link, a file with another name (a hard link: the other may be a tree's
    source), a FIFO, device or folder, a file another run is writing (locked as `blagent batch` locks it), a
    file that is not one blagent writes (`LINE_FIELDS` on every line), and one of other lines
    (related-level, or a `blagent batch` run's, which carry its settings). As in `blagent batch`,
    a last line an interrupted write cut short is dropped first, and one saved without its
    newline gets it. A value JSON cannot hold (a NaN score) is a `ValueError` as well."""
    loc_lines = [to_loc_line(result) for result in results]
    try:
        lines = [json.dumps(line, allow_nan=False).encode() + b"\n" for line in loc_lines]
    except ValueError as err:  # NaN was written as the token `NaN`, which no JSON reader takes
        raise ValueError(f"a result holds a value JSON cannot hold: {err}") from None
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.EISDIR):
            raise
        raise OutputRefused(f"{path} is a link or a folder; name a regular file") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise OutputRefused(f"{path} is not a regular file")
    if info.st_nlink > 1:
        os.close(fd)
        raise OutputRefused(
            f"{path} has another name (a hard link), which may be a tree's source; "
            "name a file of its own"
        )
    with os.fdopen(fd, "r+b") as f:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputRefused(f"{path}: another run is writing it") from None
        data = f.read(MAX_INPUT_BYTES + 1)  # read under the lock, through this handle
        rows = (
            None
            if len(data) > MAX_INPUT_BYTES
            else rows_with(data, LINE_FIELDS, False, LINE_PREFIX)
        )
        if rows is None:
            raise OutputRefused(
                f"{path} exists and does not hold what blagent writes (JSON lines with "
                f"{', '.join(LINE_FIELDS)}); remove it or choose another file"
            )
        cut = cut_short_start(data, LINE_PREFIX)
        other = _other_kind(rows)
        if other:
            raise OutputRefused(f"{path} holds {other}; remove it or choose another file")
        if cut is not None:
            f.truncate(cut)
        elif data[data.rfind(b"\n") + 1 :].strip():  # a whole last line saved without one
            f.write(b"\n")
        for line in lines:
            f.write(line)
    return len(lines)


def _other_kind(rows: list[dict[str, Any]]) -> str | None:
    """What makes `rows` (a file's lines, as `rows_with` read them) another kind than the
    file-level lines `write_loc_outputs` adds, so that one file would hand Agentless two kinds
    of line; `None` where they are its kind."""
    for row in rows:
        if any(key in row for key in RELATED_LEVEL_KEYS):
            return "related-level lines (`blagent batch --related-locs`), not file-level ones"
        if "blagent_settings" in row:
            return "the lines of a `blagent batch` run, which resumes only lines of its settings"
    return None


def read_loc_outputs(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a `loc_outputs.jsonl`, as Agentless's `load_jsonl` reads them, each a JSON
    object; a FIFO or device, a file over 1 GiB or a line that is not a JSON object is
    `offline.BadInput` (a `ValueError`), naming the file and line."""
    return json_lines(Path(path), "loc outputs")
