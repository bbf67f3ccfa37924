"""A model-renaming proxy for OpenAI-compatible endpoints, so that Agentless can run against any.

Agentless creates its client with `openai.OpenAI(base_url=None)`, so `OPENAI_BASE_URL` points it
anywhere; but its `--model` accepts only a fixed list of names (`gpt-4o-2024-05-13`, ...). This
proxy listens on 127.0.0.1, takes requests made under any of those names, rewrites the JSON
body's `model` to the model the endpoint really serves, and forwards them:

    python -m agentless_adapter.proxy --upstream http://127.0.0.1:8000/v1 --model Qwen2.5-Coder-32B
    export OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=unused

Responses (status, body, `Content-Type`) pass through unchanged: JSON whole, server-sent events
chunk by chunk as they arrive, upstream errors with their status. An unreachable upstream is
answered 502, a timeout 504, a request path urllib cannot send (a control character) 400,
any other failure 500, all with an OpenAI-style error body and no traceback (an error's
message, which may hold the upstream URL, is never printed). `GET /v1/models` lists the
accepted names. The upstream key, if any, comes from an environment variable (`--api-key-env`)
and replaces the client's `Authorization`; without one the client's header is forwarded.
A redirect is not followed (the key would go with it): it is answered 502. An answer is read up
to 64 MiB (a longer one is answered 502), and a key it echoes (the upstream's or the client's)
is replaced by `<redacted>` (in a stream, within each chunk as it arrives); a request body must
declare its length, at most 64 MiB. Credentials in the upstream URL (`http://user:pass@host/v1`)
are sent as HTTP Basic authentication (replacing the client's `Authorization`; with
`--api-key-env` too, the proxy refuses to start) and redacted wherever the URL is shown; a
query in it (`?key=...`) is kept on every request and left out where the URL is shown.
Standard library only.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import socket
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The model names Agentless's `localize.py` and `repair.py` accept (`--model` choices).
AGENTLESS_MODELS = (
    "gpt-4o-2024-05-13",
    "gpt-4o-mini-2024-07-18",
    "claude-3-5-sonnet-20241022",
    "deepseek-coder",
)
#: Request headers forwarded upstream (the rest are hop-by-hop or recomputed).
FORWARDED_HEADERS = (
    "Content-Type",
    "Accept",
    "Authorization",
    "OpenAI-Organization",
    "OpenAI-Project",
)
CHUNK_BYTES = 8192
#: The most bytes of a request body taken, or of an upstream answer read (as blagent's client).
MAX_BODY_BYTES = 64 << 20
REDACTED = b"<redacted>"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Turns every redirect into the `HTTPError` of its 3xx answer: following it would send
    the `Authorization` header to wherever the endpoint points."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class _TooLarge(ValueError):
    """An upstream answer over `MAX_BODY_BYTES`."""


def _read_bounded(response: Any) -> bytes:
    """All of `response`'s body, or `_TooLarge` past `MAX_BODY_BYTES`."""
    data = response.read(MAX_BODY_BYTES + 1)
    if len(data) > MAX_BODY_BYTES:
        raise _TooLarge(f"the upstream's answer is over {MAX_BODY_BYTES:,} bytes")
    return data


class BadUpstream(ValueError):
    """An upstream URL the proxy cannot forward to; the message shows it redacted."""


def shown_url(url: str) -> str:
    """`url` as it may be printed (as blagent's own client shows a base URL): everything
    between the scheme and the last `@` (the user part, whatever characters its password
    holds) is `<redacted>`, and a query or fragment, which may carry a key too, is cut to `…`."""
    scheme, at = url.find("://"), url.rfind("@")
    if at >= 0:
        url = f"{url[: scheme + 3] if scheme >= 0 else ''}{REDACTED.decode()}@{url[at + 1 :]}"
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=-1)
    return url if cut < 0 else url[:cut] + "…"


