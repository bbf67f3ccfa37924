#!/usr/bin/env python3
"""How often the line-similarity decision of `blagent analyze-failures` (the `similar` crate's
character-diff ratio >= 0.6) agrees with Python difflib's `SequenceMatcher(None, a, b).ratio()
>= 0.6`, on real line pairs from the SWE-bench Lite gold patches.

    python bench/similarity_agreement.py [--dataset ../shared/data/swebench_lite.jsonl]

Pairs (lines trimmed as the analysis trims them, blank lines left out):
  replaced   the i-th removed line of a change block with its i-th added line
  crossed    every removed line of a hunk with every added line of the same hunk
  adjacent   consecutive lines of a hunk's base side (context and removed lines)
  first      each gold patch's first changed code line with the next instance's (same repo)
The Rust ratios come from `cargo run --example line_ratio` (it calls the analysis's own
`line_similarity`). Prints the agreement per kind of pair and overall, with the pair counts.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THRESHOLD = 0.6


def hunks(patch: str) -> list[list[str]]:
    """The body lines of each hunk (prefix kept)."""
    out: list[list[str]] = []
    for line in patch.splitlines():
        if line.startswith("@@"):
            out.append([])
        elif out and line[:1] in (" ", "+", "-") and not line.startswith(("+++ ", "--- ")):
            out[-1].append(line)
    return [h for h in out if h]


def is_code(text: str) -> bool:
    return bool(text) and not text.startswith("#") and not text.startswith(('"""', "'''"))


def pairs_of(patch: str) -> dict[str, list[tuple[str, str]]]:
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for hunk in hunks(patch):
        removed, added, block_removed, block_added = [], [], [], []
        base_side = []
        for line in [*hunk, " "]:
            prefix, text = line[0], line[1:].strip()
            if prefix == " " and (block_removed or block_added):
                pairs["replaced"] += [(a, b) for a, b in zip(block_removed, block_added)]
                block_removed, block_added = [], []
            if prefix == "-" and text:
                removed.append(text)
                block_removed.append(text)
            elif prefix == "+" and text:
                added.append(text)
                block_added.append(text)
            if prefix != "+" and text:
                base_side.append(text)
        pairs["crossed"] += [(a, b) for a in removed[:10] for b in added[:10]]
        pairs["adjacent"] += list(zip(base_side, base_side[1:]))
    return pairs


def first_code_line(patch: str) -> str | None:
    for hunk in hunks(patch):
        for line in hunk:
            text = line[1:].strip()
            if line[0] in "+-" and is_code(text):
                return text
    return None


def rust_ratios(pairs: list[tuple[str, str]]) -> list[float]:
    env = dict(os.environ)
    cmd = ["cargo", "run", "--quiet", "-p", "blagent-core", "--example", "line_ratio"]
    stdin = "".join(json.dumps([a, b]) + "\n" for a, b in pairs)
    proc = subprocess.run(
        cmd, input=stdin, capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    return [float(x) for x in proc.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--dataset", default=str(ROOT.parent / "shared" / "data" / "swebench_lite.jsonl")
    )
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.dataset)]
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    by_repo: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        for kind, pairs in pairs_of(row["patch"]).items():
            groups[kind] += pairs
        first = first_code_line(row["patch"])
        if first:
            by_repo[row["repo"]].append(first)
    for firsts in by_repo.values():
        groups["first"] += list(zip(firsts, firsts[1:]))

    kinds = ["replaced", "crossed", "adjacent", "first"]
    every = [(kind, a, b) for kind in kinds for a, b in groups[kind]]
    rust = rust_ratios([(a, b) for _, a, b in every])
    assert len(rust) == len(every), "one Rust ratio per pair"
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # pairs, agree, near, rust>=
    disagreements = []
    for (kind, a, b), r in zip(every, rust):
        p = difflib.SequenceMatcher(None, a, b).ratio()
        for key in (kind, "all"):
            s = stats[key]
            s[0] += 1
            s[1] += (r >= THRESHOLD) == (p >= THRESHOLD)
            s[2] += abs(p - THRESHOLD) <= 0.1
            s[3] += r >= THRESHOLD
        if (r >= THRESHOLD) != (p >= THRESHOLD):
            disagreements.append((kind, r, p, a, b))

    print(f"{'pairs':<10} {'n':>6} {'agree':>8}  {'near 0.6':>8}  {'similar>=0.6':>12}")
    for key in [*kinds, "all"]:
        n, agree, near, pos = stats[key]
        print(f"{key:<10} {n:>6} {100 * agree / n:>7.2f}%  {near:>8}  {pos:>12}")
    print(
        f"\nagreement {100 * stats['all'][1] / stats['all'][0]:.2f}% over {stats['all'][0]} pairs "
        f"({len(disagreements)} disagree); 'near 0.6' = difflib ratio within 0.1 of the threshold"
    )
    looser = sum(r >= THRESHOLD for _, r, _, _, _ in disagreements)
    near = stats["all"][2]
    near_disagree = sum(abs(p - THRESHOLD) <= 0.1 for _, _, p, _, _ in disagreements)
    print(
        f"similar >= 0.6 > difflib: {looser}; difflib >= 0.6 > similar: {len(disagreements) - looser}; "
        f"agreement on the {near} pairs near 0.6: {100 * (near - near_disagree) / max(near, 1):.2f}%"
    )
    for kind, r, p, a, b in disagreements[:8]:
        print(f"  {kind}: similar {r:.3f} difflib {p:.3f}  {a[:50]!r} | {b[:50]!r}")


if __name__ == "__main__":
    main()
