"""The LLM client and its command-line flags, against the scripted OpenAI-compatible server on
loopback (agentless_adapter.scripted_server): answers, errors, replay, and the key never shown."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from blagent import InputError, LlmClient, LlmError
from blagent.cli import build_parser, llm_config
from conftest import schema_validator

from agentless_adapter.scripted_server import ScriptedServer, start_scripted

KEY = "sk-python-test-secret-42"
MESSAGES = json.dumps(
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Which file?"}]
)


@pytest.fixture
def scripted() -> Iterator[tuple[ScriptedServer, str]]:
    server, url = start_scripted()
    yield server, url
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def no_llm_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BLAGENT_LLM_BASE_URL", "BLAGENT_LLM_MODEL", "BLAGENT_LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def client(**config: Any) -> LlmClient:
    return LlmClient(json.dumps(config))


def test_chat_returns_content_and_usage_and_sends_the_key(
    scripted: tuple[ScriptedServer, str],
) -> None:
    server, url = scripted
    llm = client(base_url=url, model="coder", api_key=KEY, seed=3)
    assert llm.enabled and llm.name == "http:coder"
    response = json.loads(llm.chat(MESSAGES, "t0"))
    assert response["content"] == "```\n```"
    assert response["finish_reason"] == "stop"
    assert response["usage"]["estimated"] is False and response["usage"]["prompt_tokens"] == 2
    usage = json.loads(llm.usage_json())
    assert usage["stages"]["t0"]["calls"] == 1 and usage["total"]["prompt_tokens"] == 2
    assert usage["total"]["cost_usd"] is None, "an unknown model has no price"
    assert server.requests[-1]["authorization"] == f"Bearer {KEY}"
    assert server.requests[-1]["path"] == "/v1/chat/completions"
    config = llm.config_json()
    assert KEY not in config and "<redacted>" in config
    assert json.loads(config)["base_url"] == url


def test_base_url_without_v1_and_no_key_header(scripted: tuple[ScriptedServer, str]) -> None:
    server, url = scripted
    llm = client(base_url=url.removesuffix("/v1"), model="coder")
    json.loads(llm.chat(MESSAGES, "t0"))
    assert server.requests[-1]["path"] == "/v1/chat/completions"
    assert server.requests[-1]["authorization"] is None


def test_environment_supplies_endpoint_and_key(
    scripted: tuple[ScriptedServer, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, url = scripted
    monkeypatch.setenv("BLAGENT_LLM_BASE_URL", url)
    monkeypatch.setenv("BLAGENT_LLM_MODEL", "from-env")
    monkeypatch.setenv("BLAGENT_LLM_API_KEY", KEY)
    llm = client()
    assert llm.name == "http:from-env"
    llm.chat(MESSAGES, "t0")
    assert server.requests[-1]["model"] == "from-env"
    assert server.requests[-1]["authorization"] == f"Bearer {KEY}"


def test_errors_are_llm_errors_within_bounded_time(scripted: tuple[ScriptedServer, str]) -> None:
    _, url = scripted
    with pytest.raises(LlmError, match="400"):
        client(base_url=url, model="error-400").chat(MESSAGES, "t0")
    started = time.monotonic()
    with pytest.raises(LlmError, match=r"gave up after 2 attempt\(s\).*500"):
        client(base_url=url, model="error-500", max_retries=1, backoff_base_ms=10).chat(
            MESSAGES, "t0"
        )
    assert time.monotonic() - started < 5

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    started = time.monotonic()
    with pytest.raises(LlmError, match="cannot connect"):
        client(base_url=dead, model="m", max_retries=1, backoff_base_ms=10).chat(MESSAGES, "t0")
    assert time.monotonic() - started < 5


def test_llm_free_and_invalid_configurations() -> None:
    llm = client()
    assert not llm.enabled and llm.name == "none"
    with pytest.raises(LlmError, match="no LLM configured"):
        llm.chat(MESSAGES, "t0")
    for bad, match in [
        ({"base_url": "localhost:8000", "model": "m"}, "base URL"),
        ({"base_url": "http://h:1"}, "model name"),
        ({"temperature": 9}, "temperature"),
        ({"max_retries": "many"}, "invalid LLM configuration"),
    ]:
        with pytest.raises(InputError, match=match):
            client(**bad)
    with pytest.raises(InputError, match="invalid messages"):
        llm.chat("[{}]", "t0")
    # Found by a review: serde read a struct from a list, so `[]` passed as no LLM, and an
    # empty list of messages was sent.
    with pytest.raises(InputError, match="expected a JSON object, found an array"):
        LlmClient("[]")
    with pytest.raises(InputError, match="invalid messages: no message"):
        llm.chat("[]", "t0")
    with pytest.raises(InputError, match="invalid messages: expected a JSON object"):
        llm.chat('[["user", "hi"]]', "t0")
    # Found by a review: a message that repeats a key was read as its last value.
    with pytest.raises(InputError, match="invalid messages: duplicate key `content`"):
        llm.chat('[{"role": "user", "content": "a", "content": "b"}]', "t0")


def test_a_struct_inside_a_configuration_is_an_object_too(tmp_path: Path) -> None:
    # Found by a review: serde read a struct nested in a JSON input from a list of its
    # fields' values, so a price file's `[2.0, 8.0]` priced a model.
    prices = tmp_path / "prices.json"
    prices.write_text('{"models": {"mine": [2.0, 8.0]}}')
    with pytest.raises(InputError, match=r"ModelPrice: .* an array \(at models\.mine\)"):
        client(base_url="http://127.0.0.1:9/v1", model="mine", prices=str(prices))
    prices.write_text('{"models": {"mine": {"prompt": 2.0, "completion": 8.0}}}')
    assert client(base_url="http://127.0.0.1:9/v1", model="mine", prices=str(prices)).enabled


def test_recorded_exchanges_replay_identically(
    scripted: tuple[ScriptedServer, str], tmp_path: Path
) -> None:
    server, url = scripted
    cassette = tmp_path / "cassette.jsonl"
    recording = client(base_url=url, model="coder", record=str(cassette))
    first = [recording.chat(MESSAGES, stage) for stage in ("t0", "phase1")]
    asked = len(server.requests)
    replaying = client(replay=str(cassette))
    assert replaying.name == "replay:coder"
    assert [replaying.chat(MESSAGES, stage) for stage in ("t0", "phase1")] == first
    assert json.loads(replaying.usage_json()) == json.loads(recording.usage_json())
    assert len(server.requests) == asked
    with pytest.raises(LlmError, match="stage t1"):
        replaying.chat(json.dumps([{"role": "user", "content": "new"}]), "t1")


def test_replay_with_an_endpoint_asks_only_what_is_not_recorded(
    scripted: tuple[ScriptedServer, str], tmp_path: Path
) -> None:
    server, url = scripted
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    recorded = client(base_url=url, model="coder", record=str(old)).chat(MESSAGES, "t0")
    asked = len(server.requests)
    mixed = client(base_url=url, model="coder", replay=str(old), record=str(new))
    assert mixed.chat(MESSAGES, "t0") == recorded and len(server.requests) == asked
    other = json.dumps([{"role": "user", "content": "Which function?"}])
    answer = mixed.chat(other, "t1")
    assert len(server.requests) == asked + 1
    del mixed
    again = client(replay=str(new))
    assert [again.chat(MESSAGES, "t0"), again.chat(other, "t1")] == [recorded, answer]
    with pytest.raises(InputError, match="two cassettes"):
        client(base_url=url, model="coder", replay=str(old), record=str(old))


def test_cli_flags_become_a_config() -> None:
    args = build_parser().parse_args(
        ["batch", "--dataset", "d", "--repos", "r", "--out", "o",
         "--llm-base-url", "http://h:1", "--llm-model", "m", "--llm-temperature", "0.2",
         "--llm-seed", "7", "--llm-timeout", "30", "--llm-max-retries", "2",
         "--llm-concurrency", "8", "--llm-record", "c.jsonl", "--llm-prices", "p.json"]
    )  # fmt: skip
    assert llm_config(args) == {
        "base_url": "http://h:1",
        "model": "m",
        "temperature": 0.2,
        "seed": 7,
        "request_timeout_s": 30.0,
        "max_retries": 2,
        "max_concurrency": 8,
        "record": "c.jsonl",
        "prices": "p.json",
    }
    for command in (["localize", "--repo", "x"], ["eval", "--dataset", "d", "--repos", "r"]):
        args = build_parser().parse_args([*command, "--llm-replay", "run.jsonl"])
        assert llm_config(args) == {"replay": "run.jsonl"}
    assert llm_config(build_parser().parse_args(["localize", "--repo", "x"])) == {}


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BLAGENT_LLM_")}
    return subprocess.run(
        [sys.executable, "-m", "blagent", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


def test_llm_check_never_prints_the_key(scripted: tuple[ScriptedServer, str]) -> None:
    server, url = scripted
    by_flag = run_cli(
        "llm-check", "--llm-base-url", url, "--llm-model", "coder", "--llm-api-key", KEY
    )
    assert by_flag.returncode == 0, by_flag.stderr
    report = json.loads(by_flag.stdout)
    assert report["model"] == "http:coder" and report["reply"] == "```\n```"
    assert report["usage"]["calls"] == 1
    by_env = run_cli(
        "llm-check",
        env={"BLAGENT_LLM_BASE_URL": url, "BLAGENT_LLM_MODEL": "coder", "BLAGENT_LLM_API_KEY": KEY},
    )
    assert by_env.returncode == 0, by_env.stderr
    failing = run_cli(
        "llm-check", "--llm-base-url", url, "--llm-model", "error-401", "--llm-api-key", KEY
    )
    assert failing.returncode == 3 and "401" in failing.stderr
    for proc in (by_flag, by_env, failing):
        assert KEY not in proc.stdout + proc.stderr
    assert [r["authorization"] for r in server.requests] == [f"Bearer {KEY}"] * 3


def test_a_key_that_is_not_utf8_is_refused_and_never_shown(
    scripted: tuple[ScriptedServer, str],
) -> None:
    """Found by a review: a key given as a flag that was not UTF-8 was quoted in the message
    refusing it; given by the environment it was read as unset, and every request went out
    without one. A key of another JSON type was quoted too."""
    server, url = scripted
    odd = os.fsdecode(KEY.encode() + b"\xff")
    by_flag = run_cli(
        "llm-check", "--llm-base-url", url, "--llm-model", "coder", "--llm-api-key", odd
    )
    by_env = run_cli(
        "llm-check",
        env={"BLAGENT_LLM_BASE_URL": url, "BLAGENT_LLM_MODEL": "coder", "BLAGENT_LLM_API_KEY": odd},
    )
    for proc, what in ((by_flag, "--llm-api-key"), (by_env, "BLAGENT_LLM_API_KEY")):
        assert proc.returncode == 1 and what in proc.stderr, proc.stderr
        assert "not UTF-8" in proc.stderr and KEY not in proc.stdout + proc.stderr
    assert server.requests == []
    mistyped = run_cli("llm-check", f"--llm-apikey={KEY}", "--llm-model", "coder", "stray")
    assert mistyped.returncode == 2 and "--llm-apikey (values not shown)" in mistyped.stderr
    assert KEY not in mistyped.stdout + mistyped.stderr and "stray" not in mistyped.stderr
    with pytest.raises(InputError, match="value not shown") as refused:
        LlmClient(json.dumps({"base_url": url, "model": "coder", "api_key": 12345678901234}))
    assert "12345678901234" not in str(refused.value)


def test_llm_check_without_an_llm_is_bad_input() -> None:
    proc = run_cli("llm-check")
    assert proc.returncode == 1 and "no LLM configured" in proc.stderr


def test_localize_sends_llm_pipelines_to_the_endpoint(
    repo: Path, scripted: tuple[ScriptedServer, str]
) -> None:
    server, url = scripted
    flags = ["--llm-base-url", url, "--llm-model", "coder", "--llm-api-key", KEY]
    fused = run_cli("localize", "--repo", str(repo), "--issue-text", "apply_discount fails", *flags)
    assert fused.returncode == 0, fused.stderr
    assert json.loads(fused.stdout)["files"] and server.requests == []
    proc = run_cli(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        "apply_discount fails",
        "--pipeline",
        "blagent",
        *flags,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["files"] and result["llm"]["calls"] > 0
    assert server.requests and all(r["authorization"] == f"Bearer {KEY}" for r in server.requests)
    assert KEY not in proc.stdout + proc.stderr
    bad = run_cli("localize", "--repo", str(repo), "--issue-text", "x", "--llm-base-url", "nope")
    assert bad.returncode == 1 and "base URL" in bad.stderr


def test_calibrate_writes_no_profile_for_a_model_that_shaped_nothing_and_eval_loads_one(
    repo: Path, scripted: tuple[ScriptedServer, str], tmp_path: Path
) -> None:
    """`blagent calibrate` over the loopback endpoint, whose answers name no file, so every
    stage falls back: every scale ranks alike, so no profile is written (exit 3) and a
    profile written before stays as it was (a review found a scale-0 profile written, turning
    the model off); `--folds 1` is refused before any request. A profile reads back in `eval
    --llm-profile`, and another model's run refuses it."""
    server, url = scripted
    trees = tmp_path / "trees"
    rows = []
    for i in range(3):
        shutil.copytree(repo, trees / f"shop-{i}")
        rows.append(
            {
                "instance_id": f"shop-{i}",
                "repo": "o/shop",
                "problem_statement": f"apply_discount is wrong ({i})",
                "gold_files": ["shop/pricing.py"],
            }
        )
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    profile = tmp_path / "profile.json"
    common = ["--dataset", str(data), "--repos", str(trees), "--llm-base-url", url, "--quiet"]
    calibrate = ["calibrate", *common, "--llm-model", "coder", "--out", str(profile)]
    proc = run_cli(*calibrate, "--folds", "3")
    assert proc.returncode == 3, proc.stderr
    assert "shaped none of the 3 rankings" in proc.stderr and "no profile written" in proc.stderr
    assert not profile.exists() and server.requests

    score = {"scale": 1.0, "mrr": 0.5, "acc1": 0.0}
    written = {
        "schema_version": "1",
        "model": "coder",
        "pipeline": "blagent",
        "weight_scale": 2.0,
        "fit": {
            "instances": 3,
            "folds": 3,
            "scales": [score],
            "chosen": score,
            "cross_validated": score,
            "retrieval_only": score,
            "default": score,
        },
    }
    profile.write_text(json.dumps(written, indent=2) + "\n")
    before = profile.read_bytes()
    again = run_cli(*calibrate)
    assert again.returncode == 3 and profile.read_bytes() == before, again.stderr
    asked = len(server.requests)
    one_fold = run_cli(*calibrate, "--folds", "1")
    assert one_fold.returncode == 1 and "at least 2 folds" in one_fold.stderr, one_fold.stderr
    assert len(server.requests) == asked and profile.read_bytes() == before

    used = run_cli(
        "eval",
        *common,
        "--llm-model",
        "coder",
        "--pipeline",
        "blagent",
        "--llm-profile",
        str(profile),
        "--format",
        "json",
        "--out",
        str(tmp_path / "llm_preds.jsonl"),
    )
    assert used.returncode == 0, used.stderr
    assert json.loads(used.stdout)["overall"]["instances"] == 3
    for line in (tmp_path / "llm_preds.jsonl").read_text().splitlines():
        pred = json.loads(line)
        schema_validator("eval-line").validate(pred)
        assert pred["llm"]["calls"] > 0, pred
    other = run_cli(
        "eval",
        *common,
        "--llm-model",
        "other",
        "--pipeline",
        "blagent",
        "--llm-profile",
        str(profile),
    )
    assert other.returncode == 1 and "fitted for model" in other.stderr
    # A cassette's model is the run's model when none is named: a profile of another is
    # refused as well (it used to be taken).
    cassette = tmp_path / "other.jsonl"
    recorded = run_cli(
        "eval", *common, "--llm-model", "other", "--pipeline", "blagent",
        "--llm-record", str(cassette),
    )  # fmt: skip
    assert recorded.returncode == 0, recorded.stderr
    replayed = ["--dataset", str(data), "--repos", str(trees), "--quiet", "--pipeline", "blagent"]
    replayed += ["--llm-replay", str(cassette), "--llm-profile", str(profile)]
    refused = run_cli("eval", *replayed)
    assert refused.returncode == 1 and 'this run\'s model is "other"' in refused.stderr, (
        refused.stderr
    )
    fused = run_cli(
        "calibrate", *common, "--llm-model", "coder", "--out", str(profile), "--pipeline", "fused"
    )
    assert fused.returncode == 1 and "LLM pipeline" in fused.stderr


