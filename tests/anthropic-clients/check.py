"""The official `anthropic` Python package, unchanged, against Tessera's `/anthropic/v1`.

Reads ANTHROPIC_BASE_URL (the server's `/anthropic`), ANTHROPIC_API_KEY (a `tsk_…` key, which
the SDK sends as `x-api-key`) and TESSERA_MODEL (trust the server's certificate with
SSL_CERT_FILE), runs each check through the SDK's own request building, response parsing
and stream accumulation (messages, the stream helper and raw events, tools, token counts,
models, typed errors), prints a JSON summary on stdout and exits 1 with the failing checks
on stderr.

The embedded model is tiny: the checks assert the protocol and the shapes (non-empty text,
stop reasons, usage, tool calls whose input parses), not answer quality.

Usage: SSL_CERT_FILE=cert.pem ANTHROPIC_BASE_URL=https://localhost:8443/anthropic \
    ANTHROPIC_API_KEY=tsk_… TESSERA_MODEL=local/smollm2-135m-instruct python check.py
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import anthropic
from anthropic import Anthropic

MAX_TOKENS = 16
QUESTION = {"role": "user", "content": "What is the capital of France?"}
WEATHER = {
    "name": "get_weather",
    "description": "The current weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city"}},
        "required": ["city"],
    },
}


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        sys.stderr.write(f"anthropic-python check: {name} is not set\n")
        sys.exit(2)
    return value


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def usage_of(usage, what: str) -> dict:
    expect(usage.input_tokens + (usage.cache_read_input_tokens or 0) > 0, f"{what}: no input tokens: {usage}")
    expect(usage.output_tokens > 0, f"{what}: no output tokens: {usage}")
    return {
        "input_tokens": usage.input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
    }


def check_create(client: Anthropic, model: str) -> dict:
    message = client.messages.create(
        model=model,
        max_tokens=MAX_TOKENS,
        system="Answer in one short sentence.",
        messages=[QUESTION],
    )
    expect(message.type == "message" and message.role == "assistant", f"shape: {message}")
    expect(message.id.startswith("msg_"), f"id: {message.id}")
    expect(message.model == model, f"model: {message.model}")
    expect(len(message.content) == 1 and message.content[0].type == "text", f"content: {message.content}")
    expect(bool(message.content[0].text), "empty text")
    expect(message.stop_reason in ("end_turn", "max_tokens"), f"stop_reason: {message.stop_reason}")
    return {
        "text": message.content[0].text,
        "stop_reason": message.stop_reason,
        "usage": usage_of(message.usage, "create"),
    }


def check_stream(client: Anthropic, model: str) -> dict:
    # The SDK's stream helper: text as it comes, then the message it accumulated.
    with client.messages.stream(model=model, max_tokens=MAX_TOKENS, messages=[QUESTION]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    expect(bool(text), "no text streamed")
    expect(final.content[0].type == "text" and final.content[0].text == text, f"final: {final}")
    expect(final.stop_reason in ("end_turn", "max_tokens"), f"stop_reason: {final.stop_reason}")
    usage = usage_of(final.usage, "stream")
    # The raw events, in Anthropic's order.
    events = [
        event.type
        for event in client.messages.create(
            model=model, max_tokens=4, messages=[QUESTION], stream=True
        )
    ]
    expect(events[0] == "message_start" and events[-1] == "message_stop", f"events: {events}")
    expect("content_block_delta" in events and "message_delta" in events, f"events: {events}")
    return {"text": text, "usage": usage, "events": events}


def check_tools(client: Anthropic, model: str) -> dict:
    first = client.messages.create(
        model=model,
        max_tokens=40,
        tools=[WEATHER],
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=[{"role": "user", "content": "What is the weather in Paris?"}],
    )
    expect(first.stop_reason == "tool_use", f"stop_reason: {first.stop_reason}")
    calls = [block for block in first.content if block.type == "tool_use"]
    expect(len(calls) >= 1, f"no tool_use block: {first.content}")
    call = calls[0]
    expect(call.name == "get_weather", f"name: {call.name}")
    expect(isinstance(call.input, dict) and isinstance(call.input.get("city"), str), f"input: {call.input}")
    # The result goes back as the SDK's own blocks; the model answers in text.
    second = client.messages.create(
        model=model,
        max_tokens=MAX_TOKENS,
        tools=[WEATHER],
        messages=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"role": "assistant", "content": first.content},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "Sunny, 21 C"}],
            },
        ],
    )
    expect(second.content and second.content[0].type == "text", f"answer: {second.content}")
    # Streamed, the helper accumulates the call's input from its JSON pieces.
    with client.messages.stream(
        model=model,
        max_tokens=40,
        tools=[WEATHER],
        tool_choice={"type": "any"},
        messages=[{"role": "user", "content": "What is the weather in Oslo?"}],
    ) as stream:
        streamed = stream.get_final_message()
    streamed_calls = [block for block in streamed.content if block.type == "tool_use"]
    expect(len(streamed_calls) >= 1, f"no streamed tool_use: {streamed.content}")
    expect(isinstance(streamed_calls[0].input.get("city"), str), f"streamed input: {streamed_calls[0].input}")
    return {
        "call": {"name": call.name, "input": call.input},
        "answer": second.content[0].text,
        "streamed": streamed_calls[0].input,
    }


def check_count_tokens(client: Anthropic, model: str) -> dict:
    plain = client.messages.count_tokens(model=model, messages=[QUESTION])
    expect(plain.input_tokens > 0, f"count_tokens: {plain}")
    with_tools = client.messages.count_tokens(model=model, messages=[QUESTION], tools=[WEATHER])
    expect(with_tools.input_tokens > plain.input_tokens, f"tools not counted: {with_tools} vs {plain}")
    return {"plain": plain.input_tokens, "with_tools": with_tools.input_tokens}


def check_models(client: Anthropic, model: str) -> dict:
    ids = [m.id for m in client.models.list()]
    expect(model in ids, f"models.list() lacks {model}: {ids}")
    # Catalog ids hold a slash, which the SDK percent-encodes in the path.
    one = client.models.retrieve(model)
    expect(one.id == model and one.type == "model" and one.display_name, f"models.retrieve: {one}")
    return {"ids": ids, "display_name": one.display_name}


def check_errors(client: Anthropic, model: str) -> dict:
    """The SDK's typed errors from Anthropic-shaped answers (no generation runs)."""
    seen = {}
    bad_key = client.with_options(api_key="tsk_" + "0" * 43)
    try:
        bad_key.models.list()
        raise CheckFailed("an unknown key was accepted")
    except anthropic.AuthenticationError as error:
        expect(error.status_code == 401, f"unknown key: status {error.status_code}")
        seen["unknown_key"] = {"status": error.status_code, "type": error.body["error"]["type"]}
    try:
        client.messages.create(model=model, max_tokens=0, messages=[QUESTION])
        raise CheckFailed("max_tokens=0 was accepted")
    except anthropic.BadRequestError as error:
        expect("max_tokens" in str(error.body), f"max_tokens=0: body {error.body}")
        seen["max_tokens"] = {"status": error.status_code, "type": error.body["error"]["type"]}
    try:
        client.messages.create(model="claude-no-such-model", max_tokens=4, messages=[QUESTION])
        raise CheckFailed("an unknown model was accepted")
    except anthropic.NotFoundError as error:
        expect(error.body["error"]["type"] == "not_found_error", f"unknown model: body {error.body}")
        seen["unknown_model"] = {"status": error.status_code, "type": error.body["error"]["type"]}
    return seen


def main() -> None:
    base_url = env("ANTHROPIC_BASE_URL")
    api_key = env("ANTHROPIC_API_KEY")
    model = env("TESSERA_MODEL")
    # No retries: a failure is reported as the server answered it.
    client = Anthropic(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    checks = {
        "create": lambda: check_create(client, model),
        "stream": lambda: check_stream(client, model),
        "tools": lambda: check_tools(client, model),
        "count_tokens": lambda: check_count_tokens(client, model),
        "models": lambda: check_models(client, model),
        "errors": lambda: check_errors(client, model),
    }
    summary = {"client": "anthropic-python", "version": anthropic.__version__}
    failures = []
    for name, run in checks.items():
        try:
            summary[name] = run()
        except Exception as error:  # noqa: BLE001 — every failure is reported
            failures.append(name)
            sys.stderr.write(f"check {name} failed: {error}\n{traceback.format_exc()}\n")
    print(json.dumps(summary, indent=2, default=str))
    if failures:
        sys.stderr.write(f"failed checks: {', '.join(failures)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
