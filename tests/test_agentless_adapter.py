"""The Agentless adapter without Agentless: the loc_outputs contract on fixtures we write, the
offline helpers, and the model-renaming proxy for real on loopback against a scripted upstream."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import blagent
import pytest
from conftest import schema_validator

from agentless_adapter import offline
from agentless_adapter import proxy as proxy_module
from agentless_adapter.loc_format import (
    contract_problems,
    read_loc_outputs,
    to_loc_line,
    write_loc_outputs,
)
from agentless_adapter.proxy import AGENTLESS_MODELS, ProxyConfig, start_proxy
from agentless_adapter.scripted_server import answer, start_scripted

# The related-level prompt as Agentless renders it (file blocks of skeletons), shortened.
RELATED_PROMPT = """Please look through the following GitHub Problem Description and the Skeleton of Relevant Files.
### GitHub Problem Description ###
Discount goes negative.

### Skeleton of Relevant Files ###

### File: shop/pricing.py ###
```python
class Pricer:
    def rate(self):
...
def apply_discount(total, percent):
...
```

### File: shop/cart.py ###
```python
def total(items):
...
```
"""


def other_localizer_result() -> blagent.LocalizationResult:
    return blagent.LocalizationResult(
        instance_id="acme__shop-7",
        localizer=blagent.LocalizerInfo("other", "1.0", "gpt-x"),
        files=[blagent.FileHit(1, "shop/pricing.py", 0.8), blagent.FileHit(2, "shop/cart.py", 0.3)],
        usage=blagent.TokenUsage(1200, 80, 1),
    )


def test_any_file_localizer_result_becomes_an_agentless_line(tmp_path: Path) -> None:
    line = to_loc_line(other_localizer_result())
    assert line["found_files"] == ["shop/pricing.py", "shop/cart.py"]
    assert contract_problems(line) == []
    schema_validator("agentless-loc-line").validate(line)
    path = tmp_path / "loc_outputs.jsonl"
    assert write_loc_outputs([other_localizer_result(), line["blagent"]], path) == 2
    assert [entry["instance_id"] for entry in read_loc_outputs(path)] == ["acme__shop-7"] * 2


def test_write_loc_outputs_appends_only_to_its_own_lines(tmp_path: Path) -> None:
    """Found by a review: `write_loc_outputs` appended to any path (a copy of the dataset took
    a loc line), and glued its line onto a last line an interrupted write had cut short, so
    that the file no longer parsed."""
    result = other_localizer_result()
    line = json.dumps(to_loc_line(result))
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    theirs = tmp_path / "agentless_loc_outputs.jsonl"  # Agentless's own: no `blagent`
    theirs.write_text(json.dumps({"instance_id": "i", "found_files": [], "file_traj": {}}))
    nan = tmp_path / "nan.jsonl"  # JSON cannot read it before its end: someone else's
    nan.write_text(line + "\n" + '{"instance_id": "x", "found_files": NaN')
    linked = tmp_path / "linked.jsonl"
    linked.symlink_to(tmp_path / "nowhere.jsonl")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    # Found by a review: file-level lines were appended to a related-level batch output (one
    # file then handed Agentless two kinds of line, and the batch refused to resume it).
    related = tmp_path / "related.jsonl"
    related.write_text(json.dumps({**to_loc_line(result), "found_related_locs": {}}) + "\n")
    settled = tmp_path / "settled.jsonl"
    settled.write_text(json.dumps({**to_loc_line(result), "blagent_settings": {}}) + "\n")
    before = {p: p.read_text() for p in (dataset, theirs, nan, related, settled)}
    for path, why in [
        (related, "holds related-level lines"),
        (settled, "holds the lines of a `blagent batch` run"),
        (dataset, "does not hold what blagent writes"),
        (theirs, "does not hold what blagent writes"),
        (nan, "does not hold what blagent writes"),
        (linked, "is a link or a folder"),
        (tmp_path, "is a link or a folder"),
        (fifo, "is not a regular file"),
    ]:
        with pytest.raises(offline.OutputRefused, match=why):
            write_loc_outputs([result], path)
    assert {p: p.read_text() for p in before} == before
    assert not (tmp_path / "nowhere.jsonl").exists()

    # Found by a review: an empty source file's hard link took the lines (it passed the
    # check of what the file holds); and a result that is no result was a KeyError after the
    # file had been created.
    source = tmp_path / "__init__.py"
    source.write_text("")
    os.link(source, tmp_path / "hard.jsonl")
    with pytest.raises(offline.OutputRefused, match="has another name"):
        write_loc_outputs([result], tmp_path / "hard.jsonl")
    assert source.read_text() == ""
    for bad in ({}, {"instance_id": "i", "files": [{"rank": 1}]}, {"files": []}, None):
        with pytest.raises(ValueError, match="must be a LocalizationResult or its JSON data"):
            write_loc_outputs([result, bad], tmp_path / "new.jsonl")
    assert not (tmp_path / "new.jsonl").exists()
    # Found by a review: a NaN score was written as the token `NaN`, which no JSON reader takes.
    nan_score = result.to_dict()
    nan_score["files"][0]["score"] = float("nan")
    with pytest.raises(ValueError, match="JSON cannot hold"):
        write_loc_outputs([nan_score], tmp_path / "new.jsonl")
    assert not (tmp_path / "new.jsonl").exists()

    # Found by a review of the kind check: a line holding U+2028 in a string was split there.
    odd = tmp_path / "odd.jsonl"
    odd.write_text(
        json.dumps({**to_loc_line(result), "file_traj": {"x": "a\u2028b"}}, ensure_ascii=False)
        + "\n"
    )
    assert write_loc_outputs([result], odd) == 1

    # A batch line (the core writes no spaces), then one an interrupted append cut short
    # anywhere: it is dropped before the next line, as `blagent batch` drops it.
    batch = json.dumps(to_loc_line(result), separators=(",", ":"))
    out = tmp_path / "loc_outputs.jsonl"
    for cut in (1, 9, 20, len(line) // 2, len(line) - 1):
        out.write_text(batch + "\n" + line[:cut])
        assert write_loc_outputs([result], out) == 1
        assert out.read_text() == batch + "\n" + line + "\n", cut
    tricky = r'{"instance_id": "x", "a": [1.25e-3, -0, true, false, null, "q\u00e9\\"]}'
    assert all(offline.ends_too_early(tricky[:n]) for n in range(1, len(tricky)))
    assert not offline.ends_too_early(tricky) and not offline.ends_too_early('{"a": NaN')
    out.write_text(batch)  # a whole line saved without its newline keeps it
    assert write_loc_outputs([result], out) == 1
    assert out.read_text() == batch + "\n" + line + "\n"
    assert len(read_loc_outputs(out)) == 2
    out.write_bytes(batch.encode() + b'\n{"instance_id":"caf\xc3')  # cut inside a character
    assert write_loc_outputs([result], out) == 1
    assert out.read_text() == batch + "\n" + line + "\n"
    with out.open("rb") as held:  # another run writing it, locked as `blagent batch` locks it
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(offline.OutputRefused, match="another run is writing it"):
            write_loc_outputs([result], out)
    assert out.read_text() == batch + "\n" + line + "\n"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"instance_id": "a", "found_files": ["x.py"]}, "missing `file_traj`"),
        (
            {
                "instance_id": "a",
                "found_files": "x.py",
                "additional_artifact_loc_file": {},
                "file_traj": {},
            },
            "not a list",
        ),
        (
            {
                "instance_id": "a",
                "found_files": ["/abs/x.py"],
                "additional_artifact_loc_file": {},
                "file_traj": {},
            },
            "repository-relative",
        ),
        (
            {
                "instance_id": "a",
                "found_files": ["x.py", "x.py"],
                "additional_artifact_loc_file": {},
                "file_traj": {},
            },
            "repeats",
        ),
        (
            {
                "instance_id": "a",
                "found_files": ["x.py"],
                "additional_artifact_loc_file": {},
                "file_traj": {},
                "found_related_locs": {},
            },
            "related level line without",
        ),
    ],
)
def test_contract_and_schema_reject_what_agentless_would_misread(
    line: dict[str, Any], problem: str
) -> None:
    assert any(problem in p for p in contract_problems(line)), contract_problems(line)
    assert not schema_validator("agentless-loc-line").is_valid(line)


def test_offline_dataset_structures_filter_and_align(tmp_path: Path) -> None:
    rows = [
        {"instance_id": "acme__shop-7", "repo": "acme/shop", "problem_statement": "x"},
        {"instance_id": "b", "repo": "acme/shop", "problem_statement": "y"},
    ]
    dataset = tmp_path / "lite.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = offline.write_dataset(dataset, tmp_path / "work", {"acme__shop-7"})
    assert written == tmp_path / "work" / "princeton-nlp" / "SWE-bench_Lite" / "test.jsonl"
    assert [json.loads(x)["instance_id"] for x in written.read_text().splitlines()] == [
        "acme__shop-7"
    ]

    py = {"classes": [], "functions": [], "text": ["pass"]}
    structure = {
        "shop": {
            "shop": {"pricing.py": py, "tests": {"test_a.py": py}, "README": {}},
            "setup.py": py,
            # a folder holding a subfolder named `text` is still a folder
            "docs": {"text": {"a.txt": {}}, "guide.py": py},
        }
    }
    assert offline.python_files(structure) == {
        "shop/shop/pricing.py",
        "shop/setup.py",
        "shop/docs/guide.py",
    }
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "acme__shop-7.json").write_text(
        json.dumps({"structure": {"shop": {"pricing.py": py}, "setup.py": py}})
    )
    start = tmp_path / "ours.jsonl"
    ours = to_loc_line(other_localizer_result())
    ours["found_related_locs"] = {f: ["function: f"] for f in ours["found_files"]}
    ours.update(additional_artifact_loc_related=[], related_loc_traj=[])
    start.write_text(json.dumps(ours) + "\n")
    aligned = tmp_path / "aligned.jsonl"
    assert offline.align(start, structures, aligned) == (1, 1)
    (line,) = read_loc_outputs(aligned)
    assert line["found_files"] == ["shop/pricing.py"]
    assert line["found_related_locs"] == {"shop/pricing.py": ["function: f"]}
    assert line["blagent"]["dropped_for_agentless"] == ["shop/cart.py"]
    assert contract_problems(line) == []


def test_align_names_the_next_file_where_one_is_dropped(tmp_path: Path) -> None:
    py = {"classes": [], "functions": [], "text": ["pass"]}
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "i.json").write_text(
        json.dumps({"structure": {"shop": {n: py for n in ("b.py", "c.py", "d.py")}}})
    )
    files = ["shop/a.py", "shop/b.py", "shop/c.py", "shop/d.py"]
    more = {f: [f"function: f{i}"] for i, f in enumerate(files)}
    line = {
        "instance_id": "i",
        "found_files": files,
        "additional_artifact_loc_file": {},
        "file_traj": {},
        "found_related_locs": {f: more[f] for f in files[:3]},
        "additional_artifact_loc_related": [],
        "related_loc_traj": [],
        "blagent_related_locs": more,
    }
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps(line) + "\n")
    aligned = tmp_path / "aligned.jsonl"
    assert offline.align(start, structures, aligned) == (1, 1)
    (out,) = read_loc_outputs(aligned)
    assert list(out["found_related_locs"]) == ["shop/b.py", "shop/c.py", "shop/d.py"]
    assert out["found_related_locs"]["shop/d.py"] == ["function: f3"]
    assert contract_problems(out) == []
    assert offline.align(start, structures, aligned, top_n=1) == (1, 1)
    (out,) = read_loc_outputs(aligned)
    assert out["found_related_locs"] == {"shop/b.py": ["function: f1"]}


def test_scripted_server_answers_the_related_level_prompt_plausibly() -> None:
    text = answer(RELATED_PROMPT)
    assert (
        text
        == "```\nshop/pricing.py\nclass: Pricer\nfunction: Pricer.rate\n\nshop/cart.py\nfunction: total\n```"
    )


@pytest.fixture
def upstream() -> Iterator[tuple[Any, str]]:
    server, url = start_scripted()
    yield server, url
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy(upstream: tuple[Any, str]) -> Iterator[tuple[Any, str]]:
    server, url = start_proxy(
        ProxyConfig(upstream[1], "served-model", api_key="upstream-key", log=False)
    )
    yield server, url
    server.shutdown()
    server.server_close()


def post(url: str, body: dict[str, Any], key: str | None = "client-key") -> tuple[int, str, bytes]:
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        url + "/chat/completions", data=json.dumps(body).encode(), headers=headers
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def agentless_request(model: str, **extra: Any) -> dict[str, Any]:
    """What Agentless's `create_chatgpt_config` sends (`n`, `max_tokens`, temperature 0)."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": RELATED_PROMPT},
    ]
    return {
        "model": model,
        "max_tokens": 300,
        "temperature": 0,
        "n": 1,
        "messages": messages,
        **extra,
    }


