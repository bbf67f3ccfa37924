#!/usr/bin/env python3
"""LLM mode against a small real model, next to LLM-free on the same instances.

    python bench/llm_server.py setup        # once: llama-server + Qwen2.5-Coder-0.5B (Q4 GGUF)
    python bench/llm_eval.py --repos TREES [--ids-file ../shared/data/lite_sample30.txt]
                             [--pipeline blagent] [--out-dir DIR] [--record FILE]
                             [--replay FILE]

Starts llama-server on 127.0.0.1 (see `llm_server.py`), runs `blagent eval` in LLM mode
(`--pipeline`, default blagent) through it, then LLM-free on the same instances, and prints
MRR, Acc@1/3/5/10 side by side with the LLM's cost: prompt and completion tokens per instance,
calls, parse failures, retries, fallbacks, and wall time per instance. `--record` keeps every
exchange in a cassette, so the run replays exactly with `blagent eval --llm-replay FILE`.
`--replay` answers from an earlier run's cassette and asks the model only what it does not
hold: after a pipeline change, only the changed calls cost model time (with `--record`, the
new cassette holds the whole run). `--out-dir`'s `report.json` is a new file or an earlier
run's (`llm`, `llm_free`), never an input nor inside `--repos` (refused before the server starts).
Benchmark tooling only: not part of the wheel nor of its dependencies.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import llm_server
import safe_output

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"


def blagent_eval(args: argparse.Namespace, out: Path, extra: list[str]) -> tuple[dict, float]:
    cmd = [
        args.blagent, "eval", "--dataset", str(args.dataset), "--repos", str(args.repos),
        "--ids-file", str(args.ids_file), "--format", "json", "--quiet", "--out", str(out), *extra,
    ]  # fmt: skip
    print("$", " ".join(cmd), file=sys.stderr, flush=True)
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        sys.exit(f"blagent eval failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), seconds


def row(name: str, m: dict, seconds: float) -> str:
    n = max(m["instances"], 1)
    return (
        f"{name:<26} {m['instances']:>3}  {m['mrr']:.3f}  {m['acc'][0]:.3f}  {m['acc'][1]:.3f}  "
        f"{m['acc'][2]:.3f}  {m['acc'][3]:.3f}  {seconds / n:7.1f}"
    )


def rank_changes(llm_preds: Path, free_preds: Path) -> list[str]:
    """One line per instance whose gold rank differs between the two prediction files."""

    def ranks(path: Path) -> dict[str, int | None]:
        lines = (json.loads(line) for line in path.read_text().splitlines() if line.strip())
        return {p["instance_id"]: p.get("gold_rank") for p in lines}

    def show(rank: int | None) -> str:
        return "-" if rank is None else str(rank)

    llm, free = ranks(llm_preds), ranks(free_preds)
    return [
        f"  {iid:<40} LLM-free {show(free[iid]):>2} -> LLM {show(rank):>2}"
        for iid, rank in llm.items()
        if iid in free and free[iid] != rank
    ]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--repos", required=True, type=Path, help="one tree per instance: DIR/<instance_id>"
    )
    ap.add_argument("--dataset", type=Path, default=DATA / "swebench_lite.jsonl")
    ap.add_argument("--ids-file", type=Path, default=DATA / "lite_sample30.txt")
    ap.add_argument("--pipeline", choices=["blagent", "rrl"], default="blagent")
    ap.add_argument("--out-dir", type=Path, default=Path("llm-eval"))
    ap.add_argument("--record", type=Path, help="append every LLM exchange to this cassette")
    ap.add_argument(
        "--replay", type=Path, help="answer from this cassette; the model answers what it lacks"
    )
    ap.add_argument(
        "--llm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="passed to blagent eval (LLM pipeline options); repeatable",
    )
    ap.add_argument("--blagent", default=str(ROOT / ".venv" / "bin" / "blagent"))
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=llm_server.DEFAULT_CTX)
    args = ap.parse_args()
    report = args.out_dir / "report.json"
    inputs = [args.dataset, args.ids_file, args.record, args.replay]
    ours = safe_output.json_object_with("llm", "llm_free")
    safe_output.check(report, ours, "an earlier report: llm, llm_free", inputs, [args.repos])
    args.out_dir.mkdir(parents=True, exist_ok=True)

    llm_server.stop_on_signals()
    with llm_server.Server(args.port or llm_server.free_port(), args.ctx, args.threads) as server:
        extra = ["--pipeline", args.pipeline, "--llm-base-url", server.base_url,
                 "--llm-model", llm_server.MODEL_ALIAS, "--llm-concurrency", "1"]  # fmt: skip
        if args.record:
            extra += ["--llm-record", str(args.record)]
        if args.replay:
            extra += ["--llm-replay", str(args.replay)]
        for option in args.llm_option:
            extra += ["--llm-option", option]
        llm, llm_seconds = blagent_eval(args, args.out_dir / f"{args.pipeline}.jsonl", extra)
    free, free_seconds = blagent_eval(args, args.out_dir / "llm_free.jsonl", [])
    safe_output.write(report, json.dumps({"llm": llm, "llm_free": free}, indent=2))

    print(f"{'':<26} {'n':>3}  MRR    Acc@1  Acc@3  Acc@5  Acc@10  s/inst")
    print(row(f"{args.pipeline} + Qwen2.5-0.5B", llm["overall"], llm_seconds))
    print(row("LLM-free (fused)", free["overall"], free_seconds))
    cost = llm.get("llm")
    if cost:
        total, mean = cost["total"], cost["mean"]
        print(
            f"LLM: prompt tokens/instance {mean['prompt_tokens']:.0f}, "
            f"completion {mean['completion_tokens']:.0f}, calls {total['calls']}, "
            f"parse failures {total['parse_failures']}, retries {total['retries']}, "
            f"fallbacks {total['fallbacks']}, "
            f"ranked by the model {cost['llm_ranked']}/{cost['instances']}, "
            f"mean model weight {mean.get('model_weight', 0.0):.2f}"
        )
    changes = rank_changes(args.out_dir / f"{args.pipeline}.jsonl", args.out_dir / "llm_free.jsonl")
    print(f"gold rank changed in {len(changes)} instance(s) (- = not in the top 10):")
    print("\n".join(changes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
