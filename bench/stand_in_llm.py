#!/usr/bin/env python3
"""A stand-in for a strong LLM, for benchmarks only: an OpenAI-compatible chat-completions
server on 127.0.0.1 that answers blagent's real prompts from a published per-instance ranking
of a strong system (a "peer"), so blagent's HTTP client, parsing, budgets and fusion run
unchanged. Python standard library only; not part of the wheel.

    python bench/stand_in_llm.py --peer gpt-oss [--port 0] [--log FILE]  # prints the base URL
    python bench/stand_in_llm.py --peer gpt-oss --peer-mrr IDS_FILE      # the peer's own MRR
    python bench/stand_in_llm.py --peer gpt-oss --peer-functions FILE    # functions from a run

`--peer-functions` names a published function-level run in BLAgent's format (a list of
`{"problem_statement", "final_reranked_files": [{path: ["Class::method", ...]}]}`, e.g.
`results/rq1-6/blagent_function_level_loc_gpt-oss.json` in afifaniks/BLAgent, fetched by you and
kept outside this repository): the function-level rerank then names, for each file shown, the
functions that run named for it (none when it named none), instead of guessing them.

It finds the instance from the issue text in the prompt and the prompt kind from a sentence
only that template (prompts/) has, and answers each kind as bench/README.md describes; an
unknown instance or prompt gets `{}`, which blagent's parsers reject. Data: ../shared/data
(`--data`), read-only.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
ALIASES = {
    "claude-4.6": "BLAgent claude-4.6 (final_reranked_files)",
    "gpt-oss": "BLAgent gpt-oss (final_reranked_files)",
    "locagent-claude": "LocAgent claude-3.5 (BLAgent copy)",
    "agentless": "Agentless locs (BLAgent rq2-1)",
    "cosil-qwen32b": "CoSIL qwen32b",
    "locagent-qwen32b": "LocAgent qwen32b (CoSIL repo)",
    "orcaloca-qwen32b": "OrcaLoca qwen32b (CoSIL repo)",
}
# (kind, a sentence only that template has), most specific first.
KINDS = [
    ("t0", "code search query about STRUCTURE"),
    ("t1", "code search query about BEHAVIOUR"),
    ("phase1", "You may read the skeleton (class and function signatures)"),
    ("phase2_functions", "and name the functions to edit"),
    ("phase2", "Rank these files by how likely each must change to fix the bug."),
    ("rrl_extract", "Extract search clues from this bug report."),
    ("rrl_agent", "Tools (one call per turn):"),
    ("self_check", "Check this answer. A search found these candidate files"),
]
# Where the issue ends in each kind of prompt (it starts after "Bug report:").
ISSUE_ENDS = {
    "phase1": "\n\nCandidate files (path: top-level names):",
    "rrl_agent": "\n\nTools (one call per turn):",
    "self_check": "\n\nCandidates (path: top-level names):",
}
REPAIR = "Your reply could not be used:"
SHINGLE = 6
UNRANKED_SCORE = 1


# ---- data -----------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def peer_run(peers: dict, name: str) -> str:
    """The run name for `name`: a run name, an alias, or a unique case-insensitive part."""
    if name in peers:
        return name
    if name.lower() in ALIASES:
        return ALIASES[name.lower()]
    found = [run for run in peers if name.lower() in run.lower()]
    if len(found) != 1:
        sys.exit(
            f"--peer {name!r} names {len(found)} runs; runs: {list(peers)}, "
            f"aliases: {list(ALIASES)}"
        )
    return found[0]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def shingles(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i : i + SHINGLE]) for i in range(max(len(w) - SHINGLE + 1, 1))}


class InstanceIndex:
    """Finds which problem statement an excerpt comes from: every shingle votes 1/df for the
    instances holding it. Robust to boilerplate stripping, head/tail cuts, CRLF and escaping."""

    def __init__(self, statements: dict[str, str]):
        self.holders: dict[tuple, list[str]] = collections.defaultdict(list)
        for iid, text in statements.items():
            for s in shingles(text):
                self.holders[s].append(iid)
        self.cache: dict[str, str | None] = {}

    def find(self, excerpt: str) -> str | None:
        if excerpt in self.cache:
            return self.cache[excerpt]
        votes: collections.Counter = collections.Counter()
        mine = shingles(excerpt)
        for s in mine:
            for iid in self.holders.get(s, ()):
                votes[iid] += 1 / len(self.holders[s])
        best = votes.most_common(2)
        found = None
        if best and best[0][1] >= min(3.0, 0.5 * len(mine)):
            if len(best) == 1 or best[0][1] >= 2 * best[1][1]:
                found = best[0][0]
        self.cache[excerpt] = found
        return found


# ---- reading prompts ------------------------------------------------------------------------


def prompt_kind(text: str) -> str | None:
    return next((kind for kind, marker in KINDS if marker in text), None)


def shown_files(text: str) -> list[tuple[str, str]]:
    """Phase 2's files: (path, block) for each `### path` header (a path has no spaces), in the
    order shown; issue headings such as `### Bug summary` are not paths."""
    body = text.rsplit("\n\nReply with JSON only", 1)[0]
    parts = re.split(r"(?m)^### (\S+\.\w+)[ \t]*\n", body)
    seen: dict[str, str] = {}
    for path, block in zip(parts[1::2], parts[2::2]):
        seen.setdefault(path, block)
    return list(seen.items())


def issue_section(text: str, kind: str) -> str:
    start = text.find("Bug report:")
    issue = text[start + len("Bug report:") :] if start >= 0 else text
    if kind in ("phase2", "phase2_functions"):
        first = re.search(r"(?m)^### \S+\.\w+[ \t]*$", issue)
        return issue[: first.start()] if first else issue
    end = ISSUE_ENDS.get(kind, "\n\nReply with JSON only")
    return issue.split(end, 1)[0]


def listed_paths(text: str, header: str) -> list[str]:
    """The `path: names` lines after `header`, up to the next blank line."""
    block = text.split(header, 1)[1].lstrip("\n").split("\n\n", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    return [line.split(": ", 1)[0].rstrip(":").strip() for line in lines]


def agent_groups(text: str) -> list[str]:
    block = text.split("- bm25_topk:", 1)[1].split("\n- view_file:", 1)[0]
    return re.findall(r"(?m)^  (\w+): ", block)


def prompt_number(text: str, pattern: str, default: int) -> int:
    found = re.search(pattern, text)
    return int(found.group(1)) if found else default


def text_of(message: dict) -> str:
    return message.get("content") or ""


def searched_paths(messages: list[dict]) -> list[str]:
    """Files the agent's BM25 searches returned: observation lines `path (score)`."""
    out: list[str] = []
    for m in messages[1:]:
        if m.get("role") == "user":
            out += re.findall(r"(?m)^(\S+) \(-?[\d.]+\)$", text_of(m))
    return list(dict.fromkeys(out))


