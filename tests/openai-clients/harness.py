"""What the `openai` package's check scripts share: a failed check, and the entry point that
runs a script's checks with one client, prints their JSON summary on stdout, or the failure
(with the API's status and body when the API refused) on stderr and exits 1."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Callable

import openai
from openai import OpenAI


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def report(what: str, run: Callable[[OpenAI], dict]) -> None:
    """Runs `run` with a client configured from the environment (OPENAI_BASE_URL,
    OPENAI_API_KEY) and reports as the module docstring says."""
    client = OpenAI()
    try:
        summary = run(client)
    except Exception as error:  # noqa: BLE001 — every failure is reported
        detail = traceback.format_exc()
        if isinstance(error, openai.APIStatusError):
            detail += f"\nstatus {error.status_code}, body {json.dumps(error.body)}"
        sys.stderr.write(f"openai-python {what} failed: {detail}\n")
        sys.exit(1)
    print(json.dumps(summary, indent=2, default=str))