@dataclass(frozen=True)
class Upstream:
    """An upstream URL taken apart: where requests go, what they carry, how it is shown."""

    #: `scheme://host[:port]/path`, no user part, no query, no trailing `/`.
    base: str
    #: The query every request carries (`key=...`), without its `?`; empty when none.
    query: str = field(repr=False)
    #: The `Authorization` header of the URL's user part (`Basic ...`), if it has one.
    authorization: str | None = field(repr=False)
    #: The URL as it may be printed (`shown_url`).
    shown: str
    #: The forms in which an answer may echo the user part's password or the query's values.
    secrets: tuple[str, ...] = field(repr=False)

    @classmethod
    def parse(cls, url: str) -> Upstream:
        """`url` taken apart, or `BadUpstream`: not http(s), no host, or an `@`, `#` past the
        host (a password's `/`, `?`, `#` or `@` not percent-encoded would be read as the path,
        query or fragment and the host taken from the password)."""
        shown = shown_url(url)
        try:
            return cls._parse(url.strip(), shown)
        except BadUpstream:
            raise
        except ValueError:  # urlsplit's own messages (IPv6, NFKC) echo the user part
            raise BadUpstream(f"--upstream {shown}: the URL does not parse") from None

    @classmethod
    def _parse(cls, url: str, shown: str) -> Upstream:
        if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
            raise BadUpstream(f"--upstream {shown}: holds a space or a control character")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise BadUpstream(f"--upstream {shown}: the scheme must be http or https")
        past_host = url[len(parts.scheme) + 3 + len(parts.netloc) :]
        if "@" in past_host or parts.fragment:
            raise BadUpstream(
                f"--upstream {shown}: an `@` or `#` past the host; percent-encode a "
                "password's `/`, `?`, `#` and `@` (%2F, %3F, %23, %40)"
            )
        userinfo, _, host = parts.netloc.rpartition("@")
        if not parts.hostname:
            raise BadUpstream(f"--upstream {shown}: no host")
        try:
            _ = parts.port  # a port that is not a number, or past 65535
        except ValueError:
            raise BadUpstream(
                f"--upstream {shown}: the port is not a number from 0 to 65535"
            ) from None
        # Each value as decoded and as written (`s3cr%2Bt+value`), which an echo may repeat.
        raw = [pair.partition("=")[2] for pair in parts.query.split("&")]
        authorization = None
        forms = [v for _, v in urllib.parse.parse_qsl(parts.query)] + raw
        if userinfo:
            user, _, password = userinfo.partition(":")
            plain = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
            token = base64.b64encode(plain.encode()).decode()
            authorization = f"Basic {token}"
            forms += (password, urllib.parse.unquote(password), token, userinfo, plain)
        secrets = tuple(dict.fromkeys(f for f in forms if len(f) >= 4))
        base = f"{parts.scheme}://{host}{parts.path.rstrip('/')}"
        return cls(base, parts.query, authorization, shown, secrets)

    def target(self, path: str) -> str:
        """The URL of a request for `path` (with its own query, if any): the base path, then
        `path`, then the upstream's query and the request's, in that order. `path` starts
        with `/` (or is empty), so it never reaches into the host or port."""
        if path and not path.startswith("/"):
            raise ValueError("a request path must start with /")
        path, _, query = path.partition("?")
        queries = "&".join(q for q in (self.query, query) if q)
        return self.base + path + (f"?{queries}" if queries else "")


@dataclass
class ProxyConfig:
    """Where to forward, under which model name.

    Args:
        upstream: the endpoint's base URL, up to and including its `/v1` (`BadUpstream` when
            it is not an http(s) URL the proxy can forward to).
        model: the model name the endpoint serves; every request's `model` becomes this.
        api_key: the endpoint's key (replaces the client's `Authorization`), if any.
        aliases: the names listed by `GET /v1/models`.
        timeout: seconds to wait for the endpoint.
        log: log each request on stderr.
    """

    upstream: str = field(repr=False)
    model: str
    api_key: str | None = field(default=None, repr=False)
    aliases: tuple[str, ...] = AGENTLESS_MODELS
    timeout: float = 600.0
    log: bool = True
    #: The last `(requested, forwarded)` model names, newest last.
    rewrites: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=100))
    #: `upstream` taken apart (`Upstream.parse`).
    target: Upstream = field(init=False)

    def __post_init__(self) -> None:
        self.target = Upstream.parse(self.upstream)
        if self.api_key and self.target.authorization:
            raise BadUpstream(
                f"--upstream {self.target.shown} holds credentials and --api-key-env gives a "
                "key: both would be the Authorization header; give one"
            )


def _error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