# ---- answers --------------------------------------------------------------------------------


def clean(path: str) -> str:
    return path.strip().removeprefix("./")


def ranks(peer: list[str]) -> dict[str, int]:
    """Each file's 1-based place in the peer's list (its first, if listed twice)."""
    return {clean(p): i + 1 for i, p in reversed(list(enumerate(peer)))}


def peer_first(peer: list[str], files: list[str]) -> list[str]:
    """`files` in the peer's order, the ones the peer did not rank after them in `files`' order."""
    rank = ranks(peer)
    ranked = sorted((f for f in files if clean(f) in rank), key=lambda f: rank[clean(f)])
    return ranked + [f for f in files if clean(f) not in rank]


def phase1_scores(peer: list[str], candidates: list[str]) -> dict[str, int]:
    """10 for the peer's first file, 9 for its second, ... at least 3; UNRANKED_SCORE else."""
    rank = ranks(peer)
    places = {c: rank.get(clean(c)) for c in candidates}
    return {c: max(11 - place, 3) if place else UNRANKED_SCORE for c, place in places.items()}


def block_functions(block: str, issue_words: set[str], most: int = 3) -> list[str]:
    """Functions of a phase-2 context block: `Class.method` for each `def` shown, those the issue
    names first, else the first whose body is shown."""
    stack: list[tuple[int, str]] = []
    found: list[tuple[str, bool]] = []
    lines = block.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:async\s+)?(def|class)\s+(\w+)", line)
        if not m:
            continue
        indent = len(m.group(1))
        stack = [(d, n) for d, n in stack if d < indent]
        qualified = ".".join([n for _, n in stack] + [m.group(3)])
        stack.append((indent, m.group(3)))
        if m.group(2) == "def":
            body = lines[i + 1] if i + 1 < len(lines) else "..."
            has_body = body.strip() not in ("", "...") and len(body) - len(body.lstrip()) > indent
            found.append((qualified, has_body))
    named = [q for q, _ in found if q.rsplit(".", 1)[-1].lower() in issue_words]
    chosen = named or [q for q, body in found if body][:1]
    return list(dict.fromkeys(chosen))[:most]