# Paths holding a short URL password (`admin`) and a one-letter proxy password (`p`).
PATHS = "django/contrib/admin/options.py pkg/http_proxy.py"


class _Hostile(BaseHTTPRequestHandler):
    """A hostile endpoint, by model name: `dribble` sends a completion a byte every 0.2 s;
    `echo-NNN` answers status NNN with the request's Authorization header and the credentials
    it carries (a basic header decoded) echoed: in the completion's content for 200, in an
    OpenAI-style error otherwise; `paths` answers with PATHS."""

    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        model = str(request.get("model", ""))
        auth = self.headers.get("Authorization") or ""
        scheme, _, credentials = auth.partition(" ")
        decoded = base64.b64decode(credentials).decode() if scheme == "Basic" else credentials
        echoed = f"you sent {auth} ({decoded})"
        if model == "redirect" and (self.headers.get("Host") or "").startswith("127.0.0.1"):
            # Elsewhere (another origin: localhost), where the same prompt would be answered.
            port = self.server.server_address[1]
            self.send_response(307)
            self.send_header("Location", f"http://localhost:{port}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if model == "paths":
            body = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": PATHS}}]}
            ).encode()
            code = 200
        elif model in ("redirect", "terminal"):
            # The redirect followed, or an error body that would drive a terminal.
            code = 200 if model == "redirect" else 400
            reply = "followed" if model == "redirect" else "\x1b]0;PWNED\x07\x1b[2Jbad request"
            body = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": reply}}]}
                if code == 200
                else {"error": {"message": reply}}
            ).encode()
        elif model == "dribble":
            body = json.dumps(
                {
                    "choices": [
                        {
                            "message": {"role": "assistant", "content": "x" * 200},
                            "finish_reason": "stop",
                        }
                    ]
                }
            ).encode()
            code = 200
        elif model.startswith("echo-"):
            code = int(model[5:])
            if code == 200:
                body = json.dumps(
                    {
                        "choices": [
                            {
                                "message": {"role": "assistant", "content": echoed},
                                "finish_reason": "stop",
                            }
                        ]
                    }
                ).encode()
            else:
                body = json.dumps({"error": {"message": echoed, "type": "hostile"}}).encode()
        else:
            code, body = 404, b"{}"
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if model != "dribble":
                self.wfile.write(body)
                return
            for byte in body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass  # the client gave up


