"""One Markdown row per instance of what each Agentless stage produced in a `rehearse.sh` WORK
folder: locations (class/function and line entries over how many files), the patch (changed
lines, or empty), requests and token usage as the endpoint reported them (every request in
Agentless's own log, retries included), wall time and exit code from `stage_times.tsv`; then
the totals per stage.

    python -m agentless_adapter.run_table WORK

Every file is read only where it is a regular file, up to 1 GiB (`offline.read_regular`); an
instance id that is not a file name (`/`, `..`, empty) is refused, as are a missing or
malformed `stage_times.tsv` and `file_level/loc_outputs.jsonl`: one line, exit 1.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from .offline import MAX_INPUT_BYTES, BadInput, file_name_id, json_lines, read_regular

STAGES = {
    # stage: (output under WORK/results, its locations key, its log folder under results)
    "related_level": (
        "related_elements/loc_outputs.jsonl",
        "found_related_locs",
        "related_elements/localization_logs",
    ),
    "edit_location": (
        "edit_location_samples/loc_outputs.jsonl",
        "found_edit_locs",
        "edit_location_samples/localization_logs",
    ),
    "repair": ("repair_sample_1/output.jsonl", None, "repair_sample_1/repair_logs"),
}


def jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """A stage's output by instance id; empty where the stage wrote none (no file there)."""
    if not path.exists() and not path.is_symlink():
        return {}
    rows = json_lines(path, "stage output")
    return {r["instance_id"]: r for r in rows if isinstance(r.get("instance_id"), str)}


NUMBER = re.compile(r"-?[0-9]{1,18}")
USAGE = re.compile(r"CompletionUsage\(completion_tokens=(\d+), prompt_tokens=(\d+)")


def usage(log: Path) -> tuple[int, int, int]:
    """(requests, prompt tokens, completion tokens) of every answer in an Agentless log."""
    if not log.exists() and not log.is_symlink():
        return 0, 0, 0
    text = read_regular(log, MAX_INPUT_BYTES, "log").decode("utf-8", errors="replace")
    found = [(int(c), int(p)) for c, p in USAGE.findall(text)]
    return len(found), sum(p for _, p in found), sum(c for c, _ in found)


def locs_summary(locs: Any, where: str = "locations") -> str:
    """`F fn/cls, L lines in N files` over a {file: [text]} map (or a list of samples). An
    entry that is not text (a number, a nested list) is left out, with a note naming `where`."""
    samples = locs if isinstance(locs, list) else [locs]
    entries, lines, files, skipped = 0, 0, set(), 0
    for sample in samples:
        if not isinstance(sample, dict):
            continue
        for path, texts in sample.items():
            items = texts if isinstance(texts, list) else [texts]
            text = "\n".join(t for t in items if isinstance(t, str))
            skipped += sum(not isinstance(t, str) for t in items)
            kinds = [t.split(":", 1)[0].strip() for t in text.splitlines() if ":" in t]
            entries += sum(k in ("function", "class") for k in kinds)
            lines += kinds.count("line")
            if kinds:
                files.add(path)
    if skipped:
        print(f"run_table: {where}: {skipped} entries are not text; left out", file=sys.stderr)
    return f"{entries} fn/cls, {lines} lines in {len(files)} files"


def patch_summary(patch: str) -> str:
    if not patch.strip():
        return "empty"
    changed = [x for x in patch.splitlines() if x[:1] in "+-" and not x.startswith(("+++", "---"))]
    files = sum(x.startswith("diff --git") for x in patch.splitlines())
    return f"{len(changed)} changed lines in {files} files"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentless_adapter.run_table")
    parser.add_argument("work", type=Path, help="a rehearse.sh WORK folder")
    work = parser.parse_args(argv).work
    try:
        return _table(work)
    except BadInput as err:
        print(f"run_table: {err}", file=sys.stderr)
        return 1


def _stage_times(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """`stage_times.tsv`: (stage, instance) -> (seconds, exit code)."""
    data = read_regular(path, MAX_INPUT_BYTES, "stage times")
    times: dict[tuple[str, str], tuple[int, int]] = {}
    for number, row in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        fields = row.split("\t")
        if len(fields) != 4 or not all(NUMBER.fullmatch(f) for f in fields[2:]):
            raise BadInput(f"{path} line {number} is not: stage, instance, seconds, exit code")
        stage, iid, secs, rc = fields
        times[(stage, iid)] = (int(secs), int(rc))
    return times


def _table(work: Path) -> int:
    times = _stage_times(work / "stage_times.tsv")
    started = work / "file_level/loc_outputs.jsonl"
    ids = []
    for number, row in enumerate(json_lines(started, "file-level output"), 1):
        try:
            ids.append(file_name_id(row.get("instance_id")))
        except BadInput as err:
            raise BadInput(f"{started} line {number}: {err}") from None
    outputs = {s: jsonl(work / "results" / f) for s, (f, _, _) in STAGES.items()}
    patches = jsonl(work / "results/repair_sample_1/output_0_processed.jsonl")
    ran = [s for s in STAGES if any(s == st for st, _ in times)]
    print("| instance | " + " | ".join(ran) + " |")
    print("|---" * (len(ran) + 1) + "|")
    totals = {s: [0, 0, 0, 0, 0] for s in ran}  # requests, prompt, completion, seconds, failed
    for iid in ids:
        cells = []
        for stage in ran:
            secs, rc = times.get((stage, iid), (0, -1))
            _, locs_key, logs = STAGES[stage]
            n, p, c = usage(work / "results" / logs / f"{iid}.log")
            for i, add in enumerate((n, p, c, secs)):
                totals[stage][i] += add
            row = outputs[stage].get(iid)
            if row is None:
                what = f"**failed** (exit {rc})"
                totals[stage][4] += 1
            elif locs_key:
                what = locs_summary(row.get(locs_key), f"{stage} {iid} {locs_key}")
            else:
                patch = patches.get(iid, {}).get("model_patch")
                what = "patch: " + patch_summary(patch if isinstance(patch, str) else "")
            cells.append(f"{what}; {n} req, {p}+{c} tok, {secs} s")
        print(f"| {iid} | " + " | ".join(cells) + " |")
    print()
    for stage, (n, p, c, secs, failed) in totals.items():
        tokens = f"{p} prompt + {c} completion tokens"
        print(f"- {stage}: {n} requests, {tokens}, {secs} s, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
