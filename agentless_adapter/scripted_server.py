"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and offline rehearsals.

It answers `POST /v1/chat/completions` with plausible canned text read off the prompt:
Agentless's related-level prompt (`### File: path ###` blocks of skeletons) gets a locations
block naming, for each file, its first class and that class's first method, or its first
function; the edit-location prompt gets the same with a `line:`; anything else gets an empty
code block. `"stream": true` is answered with server-sent events. A model named `error-NNN`
is answered with status NNN and an OpenAI-style error body. Every request is appended to the
log (JSONL: model, stream, the first prompt line) when one is given. Standard library only.

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
from typing import Any, Optional

FILE_BLOCK = re.compile(r"^### File: (\S+) ###\n```(?:python)?\n(.*?)\n```", re.MULTILINE | re.DOTALL)
CLASS = re.compile(r"^class (\w+)", re.MULTILINE)
METHOD = re.compile(r"^[ \t]+def (\w+)", re.MULTILINE)
FUNCTION = re.compile(r"^def (\w+)", re.MULTILINE)
LINE_NUMBER = re.compile(r"^(\d+)\|", re.MULTILINE)


def _locations(prompt: str, with_line: bool) -> str:
    """One `path` / `class:` / `function:` group per file block of the prompt."""
    groups = []
    for path, code in FILE_BLOCK.findall(prompt):
        lines = [path]
        cls = CLASS.search(code)
        if cls:
            lines.append(f"class: {cls.group(1)}")
            method = METHOD.search(code, cls.end())
            if method:
                lines.append(f"function: {cls.group(1)}.{method.group(1)}")
        else:
            func = FUNCTION.search(code)
            if func:
                lines.append(f"function: {func.group(1)}")
        number = LINE_NUMBER.search(code)
        if with_line and number:
            lines.append(f"line: {number.group(1)}")
        groups.append("\n".join(lines))
    return "```\n" + "\n\n".join(groups) + "\n```"


def answer(prompt: str) -> str:
    """The canned reply to a prompt."""
    if "Skeleton of Relevant Files" in prompt or "### Relevant Files ###" in prompt:
        return _locations(prompt, with_line=False)
    if "locations that need to be edited" in prompt:
        return _locations(prompt, with_line=True)
    return "```\n```"


def _completion(model: str, text: str, prompt: str) -> dict[str, Any]:
    usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split())}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return {
        "id": f"chatcmpl-scripted-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": usage,
    }


class ScriptedHandler(BaseHTTPRequestHandler):
    """Answers chat completions from the script."""

    protocol_version = "HTTP/1.0"
    server: ScriptedServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        model = str(request.get("model", ""))
        messages = request.get("messages") or [{}]
        prompt = str(messages[-1].get("content", ""))
        self.server.record({"path": self.path, "model": model, "stream": bool(request.get("stream")),
                            "authorization": self.headers.get("Authorization"), "prompt_head": prompt.strip()[:80]})
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if model.startswith("error-") and model[6:].isdigit():
            self._send(int(model[6:]), {"error": {"message": f"scripted {model}", "type": "scripted_error"}})
            return
        text = answer(prompt)
        if not request.get("stream"):
            self._send(200, _completion(model, text, prompt))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        pieces = [text[i : i + 16] for i in range(0, len(text), 16)] or [""]
        for i, piece in enumerate(pieces):
            delta = {"role": "assistant", "content": piece} if i == 0 else {"content": piece}
            chunk = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": model,
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


class ScriptedServer(ThreadingHTTPServer):
    """The scripted server; `requests` holds what it was asked, oldest first."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], log: Optional[Path] = None) -> None:
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


def start_scripted(port: int = 0, log: Optional[Path] = None) -> tuple[ScriptedServer, str]:
    """Starts the server in a background thread on 127.0.0.1; returns it and its base URL."""
    server = ScriptedServer(("127.0.0.1", port), log)
    threading.Thread(target=server.serve_forever, name="scripted-openai", daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agentless_adapter.scripted_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log", type=Path, help="append every request here (JSONL)")
    args = parser.parse_args(argv)
    server = ScriptedServer(("127.0.0.1", args.port), args.log)
    print(f"scripted: serving http://127.0.0.1:{server.server_address[1]}/v1", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