@pytest.fixture
def hostile() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    server.block_on_close = False
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_dribbled_body_is_bounded_by_the_llm_timeout(hostile: str) -> None:
    started = time.monotonic()
    proc = run_cli(
        "llm-check", "--llm-base-url", hostile, "--llm-model", "dribble", "--llm-timeout", "2"
    )
    took = time.monotonic() - started
    assert proc.returncode == 3, proc.stderr
    assert "request timeout of 2 s" in proc.stderr and "not retried" in proc.stderr, proc.stderr
    assert took < 10, took


def _forms(secret: str) -> list[str]:
    """The secret as written, URL-encoded and in every base64 alphabet, padded or not."""
    raw = secret.encode()
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return [
        secret,
        urllib.parse.quote(secret, safe=""),
        *encoded,
        *(e.rstrip("=") for e in encoded),
    ]


def test_echoed_secrets_never_show_in_any_form(hostile: str, tmp_path: Path) -> None:
    password = "hunter2/x y"
    with_password = hostile.replace(
        "http://", f"http://alice:{urllib.parse.quote(password, safe='')}@"
    )
    secrets = [*_forms(password), *_forms(f"alice:{password}"), *_forms(KEY)]
    cassette = tmp_path / "c.jsonl"
    runs = [
        run_cli("llm-check", "--llm-base-url", with_password, "--llm-model", "echo-401"),
        run_cli(
            "llm-check",
            "--llm-base-url",
            with_password,
            "--llm-model",
            "echo-200",
            "--llm-record",
            str(cassette),
        ),
        run_cli(
            "llm-check", "--llm-base-url", hostile, "--llm-model", "echo-200", "--llm-api-key", KEY
        ),
        run_cli(
            "llm-check",
            "--llm-base-url",
            hostile,
            "--llm-model",
            "echo-500",
            "--llm-api-key",
            KEY,
            "--llm-max-retries",
            "0",
        ),
    ]
    assert [proc.returncode for proc in runs] == [3, 0, 0, 3], [proc.stderr for proc in runs]
    assert "401" in runs[0].stderr and "<redacted>" in runs[0].stderr, runs[0].stderr
    assert json.loads(runs[1].stdout)["reply"] == "you sent Basic <redacted> (<redacted>)"
    assert json.loads(runs[2].stdout)["reply"] == "you sent Bearer <redacted> (<redacted>)"
    recorded = cassette.read_text()
    assert "<redacted>" in recorded
    for text in [recorded, *(proc.stdout + proc.stderr for proc in runs)]:
        for form in secrets:
            assert form not in text, (form, text)


