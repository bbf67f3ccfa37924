"""The command line's LLM flags: the `--llm-*` endpoint flags (built from the core's list,
`_core.LLM_CONFIG_FLAGS`, which holds their names, types and defaults), and the pipeline
options of `--prompts-dir`, `--llm-profile` and `--llm-option KEY=VALUE`."""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any, Callable

from . import _core, _io

LLM_HELP = (
    "LLM endpoint (any OpenAI-compatible /v1/chat/completions: Ollama, vLLM, llama.cpp, OpenAI). "
    "Unset, the base URL, model and key come from BLAGENT_LLM_BASE_URL, BLAGENT_LLM_MODEL and "
    "BLAGENT_LLM_API_KEY; without an endpoint or a replay cassette blagent runs LLM-free."
)

#: Each flag: {"flag", "key", "kind", "metavar", "help"} (see rust/blagent-core/src/llm/flags.rs).
CONFIG_FLAGS: list[dict[str, str]] = json.loads(_core.LLM_CONFIG_FLAGS)

#: The `LlmConfig` fields that the environment sets where the flags leave them unset, and the
#: variable of each (`LlmConfig::fill_from`).
ENVIRONMENT = {
    "base_url": "BLAGENT_LLM_BASE_URL",
    "model": "BLAGENT_LLM_MODEL",
    "api_key": "BLAGENT_LLM_API_KEY",
}

#: The largest count or seed a flag takes (the core reads them as 32-bit or wider).
MAX_INT = 2**32 - 1


def bounded_int(text: str, least: int) -> int:
    """A flag's whole number, from `least` to `MAX_INT`."""
    value = int(text)
    if not least <= value <= MAX_INT:
        raise argparse.ArgumentTypeError(f"must be from {least} to {MAX_INT}: {text}")
    return value


def _finite_float(text: str) -> float:
    """A flag's number of at least 0 (a temperature, seconds)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0: {text}")
    return value


def _seconds(text: str) -> float:
    """A flag's time limit: above 0, at most the core's `MAX_TIMEOUT_S` (a day)."""
    value = float(text)
    if not (math.isfinite(value) and 0 < value <= _core.MAX_TIMEOUT_S):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds above 0, at most {_core.MAX_TIMEOUT_S:g}: {text}"
        )
    return value


_KINDS: dict[str, Callable[[str], Any]] = {
    "str": str,
    "path": str,
    "float": _finite_float,
    "seconds": _seconds,
    "int": lambda text: bounded_int(text, 0),
}


def add_llm_flags(parser: argparse.ArgumentParser) -> None:
    """Adds the `--llm-*` endpoint flags to a command."""
    group = parser.add_argument_group("LLM endpoint", LLM_HELP)
    for f in CONFIG_FLAGS:
        group.add_argument(
            f"--llm-{f['flag']}",
            dest=f"llm_{f['key']}",
            type=_KINDS[f["kind"]],
            default=None,
            help=f["help"],
            metavar=f["metavar"],
        )


def add_pipeline_flags(group: argparse._ArgumentGroup) -> None:
    """Adds the LLM pipeline option flags to a command's group."""
    group.add_argument(
        "--prompts-dir", help="folder of prompt overrides (<name>.md) for the LLM pipelines"
    )
    group.add_argument(
        "--llm-profile",
        metavar="FILE",
        help="the model's calibrated trust (written by `blagent calibrate`); without one the model's "
        "order weighs as much as retrieval's at most",
    )
    group.add_argument(
        "--llm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set an LLM pipeline option (max_steps, max_retries, phase1_budget_tokens, model_weight, ...); "
        "VALUE is read as JSON when it parses, else as text; repeatable",
    )


def llm_config(args: argparse.Namespace) -> dict[str, Any]:
    """The `LlmConfig` JSON object of the `--llm-*` flags given (the core fills the rest from
    the environment and defaults)."""
    config = {}
    for f in CONFIG_FLAGS:
        value = getattr(args, f"llm_{f['key']}", None)
        if value is not None:
            config[f["key"]] = value
    return config


def with_environment(config: dict[str, Any]) -> dict[str, Any]:
    """`config` completed from this process's environment as the core completes it
    (`LlmConfig::fill_from`: a field unset, or a model left empty, takes its variable when that
    is not blank), so that a process that reads another environment (a Ray worker) gets the
    configuration this one would use."""
    for key, name in ENVIRONMENT.items():
        unset = not config.get(key) if key == "model" else config.get(key) is None
        value = os.environ.get(name, "")
        if unset and value.strip():
            config[key] = value
    return config


def llm_client(args: argparse.Namespace) -> _core.LlmClient:
    """The validated LLM client of the `--llm-*` flags and the environment."""
    return _core.LlmClient(json.dumps(llm_config(args)))


def check_llm_flags(args: argparse.Namespace) -> None:
    """Refuses a bad `--llm-*` configuration as bad input before a run starts, without opening
    the `--llm-record` cassette: the run opens it once it knows what it reads (a cassette
    inside the trees is refused there, and nothing is created)."""
    config = {key: value for key, value in llm_config(args).items() if key != "record"}
    _core.LlmClient(json.dumps(config))


def llm_options(args: argparse.Namespace) -> dict[str, Any]:
    """The LLM pipeline options of `--prompts-dir`, `--llm-profile` and `--llm-option KEY=VALUE`."""
    options: dict[str, Any] = {}
    if getattr(args, "prompts_dir", None):
        options["prompts_dir"] = args.prompts_dir
    if getattr(args, "llm_profile", None):
        options["profile"] = args.llm_profile
    for item in getattr(args, "llm_option", []):
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise _core.InputError(f"--llm-option wants KEY=VALUE, got {item!r}")
        try:
            options[key.strip()] = json.loads(text)
        except (ValueError, RecursionError):  # not JSON (or too long a number): the text itself
            options[key.strip()] = text
    return options


def llm_options_json(args: argparse.Namespace) -> str | None:
    """`llm_options` as JSON, or None when no option was given."""
    options = llm_options(args)
    return _io.json_text(options, "--llm-option") if options else None
