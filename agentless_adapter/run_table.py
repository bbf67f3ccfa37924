"""One Markdown row per instance of what each Agentless stage produced in a `rehearse.sh` WORK
folder: locations (class/function and line entries over how many files), the patch (changed
lines, or empty), token usage as the endpoint reported it, wall time and exit code from
`stage_times.tsv`; then the totals per stage.

    python -m agentless_adapter.run_table WORK
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STAGES = {
    # stage: (output under WORK/results, its locations key, its trajectory key)
    "related_level": (
        "related_elements/loc_outputs.jsonl",
        "found_related_locs",
        "related_loc_traj",
    ),
    "edit_location": (
        "edit_location_samples/loc_outputs.jsonl",
        "found_edit_locs",
        "edit_loc_traj",
    ),
    "repair": ("repair_sample_1/output.jsonl", None, "traj"),
}


def jsonl(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = (json.loads(t) for t in path.read_text(encoding="utf-8").splitlines() if t.strip())
    return {r["instance_id"]: r for r in rows}


def usages(traj: Any) -> Iterator[dict[str, int]]:
    if isinstance(traj, dict):
        if isinstance(traj.get("usage"), dict):
            yield traj["usage"]
        else:
            for v in traj.values():
                yield from usages(v)
    elif isinstance(traj, list):
        for v in traj:
            yield from usages(v)


def locs_summary(locs: Any) -> str:
    """`F fn/cls, L lines in N files` over a {file: [text]} map (or a list of samples)."""
    samples = locs if isinstance(locs, list) else [locs]
    entries, lines, files = 0, 0, set()
    for sample in samples:
        for path, texts in (sample or {}).items():
            text = "\n".join(texts) if isinstance(texts, list) else str(texts)
            kinds = [t.split(":", 1)[0].strip() for t in text.splitlines() if ":" in t]
            entries += sum(k in ("function", "class") for k in kinds)
            lines += kinds.count("line")
            if kinds:
                files.add(path)
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
    times: dict[tuple[str, str], tuple[int, int]] = {}
    for row in (work / "stage_times.tsv").read_text().splitlines():
        stage, iid, secs, rc = row.split("\t")
        times[(stage, iid)] = (int(secs), int(rc))
    ids = [json.loads(t)["instance_id"] for t in (work / "file_level/loc_outputs.jsonl").open()]
    outputs = {s: jsonl(work / "results" / f) for s, (f, _, _) in STAGES.items()}
    patches = jsonl(work / "results/repair_sample_1/output_0_processed.jsonl")
    ran = [s for s in STAGES if any(s == st for st, _ in times)]
    print("| instance | " + " | ".join(ran) + " |")
    print("|---" * (len(ran) + 1) + "|")
    totals = {s: [0, 0, 0, 0] for s in ran}  # prompt, completion, seconds, failures
    for iid in ids:
        cells = []
        for stage in ran:
            secs, rc = times.get((stage, iid), (0, -1))
            row = outputs[stage].get(iid)
            if row is None:
                cells.append(f"**failed** (exit {rc}, {secs} s)")
                totals[stage][3] += 1
                continue
            _, locs_key, traj_key = STAGES[stage]
            use = list(usages(row.get(traj_key)))
            p = sum(u.get("prompt_tokens", 0) for u in use)
            c = sum(u.get("completion_tokens", 0) for u in use)
            for i, add in enumerate((p, c, secs)):
                totals[stage][i] += add
            what = (
                locs_summary(row.get(locs_key))
                if locs_key
                else "patch: " + patch_summary(patches.get(iid, {}).get("model_patch", ""))
            )
            cells.append(f"{what}; {p}+{c} tok, {secs} s")
        print(f"| {iid} | " + " | ".join(cells) + " |")
    print()
    for stage, (p, c, secs, failed) in totals.items():
        print(f"- {stage}: {p} prompt + {c} completion tokens, {secs} s, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