def test_a_token_given_as_the_url_user_never_shows(hostile: str, tmp_path: Path) -> None:
    token = "sk-USERTOKEN123"
    url = hostile.replace("http://", f"http://{token}@")
    cassette = tmp_path / "c.jsonl"
    runs = [
        run_cli("llm-check", "--llm-base-url", url, "--llm-model", "echo-401"),
        run_cli(
            "llm-check", "--llm-base-url", url, "--llm-model", "echo-200",
            "--llm-record", str(cassette),
        ),
    ]  # fmt: skip
    assert [proc.returncode for proc in runs] == [3, 0], [proc.stderr for proc in runs]
    assert json.loads(runs[1].stdout)["reply"] == "you sent Basic <redacted> (<redacted>)"
    for text in [cassette.read_text(), *(proc.stdout + proc.stderr for proc in runs)]:
        for form in [*_forms(token), *_forms(f"{token}:")]:
            assert form not in text, (form, text)


def test_short_url_and_proxy_passwords_leave_answers_alone(hostile: str) -> None:
    """Found by a review: with `http://admin:admin@host` every `admin` of an answer became
    `<redacted>` (its paths then dropped), and a proxy password `p` replaced every `p`. Such
    short credentials stay out of errors but are not replaced in answers."""
    url = hostile.replace("http://", "http://admin:admin@")
    proxy = {"HTTP_PROXY": "http://me:p@proxy.invalid:3128", "NO_PROXY": "127.0.0.1"}
    answered = run_cli("llm-check", "--llm-base-url", url, "--llm-model", "paths", env=proxy)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["reply"] == PATHS
    failed = run_cli("llm-check", "--llm-base-url", url, "--llm-model", "echo-401", env=proxy)
    assert failed.returncode == 3 and "401" in failed.stderr, failed.stderr
    assert "admin" not in failed.stderr.lower() and "<redacted>" in failed.stderr, failed.stderr


