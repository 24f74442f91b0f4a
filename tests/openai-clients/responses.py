"""The official `openai` Python package's Responses API (`client.responses`), unchanged,
against Tessera's `/openai/v1/responses`.

Same environment as check.py (OPENAI_BASE_URL, OPENAI_API_KEY, TESSERA_MODEL, SSL_CERT_FILE);
the key needs `chats:invoke`, `chats:read` and `chats:delete`. Each check runs through the
SDK's own request building, SSE parsing and pydantic models; a JSON summary goes to stdout
(the Rust test checks the stored chats against it), a failing check to stderr and exit 1.
The embedded model is tiny: the checks assert the protocol and shapes, not answer quality.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import openai
from openai import OpenAI

MAX_TOKENS = 24

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def usage_of(response, what: str) -> dict:
    usage = response.usage
    expect(usage is not None, f"{what}: no usage")
    expect(usage.input_tokens > 0, f"{what}: input_tokens = {usage.input_tokens}")
    expect(usage.output_tokens > 0, f"{what}: output_tokens = {usage.output_tokens}")
    expect(
        usage.total_tokens == usage.input_tokens + usage.output_tokens,
        f"{what}: total_tokens {usage.total_tokens} is not the sum",
    )
    expect(
        usage.output_tokens_details.reasoning_tokens == 0,
        f"{what}: reasoning tokens without reasoning",
    )
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}


def answered(response, what: str) -> None:
    expect(response.object == "response", f"{what}: object {response.object}")
    expect(response.id.startswith("resp_"), f"{what}: id {response.id}")
    expect(
        response.status in ("completed", "incomplete"),
        f"{what}: status {response.status} ({response.error})",
    )
    expect(bool(response.output_text), f"{what}: empty output_text ({response.output})")


def check_create(client: OpenAI, model: str) -> dict:
    response = client.responses.create(
        model=model,
        instructions="You are a helpful assistant.",
        input="Name three colours.",
        max_output_tokens=MAX_TOKENS,
        temperature=0,
    )
    answered(response, "create")
    expect(response.model == model, f"model {response.model}")
    return {"id": response.id, "text": response.output_text, "usage": usage_of(response, "create")}


def check_stream(client: OpenAI, model: str) -> dict:
    events = list(
        client.responses.create(
            model=model,
            input=[{"role": "user", "content": [{"type": "input_text", "text": "Say hello."}]}],
            max_output_tokens=MAX_TOKENS,
            temperature=0,
            stream=True,
        )
    )
    kinds = [event.type for event in events]
    expect(kinds[:2] == ["response.created", "response.in_progress"], f"first events {kinds[:2]}")
    expect(
        kinds[-1] in ("response.completed", "response.incomplete"), f"last event {kinds[-1]}"
    )
    expect(
        [event.sequence_number for event in events] == list(range(len(events))),
        "sequence numbers are not 0, 1, 2, …",
    )
    for kind in (
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
    ):
        expect(kind in kinds, f"no {kind} in {kinds}")
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    final = events[-1].response
    expect(deltas == final.output_text, f"deltas {deltas!r} != final {final.output_text!r}")
    done = next(event for event in events if event.type == "response.output_text.done")
    expect(done.text == deltas, "output_text.done is not the deltas")
    return {"id": final.id, "events": len(events), "usage": usage_of(final, "stream")}


def check_conversation(client: OpenAI, model: str) -> dict:
    first = client.responses.create(
        model=model, input="My name is Ada.", max_output_tokens=MAX_TOKENS, temperature=0
    )
    answered(first, "first turn")
    second = client.responses.create(
        model=model,
        previous_response_id=first.id,
        input="What is my name?",
        max_output_tokens=MAX_TOKENS,
        temperature=0,
    )
    answered(second, "second turn")
    expect(second.previous_response_id == first.id, f"previous {second.previous_response_id}")
    again = client.responses.retrieve(second.id)
    expect(again.id == second.id and again.status == second.status, f"retrieve: {again}")
    expect(again.output_text == second.output_text, "retrieve: another text")
    expect(again.previous_response_id == first.id, f"retrieve: previous {again.previous_response_id}")
    expect(again.usage.output_tokens == second.usage.output_tokens, "retrieve: other usage")
    items = client.responses.input_items.list(second.id)
    expect(len(items.data) == 1 and items.data[0].role == "user", f"input items {items.data}")
    expect(items.data[0].content[0].text == "What is my name?", f"input item {items.data[0]}")
    # Conversations do not branch: the first turn is no longer the latest.
    try:
        client.responses.create(
            model=model, previous_response_id=first.id, input="Again?", max_output_tokens=8
        )
        raise CheckFailed("continuing from an older response did not fail")
    except openai.ConflictError as error:
        expect(error.code == "conversation_moved_on", f"branch: code {error.code}")
    return {"first": first.id, "second": second.id}


def check_prefix_reuse(client: OpenAI, model: str) -> dict:
    """A conversation's next turn reuses its history's work: the embedded engine reports
    the reused input tokens in `usage.input_tokens_details.cached_tokens`."""
    instructions = (
        "You answer questions about mountains in one short sentence. Mention the country "
        "and the range the mountain belongs to, and never ask a question back."
    )
    first = client.responses.create(
        model=model,
        instructions=instructions,
        input="Which is the highest mountain in the Alps?",
        max_output_tokens=MAX_TOKENS,
        temperature=0,
    )
    answered(first, "first turn")
    # As OpenAI's clients do: the instructions again (they are not carried over there).
    second = client.responses.create(
        model=model,
        instructions=instructions,
        previous_response_id=first.id,
        input="And in the Andes?",
        max_output_tokens=MAX_TOKENS,
        temperature=0,
    )
    answered(second, "second turn")
    # Other instructions cannot change a conversation's.
    try:
        client.responses.create(
            model=model,
            instructions="Answer in French.",
            previous_response_id=second.id,
            input="And in the Rockies?",
            max_output_tokens=MAX_TOKENS,
        )
        raise CheckFailed("other instructions were accepted on a continuation")
    except openai.BadRequestError as error:
        expect(error.status_code == 400, f"other instructions: status {error.status_code}")
    cached = second.usage.input_tokens_details.cached_tokens
    expect(
        32 <= cached < second.usage.input_tokens,
        f"cached_tokens {cached} of {second.usage.input_tokens}: the first turn "
        f"({first.usage.input_tokens} tokens) was not reused",
    )
    return {
        "first_input_tokens": first.usage.input_tokens,
        "input_tokens": second.usage.input_tokens,
        "cached_tokens": cached,
    }


def check_tools(client: OpenAI, model: str) -> dict:
    first = client.responses.create(
        model=model,
        instructions="Use the get_weather tool to answer questions about the weather.",
        input="What is the weather in Paris?",
        tools=[WEATHER_TOOL],
        max_output_tokens=48,
        temperature=0,
    )
    calls = [item for item in first.output if item.type == "function_call"]
    expect(len(calls) >= 1, f"no function_call in {first.output}")
    call = calls[0]
    expect(call.name == "get_weather", f"tool name {call.name}")
    arguments = json.loads(call.arguments)
    expect(isinstance(arguments.get("city"), str), f"arguments {call.arguments}")
    final = client.responses.create(
        model=model,
        previous_response_id=first.id,
        input=[
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": json.dumps({"city": arguments["city"], "weather": "sunny, 21 °C"}),
            }
        ],
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_output_tokens=MAX_TOKENS,
        temperature=0,
    )
    answered(final, "after the tool")
    items = client.responses.input_items.list(final.id).data
    expect(
        [item.type for item in items] == ["function_call_output"] and items[0].call_id == call.call_id,
        f"input items {items}",
    )
    return {"call": call.arguments, "answer": final.output_text}


def check_json_schema(client: OpenAI, model: str) -> dict:
    schema = {
        "type": "object",
        "properties": {"colour": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["colour", "count"],
        "additionalProperties": False,
    }
    response = client.responses.create(
        model=model,
        input="Give a colour and a count.",
        text={"format": {"type": "json_schema", "name": "pick", "schema": schema, "strict": True}},
        max_output_tokens=48,
        temperature=0,
    )
    answered(response, "json_schema")
    value = json.loads(response.output_text)
    expect(isinstance(value.get("colour"), str) and isinstance(value.get("count"), int), f"{value}")
    return {"value": value}


def check_background(client: OpenAI, model: str) -> dict:
    queued = client.responses.create(
        model=model, input="Count to five.", max_output_tokens=MAX_TOKENS, background=True
    )
    expect(queued.status == "queued", f"status {queued.status}")
    # Resume its event stream after the first three events (live while it runs, replayed
    # from the stored answer once it is done).
    events = list(client.responses.retrieve(queued.id, stream=True, starting_after=2))
    numbers = [event.sequence_number for event in events]
    expect(numbers == list(range(3, 3 + len(events))), f"resumed sequence numbers {numbers}")
    expect(
        events[-1].type in ("response.completed", "response.incomplete"),
        f"resumed stream ends with {events[-1].type}",
    )
    deadline = time.monotonic() + 120
    polled = queued
    while polled.status in ("queued", "in_progress"):
        expect(time.monotonic() < deadline, "the background response never finished")
        time.sleep(0.2)
        polled = client.responses.retrieve(queued.id)
    answered(polled, "background")
    return {"id": polled.id, "usage": usage_of(polled, "background")}


def check_cancel(client: OpenAI, model: str) -> dict:
    queued = client.responses.create(
        model=model,
        input="Count from one to two hundred, one number per line.",
        max_output_tokens=400,
        temperature=0,
        background=True,
    )
    cancelled = client.responses.cancel(queued.id)
    expect(cancelled.status == "cancelled", f"cancel: status {cancelled.status}")
    again = client.responses.retrieve(queued.id)
    expect(again.status == "cancelled", f"after cancel: status {again.status}")
    try:
        client.responses.cancel(queued.id)
        raise CheckFailed("a cancelled response was cancelled again")
    except openai.BadRequestError as error:
        expect(error.code == "response_finished", f"cancel again: code {error.code}")
    return {"id": queued.id}


def check_delete(client: OpenAI, model: str) -> dict:
    response = client.responses.create(model=model, input="Bye.", max_output_tokens=8)
    deleted = client.responses.delete(response.id)
    expect(deleted is None or getattr(deleted, "deleted", True), f"delete: {deleted}")
    try:
        client.responses.retrieve(response.id)
        raise CheckFailed("a deleted response is still there")
    except openai.NotFoundError:
        pass
    unstored = client.responses.create(model=model, input="Forget this.", store=False, max_output_tokens=8)
    answered(unstored, "store=false")
    try:
        client.responses.retrieve(unstored.id)
        raise CheckFailed("a response with store=false was kept")
    except openai.NotFoundError:
        pass
    try:
        client.responses.create(
            model=model, previous_response_id=unstored.id, input="And?", max_output_tokens=8
        )
        raise CheckFailed("a response with store=false was continued")
    except openai.NotFoundError as error:
        expect(error.code == "previous_response_not_found", f"continue unstored: code {error.code}")
    return {"deleted": response.id, "unstored": unstored.id}


def main() -> None:
    client = OpenAI(
        base_url=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
        max_retries=0,
        timeout=300,
    )
    model = os.environ["TESSERA_MODEL"]
    checks = {
        "create": check_create,
        "stream": check_stream,
        "conversation": check_conversation,
        "prefix_reuse": check_prefix_reuse,
        "tools": check_tools,
        "json_schema": check_json_schema,
        "background": check_background,
        "cancel": check_cancel,
        "delete": check_delete,
    }
    summary = {"client": "openai-python responses", "version": openai.__version__}
    failures = []
    for name, check in checks.items():
        try:
            summary[name] = check(client, model)
        except Exception as error:  # noqa: BLE001 — every failure is reported
            detail = (
                f"{type(error).__name__}: {error}"
                if isinstance(error, CheckFailed)
                else traceback.format_exc()
            )
            if isinstance(error, openai.APIStatusError):
                detail += f"\nstatus {error.status_code}, body {json.dumps(error.body)}"
            failures.append(name)
            summary[name] = {"error": str(error)}
            sys.stderr.write(f"responses check `{name}` failed: {detail}\n")
    print(json.dumps(summary, indent=2, default=str))
    if failures:
        sys.stderr.write(f"responses: {len(failures)} check(s) failed: {', '.join(failures)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