def function_run(path: Path, by_text: dict[str, str], index: InstanceIndex) -> dict:
    """A published function-level run: instance → path → `Class.method` names, in its order.
    Records are matched to instances by their problem statement (exactly, else by shingles)."""
    out: dict[str, dict[str, list[str]]] = {}
    for record in json.loads(path.read_text()):
        text = record.get("problem_statement", "")
        iid = by_text.get(text) or index.find(text)
        if iid is None:
            continue
        files: dict[str, list[str]] = {}
        for entry in record.get("final_reranked_files") or []:
            for file, names in entry.items():
                names = [n.replace("::", ".") for n in names if isinstance(n, str)]
                files.setdefault(clean(file), names)
        out[iid] = files
    return out


def first_sentence(text: str) -> str:
    return re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]


def is_code_name(word: str) -> bool:
    """`snake_case`, `dotted.name` or `camelCase`, not a file name."""
    looks_code = "_" in word or "." in word or re.search(r"[a-z][A-Z]", word)
    return bool(looks_code) and not re.search(r"\.py\w?$", word)


def extraction(issue: str, queries: dict) -> dict:
    """RRL's schema fields, copied from the issue and the recorded T0 query."""
    t0 = queries.get("structural_t0", "")
    path = r"[\w.-]+(?:/[\w.-]+)+\.(?:py|pyx|pyi|cfg|toml|rst|txt|c|h)\b"
    paths = re.findall(path, issue + "\n" + t0)
    names = re.findall(r"\b[\w-]+\.(?:py|pyx|pyi|cfg|toml)\b", issue)
    ticked = re.findall(r"`([A-Za-z_][\w.]*)(?:\(\))?`", issue)
    coded = [w for w in re.findall(r"\b[A-Za-z_][\w.]*[A-Za-z0-9_]\b", t0) if is_code_name(w)]
    snippets = [s.strip()[:400] for s in re.findall(r"```[^\n]*\n(.*?)```", issue, re.S)][:2]
    traces = re.findall(r'(?m)^\s*(File "[^"]+", line \d+.*)$', issue)
    errors = re.findall(r"(?m)^\s*([\w.]*(?:Error|Exception|Warning)\b: .+)$", issue)
    unique = lambda xs, n: list(dict.fromkeys(x.strip() for x in xs if x.strip()))[:n]  # noqa: E731
    return {
        "explanation": first_sentence(queries.get("behavioral_t1") or issue),
        "paths": unique(paths, 10),
        "filenames": unique([p.rsplit("/", 1)[-1] for p in paths] + names, 10),
        "identifiers": unique(ticked + coded, 25),
        "code_snippets": snippets,
        "stack_traces": unique(traces, 10),
        "error_messages": unique(errors, 5),
    }


