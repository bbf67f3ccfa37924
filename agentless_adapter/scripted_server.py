"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and offline rehearsals.

It answers `POST /v1/chat/completions` with plausible canned text read off the prompt:
Agentless's related-level prompt (`### File: path ###` blocks of skeletons) gets a locations
block naming, for each file, its first class and that class's first method, or its first
function; the edit-location prompt (numbered lines) gets the same with the method's `line:`;
the repair prompt gets a SEARCH/REPLACE edit adding a comment to the first definition line it
shows; anything else gets an empty code block. It returns `n` choices when asked for `n` samples
(Agentless's edit location asks for several at once). `"stream": true` is answered with
server-sent events. A model named `error-NNN` is answered with status NNN and an OpenAI-style
error body. Every request is appended to the log (JSONL: path, model, stream, authorization,
the prompt's first 80 characters) when one is given. Standard library only.

    python -m agentless_adapter.scripted_server --port 8000 --log requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# Related level: "### File: path ###" then a fenced skeleton. Edit location: "### path" then
# numbered lines ("12|    def f(...):").
FILE_BLOCK = re.compile(
    r"^### File: (\S+) ###\n```(?:python)?\n(.*?)\n```", re.MULTILINE | re.DOTALL
)
EDIT_BLOCK = re.compile(r"^### (\S+\.py)\n(.*?)(?=^###|\Z)", re.MULTILINE | re.DOTALL)
NUMBERED = re.compile(r"^(\d+)\|(.*)$")
DEFINITION = re.compile(r"^([ \t]*)(class|def) (\w+)")


def _first_definitions(code: str) -> list[str]:
    """`class: C` and `function: C.m` (or `function: f`) for the first definitions of `code`,
    with `line: N` of the function when the code is numbered."""
    found: list[str] = []
    cls = None
    for raw in code.splitlines():
        numbered = NUMBERED.match(raw)
        number, text = (numbered.group(1), numbered.group(2)) if numbered else (None, raw)
        match = DEFINITION.match(text)
        if not match:
            continue
        indent, kind, name = match.groups()
        if kind == "class" and not indent and cls is None:
            cls = name
            found.append(f"class: {name}")
        elif kind == "def" and (not indent or cls is not None):
            found.append(f"function: {cls}.{name}" if indent and cls else f"function: {name}")
            if number:
                found.append(f"line: {number}")
            break
    return found


def _locations(blocks: list[tuple[str, str]]) -> str:
    """One `path` / `class:` / `function:` (/ `line:`) group per file block."""
    groups = ["\n".join([path, *_first_definitions(code)]) for path, code in blocks]
    return "```\n" + "\n\n".join(groups) + "\n```"


def _repair(prompt: str) -> str:
    """A SEARCH/REPLACE edit that comments the first definition line of the first file shown."""
    shown = prompt.split("--- BEGIN FILE ---", 1)[-1].split("--- END FILE ---", 1)[0]
    for path, code in EDIT_BLOCK.findall(shown):
        line = next((x for x in code.splitlines() if DEFINITION.match(x)), None)
        if line is not None:
            edit = f"### {path}\n<<<<<<< SEARCH\n{line}\n=======\n{line}  # scripted edit\n>>>>>>> REPLACE"
            return f"The bug is in {path}.\n\n```python\n{edit}\n```"
    return "```\n```"


def answer(prompt: str) -> str:
    """The canned reply to a prompt."""
    if "*SEARCH/REPLACE* edits" in prompt:
        return _repair(prompt)
    if "Skeleton of Relevant Files" in prompt or "### Relevant Files ###" in prompt:
        return _locations(FILE_BLOCK.findall(prompt))
    if "locations that need to be edited" in prompt:
        return _locations(EDIT_BLOCK.findall(prompt))
    return "```\n```"


def _completion(model: str, text: str, prompt: str, n: int) -> dict[str, Any]:
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": n * len(text.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            for i in range(n)
        ],
        "usage": usage,
    }


class ScriptedHandler(BaseHTTPRequestHandler):
    """Answers chat completions from the script."""

    protocol_version = "HTTP/1.0"
    server: ScriptedServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        model = str(request.get("model", ""))
        messages = request.get("messages") or [{}]
        prompt = str(messages[-1].get("content", ""))
        self.server.record(
            {
                "path": self.path,
                "model": model,
                "stream": bool(request.get("stream")),
                "authorization": self.headers.get("Authorization"),
                "prompt_head": prompt.strip()[:80],
            }
        )
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if model.startswith("error-") and model[6:].isdigit():
            self._send(
                int(model[6:]),
                {"error": {"message": f"scripted {model}", "type": "scripted_error"}},
            )
            return
        text = answer(prompt)
        if not request.get("stream"):
            self._send(200, _completion(model, text, prompt, max(1, int(request.get("n") or 1))))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = [text[i : i + 16] for i in range(0, len(text), 16)] or [""]
        for i, piece in enumerate(pieces):
            delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
            chunk = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


class ScriptedServer(ThreadingHTTPServer):
    """The scripted server; `requests` holds what it was asked, oldest first."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], log: Path | None = None) -> None:
        super().__init__(address, ScriptedHandler)
        self.requests: list[dict[str, Any]] = []
        self.log = log
        self._lock = threading.Lock()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)
            if self.log is not None:
                with self.log.open("a") as f:
                    f.write(json.dumps(entry) + "\n")


def start_scripted(port: int = 0, log: Path | None = None) -> tuple[ScriptedServer, str]:
    """Starts the server in a background thread on 127.0.0.1; returns it and its base URL."""
    server = ScriptedServer(("127.0.0.1", port), log)
    threading.Thread(target=server.serve_forever, name="scripted-openai", daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentless_adapter.scripted_server",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log", type=Path, help="append every request here (JSONL)")
    args = parser.parse_args(argv)
    server = ScriptedServer(("127.0.0.1", args.port), args.log)
    print(
        f"scripted: serving http://127.0.0.1:{server.server_address[1]}/v1",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
