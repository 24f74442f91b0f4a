"""LangChain's `ChatOpenAI` (the `langchain-openai` package), unchanged, against Tessera's
`/openai/v1`: tools bound with a tool choice (`bind_tools(..., tool_choice=...)`: `required`,
`any`, a tool's name, OpenAI's named form) and `with_structured_output(...,
method="function_calling")`, which forces a call of its schema's function.

Reads OPENAI_BASE_URL, OPENAI_API_KEY and TESSERA_MODEL (trust the server's certificate with
SSL_CERT_FILE), and TESSERA_REMOTE_MODEL when the server has a model of a remote provider
(every check runs on it too); prints a JSON summary on stdout and exits 1 with the failing
checks on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import langchain_openai
import pydantic
from langchain_openai import ChatOpenAI

QUESTION = "What is the weather in Paris?"


class GetWeather(pydantic.BaseModel):
    """The current weather in a city."""

    city: str


class GetTime(pydantic.BaseModel):
    """The current time in a time zone."""

    zone: str


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        sys.stderr.write(f"langchain check: {name} is not set\n")
        sys.exit(2)
    return value


def the_call(message, what: str, names: tuple[str, ...]) -> dict:
    calls = message.tool_calls
    expect(
        len(calls) >= 1,
        f"{what}: no tool call (content {message.content!r}, "
        f"metadata {message.response_metadata!r}, extra {message.additional_kwargs!r})",
    )
    call = calls[0]
    expect(call["name"] in names, f"{what}: called {call['name']}")
    expect(isinstance(call["args"], dict), f"{what}: args {call['args']!r}")
    expect(
        message.response_metadata.get("finish_reason") == "tool_calls",
        f"{what}: finish_reason {message.response_metadata.get('finish_reason')}",
    )
    return {"name": call["name"], "args": call["args"]}


def check_model(llm: ChatOpenAI) -> dict:
    tools = [GetWeather, GetTime]
    both = ("GetWeather", "GetTime")
    seen = {}
    for choice in ("required", "any"):
        message = llm.bind_tools(tools, tool_choice=choice).invoke(QUESTION)
        seen[choice] = the_call(message, choice, both)
    for label, choice in (
        ("by name", "GetTime"),
        ("openai form", {"type": "function", "function": {"name": "GetTime"}}),
    ):
        message = llm.bind_tools(tools, tool_choice=choice).invoke(QUESTION)
        call = the_call(message, label, ("GetTime",))
        expect(isinstance(call["args"].get("zone"), str), f"{label}: args {call['args']!r}")
        seen[label] = call
    structured = llm.with_structured_output(GetTime, method="function_calling").invoke(
        "What time is it in Tokyo?"
    )
    expect(isinstance(structured, GetTime), f"structured output: {structured!r}")
    seen["structured output"] = structured.model_dump()
    return seen


def main() -> None:
    base_url = env("OPENAI_BASE_URL")
    api_key = env("OPENAI_API_KEY")
    models = {"embedded": env("TESSERA_MODEL")}
    if os.environ.get("TESSERA_REMOTE_MODEL"):
        models["remote"] = os.environ["TESSERA_REMOTE_MODEL"]
    summary = {"client": "langchain-openai", "version": langchain_openai.__version__}
    failures = []
    for label, model in models.items():
        # No retries: a failure is reported as the server answered it. The pydantic tools'
        # schemas state no `additionalProperties` and no `maxLength`: a call must still
        # finish well within 64 tokens (issue 61).
        llm = ChatOpenAI(
            model=model, base_url=base_url, api_key=api_key, temperature=0, max_tokens=64,
            max_retries=0, timeout=300,
        )
        try:
            summary[label] = check_model(llm)
        except Exception as error:  # noqa: BLE001 — every failure is reported
            detail = (
                f"{type(error).__name__}: {error}"
                if isinstance(error, CheckFailed)
                else traceback.format_exc()
            )
            failures.append(label)
            summary[label] = {"error": str(error)}
            sys.stderr.write(f"langchain check `{label}` failed: {detail}\n")
    print(json.dumps(summary, indent=2, default=str))
    if failures:
        sys.stderr.write(f"langchain: {len(failures)} check(s) failed: {', '.join(failures)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