class StandIn:
    """Answers one chat request: finds the prompt kind and the instance, then the reply."""

    def __init__(self, data: Path, peer: str, log, peer_functions: Path | None = None):
        rows = read_jsonl(data / "swebench_lite.jsonl")
        peers = json.loads((data / "peers_swebench_lite.json").read_text())
        self.run = peer_run(peers, peer)
        self.peer: dict[str, list[str]] = peers[self.run]
        queries = read_jsonl(data / "blagent_queries_swebench_lite.jsonl")
        self.queries = {q["instance_id"]: q for q in queries}
        self.index = InstanceIndex({r["instance_id"]: r["problem_statement"] for r in rows})
        self.functions: dict[str, dict[str, list[str]]] | None = None
        if peer_functions is not None:
            by_text = {r["problem_statement"]: r["instance_id"] for r in rows}
            self.functions = function_run(peer_functions, by_text, self.index)
        self.log = log
        self.lock = threading.Lock()
        self.kinds: collections.Counter = collections.Counter()
        self.not_found: list[str] = []
        self.first_order: dict[tuple, list[str]] = {}

    def answer(self, messages: list[dict]) -> str:
        users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
        prompt = users[0] if users else ""
        kind = prompt_kind(prompt)
        repair = len(users) > 1 and users[-1].startswith(REPAIR)
        iid = self.index.find(issue_section(prompt, kind)) if kind else None
        label = f"{kind or 'unknown'}{' (repair)' if repair else ''}"
        self.record(label, iid, prompt, kind)
        if iid is None:
            return "{}"
        answer = getattr(self, f"answer_{kind.removesuffix('_functions')}")
        return json.dumps(answer(prompt, messages, iid, kind))

    def record(self, label: str, iid: str | None, prompt: str, kind: str | None) -> None:
        with self.lock:
            self.kinds[label] += 1
            if iid is None:
                head = " ".join(issue_section(prompt, kind or "").split())[:80]
                self.not_found.append(f"{label}: {head!r}")
        found = iid or "INSTANCE NOT FOUND"
        print(f"{time.strftime('%H:%M:%S')} {label:<24} {found}", file=self.log, flush=True)

    def answer_t0(self, prompt, messages, iid, kind) -> dict:
        return {"query": self.queries.get(iid, {}).get("structural_t0", "")}

    def answer_t1(self, prompt, messages, iid, kind) -> dict:
        return {"query": self.queries.get(iid, {}).get("behavioral_t1", "")}

    def answer_phase1(self, prompt, messages, iid, kind) -> dict:
        candidates = listed_paths(prompt, "Candidate files (path: top-level names):")
        scores = phase1_scores(self.peer.get(iid, []), candidates)
        thought = "scored from the reference ranking"
        return {"thought": thought, "action": "finish", "scores": scores}

    def answer_phase2(self, prompt, messages, iid, kind) -> dict:
        files = shown_files(prompt)
        paths = [p for p, _ in files]
        with self.lock:  # both asks see the same files; the first ask's order breaks ties
            shown = self.first_order.setdefault((iid, frozenset(paths)), paths)
        peer = self.peer.get(iid, [])
        rank = ranks(peer)
        issue_words = set(words(issue_section(prompt, kind)))
        blocks = dict(files)
        ranking = []
        for path in peer_first(peer, shown):
            item: dict = {"path": path}
            if kind == "phase2_functions" and self.functions is not None:
                item["functions"] = self.functions.get(iid, {}).get(clean(path), [])
            elif kind == "phase2_functions":
                item["functions"] = block_functions(blocks[path], issue_words)
            place = rank.get(clean(path))
            item["reason"] = f"rank {place} in the reference" if place else "not in the reference"
            ranking.append(item)
        return {"ranking": ranking}

    def answer_rrl_extract(self, prompt, messages, iid, kind) -> dict:
        return extraction(issue_section(prompt, kind), self.queries.get(iid, {}))

    def answer_rrl_agent(self, prompt, messages, iid, kind) -> dict:
        """One BM25 search, then finish: the peer's files, then what the search found."""
        groups = agent_groups(prompt)
        assistant = [text_of(m) for m in messages if m.get("role") == "assistant"]
        searched = any('"bm25_topk"' in text for text in assistant)
        latest = text_of(messages[-1]) if len(messages) > 1 else ""
        last = prompt_number(prompt, r"at most (\d+) turns", 6) <= 1 or "Last turn" in latest
        if groups and not searched and not last:
            preferred = [g for g in ("full", "code_signals", "explanation") if g in groups]
            return {"tool": "bm25_topk", "group": (preferred or groups)[0], "k": 30}
        top_k = prompt_number(prompt, r"at most (\d+) files", 10)
        refused = set(re.findall(r"no file `([^`]+)`", latest) if latest.startswith(REPAIR) else [])
        files = dict.fromkeys(clean(p) for p in self.peer.get(iid, []) + searched_paths(messages))
        return {"tool": "finish", "files": [f for f in files if f not in refused][:top_k]}

    def answer_self_check(self, prompt, messages, iid, kind) -> dict:
        candidates = listed_paths(prompt, "Candidates (path: top-level names):")
        return {"ranking": peer_first(self.peer.get(iid, []), candidates)}

    def summary(self) -> str:
        lines = [f"stand-in ({self.run}): {sum(self.kinds.values())} requests"]
        lines += [f"  {kind:<24} {n}" for kind, n in sorted(self.kinds.items())]
        lines.append(f"  instance not found: {len(self.not_found)}")
        lines += [f"    {x}" for x in self.not_found[:20]]
        return "\n".join(lines)