def test_credentials_outside_ascii_are_refused_unshown() -> None:
    proc = run_cli(
        "llm-check", "--llm-base-url", "http://alice:p%C3%A4ssw%C3%B6rd@127.0.0.1:9/v1",
        "--llm-model", "m",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    assert "printable ASCII" in proc.stderr, proc.stderr
    assert "%C3" not in proc.stderr and "alice" not in proc.stderr, proc.stderr


def test_a_redirect_to_another_origin_is_not_followed(hostile: str) -> None:
    proc = run_cli("llm-check", "--llm-base-url", hostile, "--llm-model", "redirect")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "307" in proc.stderr and "followed" not in proc.stdout + proc.stderr, proc.stderr


def test_a_fallback_warning_cannot_drive_the_terminal(repo: Path, hostile: str) -> None:
    proc = run_cli(
        "localize", "--repo", str(repo), "--issue-text", "apply_discount fails",
        "--pipeline", "blagent", "--llm-base-url", hostile, "--llm-model", "terminal",
        "--llm-max-retries", "0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "fell back to retrieval" in proc.stderr and "PWNED" in proc.stderr, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr, proc.stderr


def test_llm_options_are_checked_by_range(repo: Path) -> None:
    base = [
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        "apply_discount fails",
        "--pipeline",
        "blagent",
    ]
    for option, name in [
        ("model_weight=-1", "model_weight"),
        # Past f32's range: named as written, not as `inf` (found by a review).
        ("model_weight=1e39", "model_weight: 1e39 is out of range"),
        ("max_steps=0", "max_steps"),
    ]:
        proc = run_cli(*base, "--llm-option", option)
        assert proc.returncode == 1 and name in proc.stderr, (option, proc.stderr)


def test_calibrate_without_an_llm_is_bad_input(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    shutil.copytree(repo, trees / "shop-1")
    data = tmp_path / "data.jsonl"
    row = {
        "instance_id": "shop-1",
        "repo": "o/shop",
        "problem_statement": "apply_discount",
        "gold_files": ["shop/pricing.py"],
    }
    data.write_text(json.dumps(row) + "\n")
    profile = tmp_path / "profile.json"
    proc = run_cli(
        "calibrate", "--dataset", str(data), "--repos", str(trees), "--out", str(profile), "--quiet"
    )
    assert proc.returncode == 1 and "calibrate needs a model" in proc.stderr, proc.stderr
    assert not profile.exists()


def test_missing_llm_inputs_are_bad_input(repo: Path, tmp_path: Path) -> None:
    proc = run_cli("llm-check", "--llm-replay", str(tmp_path / "absent.jsonl"))
    assert proc.returncode == 1 and "does not exist" in proc.stderr, proc.stderr
    # Found by a review: a FIFO named as the prompts folder was said not to exist.
    os.mkfifo(tmp_path / "fifo")
    for name, why in [("none", "prompts folder"), ("fifo", "is a FIFO, not a folder")]:
        proc = run_cli(
            "localize",
            "--repo",
            str(repo),
            "--issue-text",
            "x",
            "--pipeline",
            "blagent",
            "--prompts-dir",
            str(tmp_path / name),
        )
        assert proc.returncode == 1 and why in proc.stderr, proc.stderr
