#!/usr/bin/env python3
"""blagent on Long Code Arena-style tasks (Java, Kotlin, Python) next to plain BM25, in one run.

    python bench/lca_eval.py --dataset ../shared/data/lca_jvm_dev60.jsonl --repos TREES --out DIR \
        [--ids-file F] [--dense] [--include-tests] [--functions]

Writes DIR/bm25.jsonl (the baseline), DIR/blagent.jsonl (`blagent eval`, LLM-free) and, with
`--dense`, DIR/blagent_dense.jsonl, each with its text report (DIR/NAME.report.txt); then prints `blagent compare` of the runs against the
baseline, over all instances and per language (MRR, Acc@k in both readings, MAP@k, paired
significance). With `--functions` the blagent runs also rank functions and methods
(`--granularity function`), and their function-level metrics against the gold patches' methods
follow, overall and per language.

The baseline is the one the Reformulate-Retrieve-Localize paper starts from: BM25 over whole
files (`bm25s`, k1 0.9, b 0.4, its default tokenizer with English stop words), the raw issue as
the query, every `.py`, `.java` and `.kt` file of the tree (hidden folders left out,
files over 2 MiB skipped), test files included. Needs `pip install bm25s`; blagent is run as
the `blagent` command next to this interpreter (the README's `.venv`).

An output is never written over an input (the dataset, the ids file), inside `--repos`, or over
a file this script did not write (`bm25.jsonl` lines carry `"baseline": "bm25s"`, a report
starts with its REPORT_MARK line); such a run is refused in one line before anything is done.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import safe_output

EXTENSIONS = (".py", ".java", ".kt")
MAX_FILE_BYTES = 2 * 1024 * 1024
TOP = 50
#: The first line of each report this script writes: how it tells its reports from others.
REPORT_MARK = "# blagent eval report, written by bench/lca_eval.py\n"


def source_files(tree: Path) -> list[str]:
    """Repository-relative paths of the tree's source files, sorted."""
    found = []
    for folder, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            path = Path(folder, name)
            if name.endswith(EXTENSIONS) and path.is_file() and not path.is_symlink():
                if path.stat().st_size <= MAX_FILE_BYTES:
                    found.append(path.relative_to(tree).as_posix())
    return sorted(found)


def bm25_ranking(tree: Path, issue: str) -> list[str]:
    """The tree's files ranked by BM25 of the raw issue over their whole text."""
    import bm25s

    paths = source_files(tree)
    if not paths:
        return []
    texts = []
    for rel in paths:
        with open(tree / rel, "rb") as f:
            texts.append(f.read(MAX_FILE_BYTES).decode("utf-8", errors="replace"))
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    query = bm25s.tokenize([issue], stopwords="en", show_progress=False)
    if not query.vocab:
        return []
    docs, scores = retriever.retrieve(query, k=min(TOP, len(paths)), show_progress=False)
    return [paths[d] for d, s in zip(docs[0], scores[0]) if s > 0]


def blagent_command() -> str:
    here = Path(sys.executable).parent / "blagent"
    return str(here) if here.exists() else "blagent"


def function_rows(report: str) -> str:
    """The header and the function-level rows, overall and per language, of `blagent eval`'s
    text report (the per-repository rows left out)."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("function level"))
    rows = [lines[0], lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith(("  overall", "  language ")):
            break
        rows.append(line)
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", required=True, type=Path)
    parser.add_argument(
        "--repos", required=True, type=Path, help="trees folder: <repos>/<instance_id>"
    )
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--ids-file", type=Path)
    parser.add_argument("--dense", action="store_true", help="also run blagent with --dense")
    parser.add_argument(
        "--include-tests", action="store_true", help="blagent indexes test files too"
    )
    parser.add_argument(
        "--functions", action="store_true", help="also report blagent's function-level metrics"
    )
    args = parser.parse_args()

    names = ["blagent", "blagent_dense"][: 2 if args.dense else 1]
    inputs, folders = (args.dataset, args.ids_file), (args.repos,)
    bm25_out = args.out / "bm25.jsonl"
    ours = safe_output.json_lines_with("instance_id", "found_files", "baseline")
    safe_output.check(bm25_out, ours, "lines with a baseline field", inputs, folders)
    for name in names:
        ours = safe_output.starts_with(REPORT_MARK)
        report = args.out / f"{name}.report.txt"
        safe_output.check(report, ours, f"its first line {REPORT_MARK.strip()!r}", inputs, folders)
    rows = [json.loads(line) for line in args.dataset.read_text().splitlines() if line.strip()]
    wanted = set(args.ids_file.read_text().split()) if args.ids_file else None
    rows = [
        r
        for r in rows
        if (wanted is None or r["instance_id"] in wanted)
        and (args.repos / r["instance_id"]).is_dir()
    ]
    print(f"{len(rows)} instances with a tree", file=sys.stderr)
    with tempfile.TemporaryDirectory() as scratch:  # the ids of the instances with a tree
        ids_file = Path(scratch, "ids.txt")
        ids_file.write_text("".join(r["instance_id"] + "\n" for r in rows))
        return run(args, rows, names, ids_file, Path(scratch))


def run(
    args: argparse.Namespace, rows: list[dict], names: list[str], ids_file: Path, scratch: Path
) -> int:
    start = time.perf_counter()
    lines = []
    for row in rows:
        ranked = bm25_ranking(args.repos / row["instance_id"], row["problem_statement"])
        line = {"instance_id": row["instance_id"], "found_files": ranked, "baseline": "bm25s"}
        lines.append(json.dumps(line) + "\n")
    safe_output.write(args.out / "bm25.jsonl", "".join(lines))
    print(f"bm25: {time.perf_counter() - start:.1f} s", file=sys.stderr)

    blagent = blagent_command()
    runs = [args.out / "bm25.jsonl"]
    reports = {}
    for name in names:
        extra = ["--dense"] if name == "blagent_dense" else []
        command = [
            blagent,
            "eval",
            "--dataset",
            str(args.dataset),
            "--repos",
            str(args.repos),
            "--ids-file",
            str(ids_file),
            "--out",
            str(args.out / f"{name}.jsonl"),
            "--quiet",
            *extra,
        ]
        if args.include_tests:
            command.append("--include-tests")
        if args.functions:
            command += ["--granularity", "function"]
        start = time.perf_counter()
        report = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        safe_output.write(args.out / f"{name}.report.txt", REPORT_MARK + report)
        reports[name] = report
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
        runs.append(args.out / f"{name}.jsonl")

    languages = sorted({r.get("language", "") for r in rows} - {""})
    scopes = [("all", ids_file)]
    for language in languages:
        path = scratch / f"language-{language}.txt"
        path.write_text(
            "".join(r["instance_id"] + "\n" for r in rows if r.get("language") == language)
        )
        scopes.append((f"language {language}", path))
    for title, ids in scopes:
        compare = [
            blagent,
            "compare",
            *map(str, runs),
            "--dataset",
            str(args.dataset),
            "--ids-file",
            str(ids),
            "--format",
            "text",
        ]
        text = subprocess.run(compare, check=True, capture_output=True, text=True).stdout
        print(f"## {title}\n{text}")
    if args.functions:
        for name, report in reports.items():
            print(f"## functions, {name}\n{function_rows(report)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