def test_proxy_rewrites_the_model_as_agentless_calls_it(
    upstream: tuple[Any, str], proxy: tuple[Any, str]
) -> None:
    status, content_type, body = post(proxy[1], agentless_request(AGENTLESS_MODELS[0]))
    assert status == 200 and content_type == "application/json"
    completion = json.loads(body)
    assert completion["choices"][0]["message"]["content"].startswith(
        "```\nshop/pricing.py\nclass: Pricer"
    )
    assert completion["usage"]["prompt_tokens"] > 0
    seen = upstream[0].requests[-1]
    assert seen["model"] == "served-model" and seen["path"] == "/v1/chat/completions"
    assert seen["authorization"] == "Bearer upstream-key"
    assert list(proxy[0].config.rewrites) == [(AGENTLESS_MODELS[0], "served-model")]


def test_proxy_streams_server_sent_events(
    upstream: tuple[Any, str], proxy: tuple[Any, str]
) -> None:
    status, content_type, body = post(proxy[1], agentless_request(AGENTLESS_MODELS[1], stream=True))
    assert status == 200 and content_type.startswith("text/event-stream")
    events = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content", "") for e in events[:-1])
    assert text == answer(RELATED_PROMPT)
    assert (
        upstream[0].requests[-1]["stream"] is True
        and upstream[0].requests[-1]["model"] == "served-model"
    )