# ---- HTTP -----------------------------------------------------------------------------------


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


def completion(model: str, content: str, messages: list[dict]) -> dict:
    prompt_tokens = sum(approx_tokens(text_of(m)) for m in messages)
    message = {"role": "assistant", "content": content}
    return {
        "id": f"standin-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": approx_tokens(content),
            "total_tokens": prompt_tokens + approx_tokens(content),
        },
    }


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default 5 resets connections under a burst of requests


def handler_for(stand_in: StandIn):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def send_json(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/health", "/v1/health"):
                self.send_json(200, {"status": "ok"})
            elif self.path.rstrip("/") == "/v1/models":
                model = {"id": "stand-in", "object": "model", "owned_by": stand_in.run}
                self.send_json(200, {"object": "list", "data": [model]})
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                messages = request.get("messages") or []
                content = stand_in.answer(messages)
            except Exception as e:  # a bad request or a bug here must not stop the server
                print(f"error: {type(e).__name__}: {e}", file=stand_in.log, flush=True)
                self.send_json(400, {"error": {"message": f"{type(e).__name__}: {e}"}})
                return
            self.send_json(200, completion(request.get("model", "stand-in"), content, messages))

        def log_message(self, format, *args) -> None:  # the per-request log line is enough
            pass

    return Handler


# ---- the peer's own figures -----------------------------------------------------------------


def peer_mrr(data: Path, peer: str, ids_file: Path, top_k: int = 10) -> None:
    """The peer's MRR / Acc@1 / Acc@5 on the ids, over its first `top_k` files (as blagent eval)."""
    peers = json.loads((data / "peers_swebench_lite.json").read_text())
    run = peer_run(peers, peer)
    gold = {r["instance_id"]: r["gold_files"] for r in read_jsonl(data / "swebench_lite.jsonl")}
    ids = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()]
    places = []
    for iid in ids:
        ranked = peers[run].get(iid, [])[:top_k]
        places.append(next((i + 1 for i, f in enumerate(ranked) if f in gold[iid]), None))
    n = len(ids)
    mrr = sum(1 / r for r in places if r) / n
    acc1, acc5 = (sum(1 for r in places if r and r <= k) / n for k in (1, 5))
    print(f"{run} on {n} ids: MRR {mrr:.3f}  Acc@1 {acc1:.3f}  Acc@5 {acc5:.3f}")


def stop(*_) -> None:
    raise KeyboardInterrupt


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--peer", default="gpt-oss", help=f"run name or alias ({', '.join(ALIASES)})")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--log", type=Path, help="request log (default: stderr)")
    ap.add_argument(
        "--peer-mrr", type=Path, metavar="IDS_FILE", help="print the peer's own figures and exit"
    )
    ap.add_argument(
        "--peer-functions",
        type=Path,
        metavar="FILE",
        help="name functions from this published function-level run (BLAgent's format)",
    )
    args = ap.parse_args()
    if args.peer_mrr:
        peer_mrr(args.data, args.peer, args.peer_mrr)
        return 0
    log = args.log.open("a") if args.log else sys.stderr
    stand_in = StandIn(args.data, args.peer, log, args.peer_functions)
    server = Server(("127.0.0.1", args.port), handler_for(stand_in))
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        print(stand_in.summary(), file=sys.stderr, flush=True)
        if args.log:
            print(stand_in.summary(), file=log, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