class ProxyHandler(BaseHTTPRequestHandler):
    """Forwards one request; the server's `config` says where."""

    protocol_version = "HTTP/1.0"  # one request per connection: a stream ends when it closes
    server: _ProxyServer

    def log_message(self, format: str, *args: object) -> None:
        if self.server.config.log:
            sys.stderr.write(f"proxy: {format % args}\n")

    def handle_one_request(self) -> None:
        """One request, answered 500 (and noted on stderr in one line, by the exception's type
        only) when forwarding it fails unforeseen: an exception's message may hold the upstream
        URL with its query or a header with a key, and socketserver would print it whole."""
        self._answered = False
        try:
            super().handle_one_request()
        except Exception as err:  # never socketserver's traceback
            self.close_connection = True
            outcome = "the answer had begun" if self._answered else "answered 500"
            if not self._answered:
                try:
                    message = f"the proxy failed ({type(err).__name__})"
                    self._reply(500, _error_body(message, "proxy_error"))
                except Exception:  # the client has gone
                    outcome = "the client had gone"
            sys.stderr.write(f"proxy: error: a request failed ({type(err).__name__}); {outcome}\n")

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self._answered = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _target(self) -> str:
        path = self.path[3:] if self.path.startswith("/v1") else self.path
        return self.server.config.target.target(path)

    def _path_refused(self) -> bool:
        """A request path must start with `/`: text after the upstream's host (`2/x`, `:9/x`,
        `.evil.com/x`) would change the port or host the request, and the key, go to. Refused
        with 400 (`True`)."""
        if not self.path.startswith("/"):
            message = "the request path must start with /"
        elif not self.path.isascii():
            message = "the request path must be ASCII (percent-encode other characters)"
        else:
            return False
        self._reply(400, _error_body(message, "invalid_request_error"))
        return True

    def do_GET(self) -> None:
        if self._path_refused():
            return
        if self.path.rstrip("/") == "/v1/models":
            data = [
                {"id": name, "object": "model", "owned_by": "blagent-proxy"}
                for name in self.server.config.aliases
            ]
            self._reply(200, json.dumps({"object": "list", "data": data}).encode())
        else:
            self._forward(None)

    def _secrets(self) -> list[bytes]:
        """The keys an answer may echo: the upstream key and the client's own."""
        client = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        config = self.server.config
        keys = (config.api_key, client, *config.target.secrets)
        return [key.encode() for key in keys if key and len(key) >= 4 and "\n" not in key]

    def _redact(self, data: bytes, secrets: list[bytes]) -> bytes:
        for secret in secrets:
            data = data.replace(secret, REDACTED)
        return data

    def do_POST(self) -> None:
        if self._path_refused():
            return
        if self.headers.get("Transfer-Encoding"):  # a chunked body would be forwarded empty
            message = "Transfer-Encoding is not supported; send a Content-Length"
            self._reply(411, _error_body(message, "invalid_request_error"))
            return
        declared = (self.headers.get("Content-Length") or "0").strip()
        digits = declared.isascii() and declared.isdigit() and len(declared) <= 12
        length = int(declared) if digits else -1
        if not 0 <= length <= MAX_BODY_BYTES:
            message = f"Content-Length must be a number of bytes up to {MAX_BODY_BYTES:,}"
            self._reply(400, _error_body(message, "invalid_request_error"))
            return
        body = self.rfile.read(length)
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            self._reply(400, _error_body("request body is not JSON", "invalid_request_error"))
            return
        if isinstance(payload, dict) and "model" in payload:
            config = self.server.config
            requested = payload["model"]
            payload["model"] = config.model
            config.rewrites.append((str(requested), config.model))
            self.log_message("model %r -> %r", requested, config.model)
            body = json.dumps(payload).encode()
        self._forward(body)

    def _forward(self, body: bytes | None) -> None:
        config = self.server.config
        headers = {k: v for k in FORWARDED_HEADERS if (v := self.headers.get(k)) is not None}
        if config.api_key:
            headers["Authorization"] = f"Bearer {config.api_key}"
        elif config.target.authorization:
            headers["Authorization"] = config.target.authorization
        secrets = self._secrets()
        shown = config.target.shown
        try:
            request = urllib.request.Request(
                self._target(), data=body, headers=headers, method=self.command
            )
            response = _OPENER.open(request, timeout=config.timeout)
        except http.client.InvalidURL:  # its message holds the whole target, query and all
            message = "the request path holds a control character or a space"
            self._reply(400, _error_body(message, "invalid_request_error"))
            return
        except urllib.error.HTTPError as err:  # the endpoint's own error: pass it through
            try:
                if 300 <= err.code < 400:
                    message = f"upstream {shown} redirected ({err.code}); not followed"
                    self._reply(502, _error_body(message, "proxy_error"))
                    return
                data = _read_bounded(err)
            except (_TooLarge, OSError) as failure:
                self._reply(502, _error_body(str(failure), "proxy_error"))
                return
            finally:
                err.close()
            content_type = err.headers.get("Content-Type", "application/json")
            self._reply(err.code, self._redact(data, secrets), content_type)
            return
        except (socket.timeout, TimeoutError):
            self._reply(504, _error_body(f"upstream {shown} timed out", "proxy_timeout"))
            return
        except (urllib.error.URLError, OSError) as err:
            reason = self._redact(str(getattr(err, "reason", err)).encode(), secrets).decode()
            message = f"upstream {shown} unreachable: {reason}"
            self._reply(502, _error_body(message, "proxy_error"))
            return
        except (ValueError, http.client.HTTPException) as err:  # messages may hold a key
            message = f"upstream {shown}: the request could not be sent ({type(err).__name__})"
            self._reply(502, _error_body(message, "proxy_error"))
            return
        with response:
            content_type = response.headers.get("Content-Type", "application/json")
            if content_type.startswith("text/event-stream"):
                self._answered = True
                self.send_response(response.status)
                self.send_header("Content-Type", content_type)
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                # The last bytes of each read after its last line end wait for the next read,
                # so that a key split between two reads is redacted whole (a key holds no
                # line end, so the lines before it leave at once, as a stream's events should).
                keep = max((len(k) for k in secrets), default=1) - 1
                pending = b""
                while chunk := response.read1(CHUNK_BYTES):
                    pending = self._redact(pending + chunk, secrets)
                    cut = max(pending.rfind(b"\n") + 1, len(pending) - keep)
                    self.wfile.write(pending[:cut])
                    self.wfile.flush()
                    pending = pending[cut:]
                self.wfile.write(pending)
                self.wfile.flush()
                return
            try:
                data = _read_bounded(response)
            except _TooLarge as failure:
                self._reply(502, _error_body(str(failure), "proxy_error"))
                return
            self._reply(response.status, self._redact(data, secrets), content_type)


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never the traceback (its message may hold the upstream's query or key)."""
        error = sys.exc_info()[1]
        sys.stderr.write(f"proxy: error: a connection failed ({type(error).__name__})\n")

    def __init__(self, address: tuple[str, int], config: ProxyConfig) -> None:
        super().__init__(address, ProxyHandler)
        self.config = config


def start_proxy(
    config: ProxyConfig, host: str = "127.0.0.1", port: int = 0
) -> tuple[_ProxyServer, str]:
    """Starts the proxy in a background thread; returns the server and its base URL (`.../v1`).

    Stop it with `server.shutdown(); server.server_close()`.
    """
    server = _ProxyServer((host, port), config)
    threading.Thread(target=server.serve_forever, name="blagent-proxy", daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}/v1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m agentless_adapter.proxy",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--upstream", required=True, help="the endpoint's base URL, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument("--model", required=True, help="the model name the endpoint serves")
    parser.add_argument(
        "--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0 picks one)"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument("--api-key-env", help="environment variable holding the endpoint's key")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the endpoint"
    )
    parser.add_argument("--quiet", action="store_true", help="do not log requests on stderr")
    args = parser.parse_args(argv)
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not api_key:
        parser.error(f"environment variable {args.api_key_env} is not set")
    try:
        config = ProxyConfig(
            args.upstream, args.model, api_key=api_key, timeout=args.timeout, log=not args.quiet
        )
    except BadUpstream as err:
        print(f"proxy: error: {err}", file=sys.stderr)
        return 1
    server = _ProxyServer((args.host, args.port), config)
    print(
        f"proxy: serving {config.target.shown} ({args.model}) as {', '.join(config.aliases)} "
        f"at http://{args.host}:{server.server_address[1]}/v1",
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