def test_proxy_passes_upstream_errors_through(upstream: tuple[Any, str]) -> None:
    server, url = start_proxy(ProxyConfig(upstream[1], "error-429", log=False))
    try:
        status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]))
        assert status == 429 and json.loads(body)["error"]["message"] == "scripted error-429"
        assert upstream[0].requests[-1]["authorization"] == "Bearer client-key"  # no key: forwarded
    finally:
        server.shutdown()
        server.server_close()


def test_proxy_reports_an_unreachable_upstream_and_bad_bodies() -> None:
    server, url = start_proxy(ProxyConfig("http://127.0.0.1:9/v1", "m", timeout=5, log=False))
    try:
        status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]))
        assert status == 502 and json.loads(body)["error"]["type"] == "proxy_error"
        bad = urllib.request.Request(
            url + "/chat/completions", data=b"{nope", headers={"Content-Type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(bad, timeout=10)
        assert err.value.code == 400
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            assert [m["id"] for m in json.loads(response.read())["data"]] == list(AGENTLESS_MODELS)
    finally:
        server.shutdown()
        server.server_close()


class _Upstream(BaseHTTPRequestHandler):
    """A quiet HTTP/1.0 upstream for the proxy's tests; `server.seen` keeps what it was asked."""

    protocol_version = "HTTP/1.0"
    server: Any

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _read(self) -> str:
        """Reads the request's body; returns its `Authorization`."""
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return self.headers.get("Authorization") or ""


class _Misbehaving(_Upstream):
    """An upstream that redirects (`/redirect`), echoes the key it was sent in an error
    (`/echo`) or answers more than the proxy reads (`/big`); it keeps every request's path and
    `Authorization`."""

    def do_POST(self) -> None:
        auth = self._read()
        self.server.seen.append((self.path, auth))
        if self.path.startswith("/redirect"):
            self.send_response(307)
            self.send_header("Location", f"http://127.0.0.1:{self.server.server_address[1]}/landed")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        status, body = 200, b"{" + b" " * 4096 + b"}"
        if self.path.startswith("/echo"):
            status, body = 401, json.dumps({"error": {"message": f"bad key {auth}"}}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_proxy_follows_no_redirect_reads_bounded_answers_and_redacts_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by a review: the proxy followed a redirect with the upstream key, read an answer
    of any length, passed an echoed key back to the client and hung on a negative length."""
    monkeypatch.setattr(proxy_module, "MAX_BODY_BYTES", 1024)
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    upstream.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{upstream.server_address[1]}"
    proxies = []
    try:
        for path, key in (("/redirect", "sk-upstream-secret"), ("/echo", None), ("/big", None)):
            server, url = start_proxy(ProxyConfig(base + path + "/v1", "m", api_key=key, log=False))
            proxies.append(server)
            status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]), key="sk-client-key")
            if path == "/redirect":
                assert status == 502 and "redirected (307); not followed" in body.decode()
            elif path == "/echo":
                assert status == 401 and b"sk-client-key" not in body
                assert json.loads(body)["error"]["message"] == "bad key Bearer <redacted>"
            else:
                assert status == 502 and "over 1,024 bytes" in json.loads(body)["error"]["message"]
        assert [p for p, _ in upstream.seen] == [
            "/redirect/v1/chat/completions",
            "/echo/v1/chat/completions",
            "/big/v1/chat/completions",
        ], "the redirect's target is never asked"
        assert upstream.seen[0][1] == "Bearer sk-upstream-secret"
        port = proxies[0].server_address[1]
        for length in ("-1", "abc", str(1 << 40)):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                conn.sendall(
                    f"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {length}\r\n\r\n".encode()
                )
                assert conn.recv(64).startswith(b"HTTP/1.0 400"), length
    finally:
        for server in proxies:
            server.shutdown()
            server.server_close()
        upstream.shutdown()
        upstream.server_close()


def test_offline_outputs_never_replace_their_inputs_or_foreign_files(tmp_path: Path) -> None:
    py = {"classes": [], "functions": [], "text": ["pass"]}
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "i.json").write_text(json.dumps({"structure": {"a.py": py}}))
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py", "b.py"]}) + "\n")
    before = start.read_text()
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    other_run = tmp_path / "other_batch.jsonl"
    other_run.write_text(start.read_text())
    for out, why in [
        (other_run, "does not hold what this command writes"),
        (start, "an input of this command"),
        (structures / "aligned.jsonl", "which this command reads"),
        (notes, "does not hold what this command writes"),
    ]:
        with pytest.raises(offline.OutputRefused, match=why):
            offline.align(start, structures, out)
    assert start.read_text() == before and notes.read_text() == "mine\n"
    assert not (structures / "aligned.jsonl").exists()
    assert other_run.read_text() == before
    aligned = tmp_path / "aligned.jsonl"
    for _ in range(2):  # its own output is replaced
        assert offline.align(start, structures, aligned) == (1, 1)
    # A file left where the new output is first written, linked to the input, is not written
    # through: the new output is always a new file.
    leftover = tmp_path / ".fresh.jsonl.blagent-part"
    leftover.symlink_to(start)
    assert offline.align(start, structures, tmp_path / "fresh.jsonl") == (1, 1)
    assert start.read_text() == before and not (tmp_path / "fresh.jsonl").is_symlink()
    # The dataset subcommand: the dataset is where Agentless would look for it.
    work = tmp_path / "work"
    dataset = work / offline.DATASET_DIR / "test.jsonl"
    dataset.parent.mkdir(parents=True)
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    code = offline.main(["dataset", "--dataset", str(dataset), "--work", str(work)])
    assert code == 1 and json.loads(dataset.read_text())["instance_id"] == "i"
    # Found by a review: a dataset put there by other means, every row with an `instance_id`,
    # was replaced by the selected rows of another one. Only the file this command wrote is.
    mine = tmp_path / "mine.jsonl"
    mine.write_text(json.dumps({"instance_id": "c", "repo": "x/z"}) + "\n")
    theirs = dataset.read_text()
    with pytest.raises(offline.OutputRefused, match="this command did not write it"):
        offline.write_dataset(mine, work, None)
    assert dataset.read_text() == theirs
    dataset.unlink()
    for _ in range(2):
        assert offline.write_dataset(mine, work, None) == dataset
        assert dataset.read_text() == mine.read_text()
    dataset.write_text(theirs)  # changed by hand since: no longer the file it wrote
    with pytest.raises(offline.OutputRefused, match="this command did not write it"):
        offline.write_dataset(mine, work, None)
    assert dataset.read_text() == theirs
    # Found by a review: a digest file it did not write (notes of the user's, a link to
    # another file) was overwritten or replaced when the dataset was not there.
    dataset.unlink()
    digest = dataset.with_name(offline.DATASET_DIGEST)
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes\n")
    for other in ("text", "symlink", "hard link"):
        digest.unlink()
        if other == "text":
            digest.write_text("my own notes\n")
        elif other == "symlink":
            digest.symlink_to(notes)
        else:
            os.link(notes, digest)
        with pytest.raises(offline.OutputRefused, match="did not write it"):
            offline.write_dataset(mine, work, None)
        assert not dataset.exists() and notes.read_text() == "my own notes\n"
        assert digest.is_symlink() == (other == "symlink")
    assert "my own notes" in digest.read_text()


def test_align_refuses_lines_it_cannot_read_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    py = {"classes": [], "functions": [], "text": ["pass"]}
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "i.json").write_text(json.dumps({"structure": {"a.py": py}}))
    (tmp_path / "secret.json").write_text(json.dumps({"structure": {"a.py": py}}))
    start = tmp_path / "start.jsonl"
    cases = [
        ('{"instance_id": "i", "found_files": null}', "found_files is not a list"),
        ('{"instance_id": "i", "found_files": "a.py"}', "found_files is not a list"),
        ('{"instance_id": "i", "found_files": ["a.py"], "blagent": 5}', "blagent is not"),
        ("[1]", "is not a JSON object"),
        ("not json", "is not JSON"),
        ('{"instance_id": "../secret", "found_files": ["a.py"]}', "is not a file name"),
        ('{"instance_id": "", "found_files": ["a.py"]}', "is not a file name"),
    ]
    args = ["align", "--start-file", str(start), "--structures", str(structures)]
    for line, why in cases:
        start.write_text(line + "\n")
        out = tmp_path / "out.jsonl"
        assert offline.main([*args, "--out", str(out)]) == 1, line
        err = capsys.readouterr().err
        assert err.startswith("offline: ") and why in err, (line, err)
        assert not out.exists()
    start.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n")
    assert offline.main([*args, "--out", str(tmp_path / "o.jsonl"), "--top-n", "0"]) == 1
    assert "--top-n must be at least 1" in capsys.readouterr().err
    assert offline.main([*args, "--out", f"{tmp_path}/new/"]) == 1
    assert "names a folder" in capsys.readouterr().err and not (tmp_path / "new").exists()
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    work = ["dataset", "--dataset", str(dataset), "--work", str(tmp_path / "w")]
    assert offline.main([*work, "--ids", "i,typo"]) == 1
    assert "1 selected id(s) not in" in capsys.readouterr().err


def test_offline_inputs_must_be_regular_files(tmp_path: Path) -> None:
    """A FIFO or device given as the dataset, start file or a structure is refused at once:
    reading one hung (a FIFO with no writer) or ran out of memory (`/dev/zero`)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    py = {"classes": [], "functions": [], "text": ["pass"]}
    structures = tmp_path / "structures"
    structures.mkdir()
    os.mkfifo(structures / "i.json")
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n")
    (tmp_path / "s2").mkdir()
    (tmp_path / "s2" / "i.json").write_text(json.dumps({"structure": {"a.py": py}}))
    out = str(tmp_path / "out.jsonl")
    runs = [
        (["dataset", "--dataset", str(fifo), "--work", str(tmp_path / "w")], "dataset"),
        (["align", "--start-file", str(fifo), "--structures", str(structures)], "start file"),
        (["align", "--start-file", str(start), "--structures", str(structures)], "structure"),
        (["align", "--start-file", "/dev/zero", "--structures", str(structures)], "start file"),
    ]
    root = Path(__file__).resolve().parents[1]
    for args, what in runs:
        done = subprocess.run(
            [sys.executable, "-m", "agentless_adapter.offline", *args, "--out", out]
            if args[0] == "align"
            else [sys.executable, "-m", "agentless_adapter.offline", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1, (args, done.stderr)
        assert f"{what} " in done.stderr and "is not a regular file" in done.stderr, done.stderr
        assert not Path(out).exists() and not (tmp_path / "w").exists()
    assert offline.align(start, tmp_path / "s2", Path(out)) == (1, 0)


def test_check_related_locs_reads_only_regular_files_inside_the_tree(tmp_path: Path) -> None:
    """The paths of a loc line name the files read: an absolute path, `..` or a link leading
    out of the tree was read, and a FIFO hung the check."""
    from agentless_adapter.check_related_locs import source_text, structure_of

    tree = tmp_path / "trees" / "i"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("def f():\n    pass\n")
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'x'\n")
    (tree / "out.py").symlink_to(secret)
    os.mkfifo(tree / "pipe.py")
    paths = ["pkg/a.py", str(secret), "../../secret.py", "out.py", "pipe.py", "."]
    assert [source_text(tree, p) is not None for p in paths] == [True] + [False] * 5
    seen: list[str] = []
    structure = structure_of(tree, paths, lambda _, text: (seen.append(text), [], [], text)[1:])
    assert seen == ["def f():\n    pass\n"] and list(structure) == ["pkg"]


def test_proxy_sends_upstream_credentials_as_basic_auth_and_never_shows_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Found by a review: credentials in `--upstream` were printed at start and returned in
    the 502 body (and the upstream could not be reached at all: urllib takes no user part in a
    URL), and a query in it had the request's path appended after it."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Misbehaving)
    upstream.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = upstream.server_address[1]
    secret_url = f"http://bob:HUNTER2SECRET@127.0.0.1:{port}/echo/v1?key=QSECRETKEY"
    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "agentless_adapter.proxy", "--model", "m", "--port", "0"]
    proc = subprocess.Popen(
        [*command, "--upstream", secret_url], cwd=root, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        started = proc.stderr.readline()
        assert started.startswith(f"proxy: serving http://<redacted>@127.0.0.1:{port}/echo/v1…")
        url = started.rsplit(" at ", 1)[1].strip()
        status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]), key=None)
        assert status == 401, body
        assert upstream.seen == [  # type: ignore[attr-defined]
            ("/echo/v1/chat/completions?key=QSECRETKEY", "Basic Ym9iOkhVTlRFUjJTRUNSRVQ=")
        ]
        assert json.loads(body)["error"]["message"] == "bad key Basic <redacted>"
    finally:
        proc.terminate()
        _, rest = proc.communicate(timeout=30)
        upstream.shutdown()
        upstream.server_close()
    assert "HUNTER2" not in started + rest and "QSECRET" not in started + rest

    server, url = start_proxy(
        ProxyConfig("http://bob:HUNTER2SECRET@127.0.0.1:9/v1?key=QSECRETKEY", "m", log=False)
    )
    try:
        status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]))
        message = json.loads(body)["error"]["message"]
        assert status == 502 and message.startswith("upstream http://<redacted>@127.0.0.1:9/v1…")
        assert b"HUNTER2" not in body and b"QSECRET" not in body
    finally:
        server.shutdown()
        server.server_close()

    for args, why in [
        (["--upstream", "ftp://bob:HUNTER2SECRET@h/v1"], "the scheme must be http or https"),
        (["--upstream", "http://bob:HUNTER2#SECRET@h/v1"], "percent-encode"),
        (["--upstream", "http://bob:HUNTER2SECRET@:9/v1"], "no host"),
        (["--upstream", "http://bob:HUNTER2SECRET@h/v1\x01"], "a control character"),
        (["--upstream", "http://bob:HUNTER2SECRET@h/v1", "--api-key-env", "PATH"], "give one"),
    ]:
        assert proxy_module.main([*args, "--model", "m", "--port", "0"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("proxy: error: --upstream ") and err.count("\n") == 1, err
        assert why in err and "HUNTER2" not in err, err


def _agentless_parser(tmp_path: Path) -> Path:
    """A folder holding `get_repo_structure/get_repo_structure.py` with the one function of
    Agentless that `offline structures` imports, `parse_python_file(path, content)`: here it
    keeps the lines only (Agentless's needs pandas and tqdm, which the tests do not install)."""
    src = tmp_path / "agentless"
    (src / "get_repo_structure").mkdir(parents=True)
    (src / "get_repo_structure" / "get_repo_structure.py").write_text(
        "def parse_python_file(file_path, file_content=None):\n"
        "    return [], [], file_content.splitlines()\n"
    )
    return src


def test_offline_structures_read_only_regular_files_inside_the_tree(tmp_path: Path) -> None:
    """Found by a review: `structures` handed the raw tree to Agentless's `create_structure`,
    so a link to a file outside the tree had its content copied into the structure and a FIFO
    named `*.py` hung the command."""
    tree = tmp_path / "trees" / "i"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("def f():\r\n    pass\n")
    (tree / "setup.py").write_text("x = 1\n")
    (tree / "README").write_text("read me\n")
    (tree / "inner.py").symlink_to(tree / "pkg" / "a.py")
    secret = tmp_path / "secret.py"
    secret.write_text("TOKEN = 'SECRETVALUE'\n")
    (tree / "out.py").symlink_to(secret)
    (tree / "zero.py").symlink_to("/dev/zero")
    os.mkfifo(tree / "pkg" / "pipe.py")
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    out = tmp_path / "structures"
    src = _agentless_parser(tmp_path)
    args = [
        "--dataset",
        dataset,
        "--repos",
        tmp_path / "trees",
        "--out",
        out,
        "--agentless-src",
        src,
    ]
    done = subprocess.run(
        [sys.executable, "-m", "agentless_adapter.offline", "structures", *map(str, args)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    text = (out / "i.json").read_text()
    assert "SECRETVALUE" not in text
    shop = json.loads(text)["structure"]["shop"]
    assert set(shop) == {"setup.py", "README", "inner.py"}
    assert json.loads(text)["structure"]["pkg"] == {
        "a.py": {"classes": [], "functions": [], "text": ["def f():", "    pass"]}
    }
    assert shop["inner.py"] == json.loads(text)["structure"]["pkg"]["a.py"]
    assert shop["README"] == {}
    for name in ("shop/out.py leads out", "shop/zero.py leads out", "pipe.py is not a regular"):
        assert name in done.stderr, done.stderr
    assert not list(tmp_path.glob(".structures.blagent-lock"))


def test_offline_refuses_bad_input_in_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a review: a JSON integer of 5,000 digits, an --agentless-src that is not an
    Agentless checkout and a dataset row without `repo` gave tracebacks (and the last left an
    empty --out folder behind)."""
    huge = '{"instance_id": "i", "found_files": [], "n": ' + "9" * 5000 + "}"
    bad = tmp_path / "huge.jsonl"
    bad.write_text(huge + "\n")
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "i.json").write_text(json.dumps({"structure": {"a.py": {}}}))
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n")
    kept = tmp_path / "theirs.jsonl"
    kept.write_text(huge + "\n")
    norepo = tmp_path / "norepo.jsonl"
    norepo.write_text(json.dumps({"instance_id": "i"}) + "\n")
    # A later review: an id that is a list or an object was a TypeError's traceback.
    listid = tmp_path / "listid.jsonl"
    listid.write_text(json.dumps({"instance_id": ["i"], "repo": "x/y"}) + "\n")
    dictid = tmp_path / "dictid.jsonl"
    dictid.write_text(json.dumps({"instance_id": {"x": 1}, "repo": "x/y"}) + "\n")
    (tmp_path / "trees" / "i").mkdir(parents=True)
    src = _agentless_parser(tmp_path)
    align = ["align", "--structures", str(structures)]
    structs = ["structures", "--repos", str(tmp_path / "trees"), "--out", str(tmp_path / "new")]
    cases = [
        ([*align, "--start-file", str(bad), "--out", str(tmp_path / "o.jsonl")], "is not JSON"),
        ([*align, "--start-file", str(start), "--out", str(kept)], "does not hold what"),
        (["dataset", "--dataset", str(bad), "--work", str(tmp_path / "w")], "is not JSON"),
        ([*structs, "--dataset", str(start), "--agentless-src", "/nonexistent"], "not a folder"),
        ([*structs, "--dataset", str(start), "--agentless-src", str(tmp_path)], "cannot import"),
        ([*structs, "--dataset", str(norepo), "--agentless-src", str(src)], "repo None is not"),
        (["dataset", "--dataset", str(listid), "--work", str(tmp_path / "w")], "not a string"),
        ([*structs, "--dataset", str(dictid), "--agentless-src", str(src)], "not a string"),
    ]
    for args, why in cases:
        assert offline.main(args) == 1, args
        err = capsys.readouterr().err
        assert err.startswith("offline: ") and err.count("\n") == 1 and why in err, (args, err)
        assert len(err) < 1000, err
    assert kept.read_text() == huge + "\n"
    for made in ("o.jsonl", "w", "new"):
        assert not (tmp_path / made).exists(), made


def _limit_file_size() -> None:
    # Writes past 64 bytes fail with EFBIG (Python ignores SIGXFSZ, so the process lives on).
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def test_offline_outputs_are_locked_and_a_failed_write_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/limits.md says so; found by a review: no output was locked, and a write that
    failed was exit 1."""
    structures = tmp_path / "structures"
    structures.mkdir()
    py = {"classes": [], "functions": [], "text": ["pass"]}
    (structures / "i.json").write_text(json.dumps({"structure": {"a.py": py}}))
    start = tmp_path / "start.jsonl"
    start.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n")
    out = tmp_path / "aligned.jsonl"
    args = ["align", "--start-file", str(start), "--structures", str(structures)]
    lock = tmp_path / ".aligned.jsonl.blagent-lock"
    lock.write_text("")  # another run, writing the same output (or one that was killed)
    assert offline.main([*args, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{out} is locked by {lock}: another run" in err and err.count("\n") == 1, err
    assert "remove it if no run is going" in err and not out.exists() and lock.exists()
    lock.unlink()
    assert offline.main([*args, "--out", str(out)]) == 0
    assert read_loc_outputs(out)[0]["found_files"] == ["a.py"] and not lock.exists()
    lock.write_text("mine\n")  # a file of that name this command did not make stays
    assert offline.main([*args, "--out", str(out)]) == 1
    assert "is locked by" in capsys.readouterr().err and lock.read_text() == "mine\n"
    lock.unlink()

    big = tmp_path / "big.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "agentless_adapter.offline", *args, "--out", str(big)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limit_file_size,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("offline: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "File too large" in done.stderr
    assert not big.exists() and not list(tmp_path.glob(".big*")), list(tmp_path.iterdir())


def _module(name: str, *args: object) -> subprocess.CompletedProcess[str]:
    """`python -m agentless_adapter.NAME ARGS`, with a timeout (a FIFO read would hang)."""
    return subprocess.run(
        [sys.executable, "-m", f"agentless_adapter.{name}", *map(str, args)],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _one_line_error(done: subprocess.CompletedProcess[str], prefix: str, why: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.startswith(prefix) and done.stderr.count("\n") == 1, done.stderr
    assert why in done.stderr, done.stderr


def test_check_related_locs_reads_a_run_of_line_entries_as_one_location() -> None:
    """The check groups the `line: N` lines blagent writes for an entity Agentless would not
    find by its name, and judges the code Agentless shows for each location by the lines of
    the entity it names: a name that lands on other code is wrong."""
    from agentless_adapter.check_related_locs import agentless_name, lands_right, location_groups

    text = "function: Cart.total\nline: 6\nline: 7\nclass: Inner\nline: 9\n\nfunction: f"
    assert location_groups(text) == [
        "function: Cart.total",
        "line: 6\nline: 7",
        "class: Inner",
        "line: 9",
        "function: f",
    ]
    entities = [
        {"name": "Cart.total", "kind": "method", "lines": [2, 3]},
        {"name": "validate", "kind": "function", "lines": [6, 7]},
        {"name": "Outer.Inner", "kind": "class", "lines": [9, 12]},
        {"name": "Outer.Inner.run", "kind": "method", "lines": [10, 12]},
    ]
    assert [agentless_name(e) for e in entities] == [
        "function: Cart.total",
        "function: validate",
        "class: Inner",
        "function: Inner.run",
    ]
    assert lands_right("function: Cart.total", [(2, 3)], entities)
    assert lands_right("function: Inner.run", [(11, 12)], entities)  # from `def`, no decorator
    assert not lands_right("function: validate", [(2, 3)], entities)  # the method of that name
    assert lands_right("line: 6\nline: 7", [(6, 6), (7, 7)], entities)
    assert lands_right("line: 7\nline: 9", [(7, 7), (9, 9)], entities)  # two entities' runs
    assert not lands_right("line: 4", [(4, 4)], entities)
    assert not lands_right("function: other", [(2, 3)], entities)


def test_check_related_locs_refuses_bad_locs_in_one_line(tmp_path: Path) -> None:
    """Found by a review: a FIFO given as --locs hung the check (and any file was read
    whole), and a line that is a JSON list gave an AttributeError traceback."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    locs = tmp_path / "locs.jsonl"
    trees = tmp_path / "trees"
    (trees / "i").mkdir(parents=True)
    common = ("--agentless-src", tmp_path / "no-agentless", "--repos", trees, "--locs")
    good = {"instance_id": "i", "found_related_locs": {"a.py": ["function: f"]}}
    cases = [
        (None, "is not a regular file"),
        ("[1]", "line 1 is not a JSON object"),
        ("{nope", "line 1 is not JSON"),
        ('{"instance_id": "../i", "found_related_locs": {}}', "is not a file name"),
        ('{"instance_id": "i", "found_related_locs": {"a.py": "x"}}', "is not {path:"),
        (json.dumps(good), "cannot import Agentless"),
    ]
    for text, why in cases:
        if text is not None:
            locs.write_text(text + "\n")
        done = _module("check_related_locs", *common, fifo if text is None else locs)
        _one_line_error(done, "check_related_locs: ", why)
    locs.write_text("[1]\n")
    with pytest.raises(offline.BadInput, match="is not a JSON object"):
        read_loc_outputs(locs)


def test_run_table_reads_regular_files_of_its_work_folder_only(tmp_path: Path) -> None:
    """Found by a review: a missing stage_times.tsv gave a traceback, a FIFO there hung, and
    the ids of file_level/loc_outputs.jsonl named the logs read (`..` led out of WORK)."""
    work = tmp_path / "work"
    (work / "file_level").mkdir(parents=True)
    started = work / "file_level" / "loc_outputs.jsonl"
    logs = work / "results" / "related_elements" / "localization_logs"
    logs.mkdir(parents=True)
    usage = "CompletionUsage(completion_tokens=7, prompt_tokens=100"
    (logs / "i.log").write_text(usage + "\n")
    (tmp_path / "secret.log").write_text(usage + "\n")
    (work / "results" / "related_elements" / "loc_outputs.jsonl").write_text(
        json.dumps({"instance_id": "i", "found_related_locs": {"a.py": ["function: f"]}}) + "\n"
    )
    times = work / "stage_times.tsv"
    started.write_text(json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n")
    done = _module("run_table", work)
    _one_line_error(done, "run_table: ", "cannot read stage times")
    os.mkfifo(times)
    _one_line_error(_module("run_table", work), "run_table: ", "is not a regular file")
    times.unlink()
    times.write_text("related_level\ti\t12\t0\n")
    done = _module("run_table", work)
    assert done.returncode == 0, done.stderr
    assert "| i | 1 fn/cls, 0 lines in 1 files; 1 req, 100+7 tok, 12 s |" in done.stdout
    for iid in ("../../../../secret", "a/b", "", ".."):
        started.write_text(json.dumps({"instance_id": iid, "found_files": []}) + "\n")
        _one_line_error(_module("run_table", work), "run_table: ", "is not a file name")
    started.write_text("[1]\n")
    _one_line_error(_module("run_table", work), "run_table: ", "is not a JSON object")
    started.write_text(json.dumps({"instance_id": "i", "found_files": []}) + "\n")
    times.write_text("related_level\ti\tlong\n")
    _one_line_error(_module("run_table", work), "run_table: ", "stage_times.tsv line 1 is not")


def _raw_request(url: str, request: bytes) -> bytes:
    """`request` sent as is to the host and port of `url`; the whole answer."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_proxy_answers_a_request_it_cannot_forward_and_never_prints_the_upstream_query(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Found by a review: a control character in a request's path made urllib raise
    InvalidURL, which socketserver printed with the whole upstream URL and its `?key=`, and
    the client got no answer; an unforeseen failure did the same."""
    upstream_url = "http://bob:HUNTER2SECRET@127.0.0.1:9/v1?key=QSECRETKEY"
    server, url = start_proxy(ProxyConfig(upstream_url, "m", log=False))
    try:
        answer = _raw_request(url, b"GET /v1/x\x01y HTTP/1.0\r\n\r\n")
        assert answer.startswith(b"HTTP/1.0 400 "), answer
        assert b"control character" in answer and b"QSECRET" not in answer

        def fail(*_: object, **__: object) -> None:
            raise RuntimeError(f"{upstream_url} broke")

        monkeypatch.setattr(proxy_module._OPENER, "open", fail)
        answer = _raw_request(url, b"GET /v1/other HTTP/1.0\r\n\r\n")
        assert answer.startswith(b"HTTP/1.0 500 "), answer
        assert b"RuntimeError" in answer and b"QSECRET" not in answer and b"HUNTER2" not in answer
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "QSECRET" not in err and "HUNTER2" not in err, err
    assert err == "proxy: error: a request failed (RuntimeError); answered 500\n", err


def test_proxy_refuses_an_upstream_url_that_does_not_parse_without_showing_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Found by a review: urlsplit's ValueError (an unclosed `[`, a character NFKC changes)
    was a traceback, and the NFKC one printed the password."""
    for upstream in (
        "http://user:pa[ss123@127.0.0.1:9/v1",
        "http://user:s3cr\u2100et@127.0.0.1:9/v1",
    ):
        assert proxy_module.main(["--upstream", upstream, "--model", "m", "--port", "0"]) == 1
        err = capsys.readouterr().err
        assert (
            err
            == "proxy: error: --upstream http://<redacted>@127.0.0.1:9/v1: the URL does not parse\n"
        ), err
    done = _module("proxy", "--upstream", "http://user:s3cr\u2100et@127.0.0.1:9/v1", "--model", "m")
    _one_line_error(done, "proxy: error: --upstream ", "does not parse")
    assert "s3cr" not in done.stderr and "Traceback" not in done.stderr


def test_offline_never_removes_a_file_named_as_its_lock(tmp_path: Path) -> None:
    """Found by a review: an empty regular file named `.NAME.blagent-lock` (here the run's own
    start file) was taken as the lock and removed at the end; a link of that name was an I/O
    error (exit 3); `structures --out` naming a file was exit 3 too."""
    structures = tmp_path / "structures"
    structures.mkdir()
    (structures / "i.json").write_text(json.dumps({"structure": {"a.py": {}}}))
    start = tmp_path / ".out.jsonl.blagent-lock"
    start.write_text("")  # an input with no lines: empty
    args = ["align", "--structures", structures, "--start-file", start, "--out"]
    done = _module("offline", *args, tmp_path / "out.jsonl")
    _one_line_error(done, "offline: ", "another run is writing it, or a stale lock")
    assert start.is_file() and start.read_text() == "" and not (tmp_path / "out.jsonl").exists()

    other = tmp_path / "other.jsonl"
    other.write_text("")
    (tmp_path / ".loop.jsonl.blagent-lock").symlink_to(".loop.jsonl.blagent-lock")
    (tmp_path / ".dangling.jsonl.blagent-lock").symlink_to(tmp_path / "nowhere")
    for name in ("loop.jsonl", "dangling.jsonl"):
        done = _module("offline", *args[:3], "--start-file", other, "--out", tmp_path / name)
        _one_line_error(done, "offline: ", "is locked by")
        assert (tmp_path / f".{name}.blagent-lock").is_symlink()
    assert not (tmp_path / "nowhere").exists()

    afile = tmp_path / "afile"
    afile.write_text("keep\n")
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    (tmp_path / "trees" / "i").mkdir(parents=True)
    src = _agentless_parser(tmp_path)
    structs = ("structures", "--dataset", dataset, "--repos", tmp_path / "trees")
    done = _module("offline", *structs, "--agentless-src", src, "--out", afile)
    _one_line_error(done, "offline: ", "is not a folder")
    assert afile.read_text() == "keep\n"


def test_offline_structures_out_may_be_dot_or_dotdot_and_not_the_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a review: `structures --out .` (or `/`) was a ValueError traceback (a path
    with an empty name), and with `..` the lock was put in the current folder."""
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    (tmp_path / "trees" / "i").mkdir(parents=True)
    (tmp_path / "trees" / "i" / "a.py").write_text("x = 1\n")
    src = _agentless_parser(tmp_path)
    here = tmp_path / "out" / "inner"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    common = ["structures", "--dataset", str(dataset), "--repos", str(tmp_path / "trees")]
    for out, written in ((".", here), ("..", tmp_path / "out")):
        assert offline.main([*common, "--agentless-src", str(src), "--out", out]) == 0
        assert json.loads((written / "i.json").read_text())["instance_id"] == "i"
        assert "Traceback" not in capsys.readouterr().err
        assert not list(tmp_path.rglob("*.blagent-lock")), list(tmp_path.rglob("*"))
    assert offline.main([*common, "--agentless-src", str(src), "--out", "/"]) == 1
    err = capsys.readouterr().err
    assert err == "offline: / is the root folder; name a folder for the output\n", err


def test_offline_structures_out_may_not_lie_in_a_linked_tree(tmp_path: Path) -> None:
    """Found by a review: with `trees/i -> checkouts/i`, `structures --out checkouts/i/structs`
    was accepted (only `--repos` was checked): the lock and, on a rerun, the structures
    appeared inside the tree Agentless reads."""
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    checkout = tmp_path / "checkouts" / "i"
    checkout.mkdir(parents=True)
    (checkout / "a.py").write_text("x = 1\n")
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "i").symlink_to(checkout)
    src = _agentless_parser(tmp_path)
    for out in (checkout / "structs", checkout):
        done = _module(
            "offline", "structures", "--dataset", dataset, "--repos", tmp_path / "trees",
            "--out", out, "--agentless-src", src,
        )  # fmt: skip
        _one_line_error(done, "offline: ", f"is inside {tmp_path / 'trees' / 'i'}, which")
    assert sorted(p.name for p in checkout.iterdir()) == ["a.py"]
    assert sorted(p.name for p in (tmp_path / "checkouts").iterdir()) == ["i"]


def test_rehearse_refuses_a_work_folder_it_did_not_make(tmp_path: Path) -> None:
    """Found by a review: `rehearse.sh` removed an existing WORK/file_level/loc_outputs.jsonl
    (Agentless's own, from a real run), emptied WORK/stage_times.tsv and removed results/*
    folders, whoever wrote them. It now runs only in a new or empty WORK, or one it marked."""

    def rehearse(work: Path) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "AGENTLESS_SRC": str(tmp_path),
            "AGENTLESS_PY": "/bin/false",
            "BLAGENT": "/bin/false",  # the run stops at its first step: enough here
            "DATASET": str(tmp_path / "d.jsonl"),
            "REPOS": str(tmp_path),
            "IDS": "i",
            "WORK": str(work),
        }
        script = Path(__file__).resolve().parents[1] / "agentless_adapter" / "rehearse.sh"
        return subprocess.run(
            ["bash", str(script)], env=env, capture_output=True, text=True, timeout=60
        )

    (tmp_path / "d.jsonl").write_text("")
    work = tmp_path / "work"
    (work / "file_level").mkdir(parents=True)
    theirs = {
        work / "file_level" / "loc_outputs.jsonl": '{"instance_id": "i", "found_files": []}\n',
        work / "stage_times.tsv": "stage\tall\t3600\t0\n",
    }
    for path, text in theirs.items():
        path.write_text(text)
    done = rehearse(work)
    assert done.returncode == 1 and "holds files this script did not write" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert {p: p.read_text() for p in theirs} == theirs
    assert not (work / ".blagent-rehearsal").exists()
    afile = tmp_path / "afile"
    afile.write_text("keep\n")
    done = rehearse(afile)
    assert (
        done.returncode == 1 and "is not a folder" in done.stderr and afile.read_text() == "keep\n"
    )
    fresh = tmp_path / "fresh"
    for _ in range(2):  # a new folder is marked; a rerun in it replaces its own outputs
        done = rehearse(fresh)
        assert "did not write" not in done.stderr and (fresh / ".blagent-rehearsal").is_file()
        assert "== 1. blagent" in done.stdout, done.stdout


def test_a_link_loop_in_a_tree_is_left_out(tmp_path: Path) -> None:
    """Found by a review: a link loop in a tree (`loop.py -> loop.py`) was a RuntimeError
    traceback in `offline structures` and in `check_related_locs`' reading of a file."""
    from agentless_adapter.check_related_locs import source_text

    tree = tmp_path / "trees" / "i"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("x = 1\n")
    (tree / "pkg" / "loop.py").symlink_to("loop.py")
    assert source_text(tree, "pkg/loop.py") is None and source_text(tree, "pkg/a.py") == "x = 1\n"
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    out = tmp_path / "structures"
    src = _agentless_parser(tmp_path)
    done = _module(
        "offline", "structures", "--dataset", dataset, "--repos", tmp_path / "trees",
        "--out", out, "--agentless-src", src,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "pkg/loop.py" in done.stderr and "left out" in done.stderr, done.stderr
    assert set(json.loads((out / "i.json").read_text())["structure"]["pkg"]) == {"a.py"}


def test_link_loops_as_outputs_or_folders_are_one_line_and_a_stopped_run_leaves_no_lock(
    tmp_path: Path,
) -> None:
    """Found by a review of the adapter's fixes: a link loop as `--out`, `--repos` or a tree of
    `check_related_locs` was a RuntimeError traceback; SIGTERM left the output's lock behind,
    so that every later run was refused."""
    (tmp_path / "loop").symlink_to("loop")
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i", "repo": "acme/shop"}) + "\n")
    (tmp_path / "trees" / "i").mkdir(parents=True)
    src = _agentless_parser(tmp_path)
    for repos, out in (
        (tmp_path / "trees", tmp_path / "loop" / "x"),
        (tmp_path / "loop", tmp_path / "s"),
    ):
        done = _module(
            "offline", "structures", "--dataset", dataset, "--repos", repos, "--out", out,
            "--agentless-src", src,
        )  # fmt: skip
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "loop" in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    locs = tmp_path / "locs.jsonl"
    locs.write_text(json.dumps({"instance_id": "loop", "found_related_locs": {}}) + "\n")
    done = _module(
        "check_related_locs", "--agentless-src", src, "--locs", locs, "--repos", tmp_path
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    # A parser that takes seconds per file: the run is stopped while it holds its lock.
    (src / "get_repo_structure" / "get_repo_structure.py").write_text(
        "import time\n"
        "def parse_python_file(file_path, file_content=None):\n"
        "    time.sleep(30)\n"
        "    return [], [], []\n"
    )
    (tmp_path / "trees" / "i" / "a.py").write_text("x = 1\n")
    out = tmp_path / "structures"
    args = ["--dataset", dataset, "--repos", tmp_path / "trees", "--out", out]
    command = [sys.executable, "-m", "agentless_adapter.offline", "structures", *args]
    proc = subprocess.Popen(
        [*map(str, command), "--agentless-src", str(src)],
        cwd=Path(__file__).resolve().parents[1],
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = tmp_path / ".structures.blagent-lock"
    # Generous waits: on a loaded machine the child took over 20 s to reach its lock once.
    deadline = time.monotonic() + 120
    while not lock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock.exists(), "the run holds its lock"
    proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + 15 and "Traceback" not in err, err
    assert not lock.exists()
    # A caller's handlers (a SIGHUP ignored under `nohup`) are left as they were.
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert (
            offline.main(
                [
                    "dataset",
                    "--dataset",
                    str(tmp_path / "none.jsonl"),
                    "--work",
                    str(tmp_path / "w"),
                ]
            )
            == 1
        )
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) != offline._exit_on
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_run_table_leaves_out_locations_that_are_not_text(tmp_path: Path) -> None:
    """Found by a review: `found_related_locs` values that are not lists of strings
    (`{"a.py": [1, 2]}`, nested lists) were a TypeError traceback."""
    work = tmp_path / "work"
    (work / "file_level").mkdir(parents=True)
    (work / "file_level" / "loc_outputs.jsonl").write_text(
        json.dumps({"instance_id": "i", "found_files": ["a.py"]}) + "\n"
    )
    (work / "results" / "related_elements").mkdir(parents=True)
    locs = {"a.py": [1, 2], "b.py": [["function: g"], "function: f"], "c.py": 7}
    (work / "results" / "related_elements" / "loc_outputs.jsonl").write_text(
        json.dumps({"instance_id": "i", "found_related_locs": locs}) + "\n"
    )
    (work / "stage_times.tsv").write_text("related_level\ti\t12\t0\n")
    done = _module("run_table", work)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "| i | 1 fn/cls, 0 lines in 1 files; 0 req, 0+0 tok, 12 s |" in done.stdout
    assert done.stderr == (
        "run_table: related_level i found_related_locs: 4 entries are not text; left out\n"
    ), done.stderr


class _Echoing(_Upstream):
    """An upstream that answers every request with its path and `Authorization`: a stream of
    two reads that split the key (`/stream`), else one JSON body."""

    def do_POST(self) -> None:
        auth = self._read()
        self.server.seen.append(self.path)
        if "/stream" in self.path:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            line = f'data: {{"echo": "{auth}"}}\n\n'.encode()
            half = line.index(b"sk-") + 5
            self.wfile.write(line[:half])
            self.wfile.flush()
            time.sleep(0.3)
            self.wfile.write(line[half:])
            return
        body = json.dumps({"path": self.path, "auth": auth}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_proxy_paths_stay_on_the_upstream_and_echoed_secrets_are_redacted_in_every_form() -> None:
    """Found by a review of the proxy's fixes: with an upstream without a path, a request path
    not starting with `/` (`2/steal`, `:PORT/x`) sent the request and the key to another port
    or host; a `?key=` value echoed as written (`s3cr%2Bt+value`) was not redacted, nor a key
    split between two reads of a stream; a chunked body was forwarded empty; a Content-Length
    of `²` was a 500."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Echoing)
    upstream.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{upstream.server_address[1]}"
    key = "sk-upstream-secret-key"
    servers = []
    try:
        bare, bare_url = start_proxy(ProxyConfig(f"http://{host}", "m", api_key=key, log=False))
        servers.append(bare)
        for path in (b"2/steal", b":1/steal", b".evil.example/x"):
            answer = _raw_request(
                bare_url, b"POST " + path + b" HTTP/1.0\r\nContent-Length: 0\r\n\r\n"
            )
            assert answer.startswith(b"HTTP/1.0 400 "), answer
            assert b"must start with /" in answer
        answer = _raw_request(bare_url, "GET /v1/caf\u00e9 HTTP/1.0\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.0 400 ") and b"ASCII" in answer, answer
        assert upstream.seen == [], "nothing was sent on"
        queried, url = start_proxy(
            ProxyConfig(f"http://{host}/v1?key=s3cr%2Bt+value", "m", api_key=key, log=False)
        )
        servers.append(queried)
        status, _, body = post(url, agentless_request(AGENTLESS_MODELS[0]))
        assert status == 200 and upstream.seen[-1] == "/v1/chat/completions?key=s3cr%2Bt+value"
        assert b"s3cr" not in body and key.encode() not in body, body
        streamed, stream_url = start_proxy(
            ProxyConfig(f"http://{host}/stream", "m", api_key=key, log=False)
        )
        servers.append(streamed)
        status, _, body = post(stream_url, agentless_request(AGENTLESS_MODELS[0]))
        assert status == 200 and body == b'data: {"echo": "Bearer <redacted>"}\n\n', body
        for headers in (b"Transfer-Encoding: chunked\r\n", "Content-Length: \u00b2\r\n".encode()):
            answer = _raw_request(
                bare_url, b"POST /v1/chat/completions HTTP/1.0\r\n" + headers + b"\r\n"
            )
            assert answer.startswith((b"HTTP/1.0 411 ", b"HTTP/1.0 400 ")), answer
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        upstream.shutdown()
        upstream.server_close()
