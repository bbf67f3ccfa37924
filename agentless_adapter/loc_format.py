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

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from blagent import LocalizationResult

from .offline import json_lines

#: The key under which a line carries the localizer's own result (Agentless ignores it).
EXTRA_KEY = "blagent"
#: The keys Agentless reads from a file-level line.
AGENTLESS_KEYS = ("instance_id", "found_files", "additional_artifact_loc_file", "file_traj")
#: Keys whose presence would make Agentless skip its related-level inputs.
RELATED_LEVEL_KEYS = ("found_related_locs", "additional_artifact_loc_related", "related_loc_traj")


def to_loc_line(result: LocalizationResult | dict[str, Any]) -> dict[str, Any]:
    """The Agentless line for one result (a `LocalizationResult` or its JSON data)."""
    data = result.to_dict() if isinstance(result, LocalizationResult) else result
    paths: list[str] = []
    for f in data["files"]:
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
    """Appends one line per result to `path`; returns how many were written."""
    count = 0
    with Path(path).open("a", encoding="utf-8") as f:
        for result in results:
            f.write(json.dumps(to_loc_line(result)) + "\n")
            count += 1
    return count


def read_loc_outputs(path: str | Path) -> list[dict[str, Any]]:
    """The lines of a `loc_outputs.jsonl`, as Agentless's `load_jsonl` reads them, each a JSON
    object; a FIFO or device, a file over 1 GiB or a line that is not a JSON object is
    `offline.BadInput` (a `ValueError`), naming the file and line."""
    return json_lines(Path(path), "loc outputs")
