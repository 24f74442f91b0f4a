"""The official `openai` Python package, unchanged, against Tessera's `/openai/v1`.

Reads OPENAI_BASE_URL, OPENAI_API_KEY, TESSERA_MODEL and TESSERA_EMBEDDING_MODEL (trust the
server's certificate with SSL_CERT_FILE), runs each check through the SDK's own request
building and response parsing (pydantic models), prints a JSON summary on stdout and exits 1
with the failing check on stderr.

The embedded model is tiny: the checks assert the protocol and the shapes (non-empty content,
finish reasons, usage, tool calls and structured answers that parse), not answer quality.

Usage: SSL_CERT_FILE=cert.pem OPENAI_BASE_URL=https://localhost:8443/openai/v1 \
    OPENAI_API_KEY=tsk_… TESSERA_MODEL=local/smollm2-135m-instruct \
    TESSERA_EMBEDDING_MODEL=all-MiniLM-L6-v2 python check.py
"""

from __future__ import annotations

import base64
import json
import math
import os
import struct
import sys
import traceback

import openai
import pydantic
from openai import OpenAI

MAX_TOKENS = 24


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        sys.stderr.write(f"openai-python check: {name} is not set\n")
        sys.exit(2)
    return value


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def usage_counts(usage, what: str) -> dict:
    expect(usage is not None, f"{what}: no usage")
    expect(usage.prompt_tokens > 0, f"{what}: prompt_tokens = {usage.prompt_tokens}")
    expect(
        usage.completion_tokens > 0,
        f"{what}: completion_tokens = {usage.completion_tokens}",
    )
    expect(
        usage.total_tokens == usage.prompt_tokens + usage.completion_tokens,
        f"{what}: total_tokens {usage.total_tokens} is not the sum",
    )
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def check_models(client: OpenAI, model: str, embedding_model: str) -> dict:
    ids = [m.id for m in client.models.list()]
    expect(model in ids, f"models.list() lacks {model}: {ids}")
    expect(embedding_model in ids, f"models.list() lacks {embedding_model}: {ids}")
    one = client.models.retrieve(model)
    expect(one.id == model and one.object == "model", f"models.retrieve: {one}")
    try:
        client.models.retrieve("no-such-model")
        raise CheckFailed("models.retrieve('no-such-model') did not fail")
    except openai.NotFoundError as error:
        expect(
            error.code == "model_not_found",
            f"unknown model: code {error.code!r}, body {error.body}",
        )
    return {"ids": ids}


def check_create(client: OpenAI, model: str) -> dict:
    completion = client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Name three colours."},
        ],
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    expect(completion.object == "chat.completion", f"object {completion.object}")
    expect(completion.id.startswith("chatcmpl-"), f"id {completion.id}")
    expect(len(completion.choices) == 1, f"{len(completion.choices)} choices")
    choice = completion.choices[0]
    expect(choice.message.role == "assistant", f"role {choice.message.role}")
    expect(bool(choice.message.content), "empty content")
    expect(
        choice.finish_reason in ("stop", "length"),
        f"finish_reason {choice.finish_reason}",
    )
    return {
        "content": choice.message.content,
        "finish_reason": choice.finish_reason,
        "usage": usage_counts(completion.usage, "create"),
    }


def check_stream(client: OpenAI, model: str) -> dict:
    stream = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "Say hello."}],
        max_completion_tokens=MAX_TOKENS,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    expect(len(chunks) >= 3, f"{len(chunks)} chunks")
    for chunk in chunks:
        expect(chunk.object == "chat.completion.chunk", f"chunk object {chunk.object}")
    text = "".join(
        chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices
    )
    expect(text != "", "no content in the stream")
    finishes = [
        chunk.choices[0].finish_reason
        for chunk in chunks
        if chunk.choices and chunk.choices[0].finish_reason
    ]
    expect(len(finishes) == 1, f"finish reasons {finishes}")
    expect(finishes[0] in ("stop", "length"), f"finish_reason {finishes[0]}")
    last = chunks[-1]
    expect(last.choices == [], f"the last chunk has choices: {last}")
    for chunk in chunks[:-1]:
        expect(chunk.usage is None, f"usage before the last chunk: {chunk}")
    return {
        "chunks": len(chunks),
        "content": text,
        "finish_reason": finishes[0],
        "usage": usage_counts(last.usage, "stream"),
    }


def check_prefix_reuse(client: OpenAI, model: str) -> dict:
    """A conversation's next turn reuses its history's work: the embedded engine reports
    the reused prompt tokens in `usage.prompt_tokens_details.cached_tokens`."""
    history = [
        {
            "role": "system",
            "content": "You answer questions about rivers in one short sentence. Mention the "
            "continent and the sea the river flows into, and never ask a question back.",
        },
        {"role": "user", "content": "Which is the longest river in Europe?"},
    ]
    first = client.chat.completions.create(
        model=model, messages=history, max_completion_tokens=MAX_TOKENS, temperature=0
    )
    history.append({"role": "assistant", "content": first.choices[0].message.content})
    history.append({"role": "user", "content": "And in Africa?"})
    second = client.chat.completions.create(
        model=model,
        messages=history,
        max_completion_tokens=MAX_TOKENS,
        temperature=0,
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = list(second)[-1].usage
    expect(usage is not None, "no usage in the stream's last chunk")
    details = usage.prompt_tokens_details
    expect(details is not None, f"no prompt_tokens_details: {usage}")
    cached = details.cached_tokens
    expect(
        cached is not None and 32 <= cached < usage.prompt_tokens,
        f"cached_tokens {cached} of {usage.prompt_tokens}: the first turn "
        f"({first.usage.prompt_tokens} tokens) was not reused",
    )
    return {
        "first_prompt_tokens": first.usage.prompt_tokens,
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": cached,
    }


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


def check_tools(client: OpenAI, model: str) -> dict:
    messages = [
        {
            "role": "system",
            "content": "Use the get_weather tool to answer questions about the weather.",
        },
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    first = client.chat.completions.create(
        model=model,
        messages=messages,
        tools=[WEATHER_TOOL],
        max_tokens=48,
        temperature=0,
    )
    choice = first.choices[0]
    expect(
        choice.finish_reason == "tool_calls",
        f"finish_reason {choice.finish_reason} (content {choice.message.content!r})",
    )
    calls = choice.message.tool_calls or []
    expect(len(calls) >= 1, "no tool_calls")
    call = calls[0]
    expect(call.type == "function", f"tool call type {call.type}")
    expect(call.function.name == "get_weather", f"tool name {call.function.name}")
    expect(bool(call.id), "tool call without id")
    arguments = json.loads(call.function.arguments)
    expect(
        isinstance(arguments, dict) and isinstance(arguments.get("city"), str),
        f"arguments {call.function.arguments}",
    )
    usage_counts(first.usage, "tool call")
    # The assistant message as the SDK parsed it, then the tool's answer.
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append(
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": json.dumps({"city": arguments["city"], "weather": "sunny, 21 °C"}),
        }
    )
    final = client.chat.completions.create(
        model=model,
        messages=messages,
        tools=[WEATHER_TOOL],
        tool_choice="none",
        max_tokens=MAX_TOKENS,
        temperature=0,
    )
    answer = final.choices[0]
    expect(bool(answer.message.content), "empty final answer")
    expect(answer.finish_reason in ("stop", "length"), f"final finish_reason {answer.finish_reason}")
    return {
        "tool_call": {"name": call.function.name, "arguments": arguments},
        "answer": answer.message.content,
        "usage": usage_counts(final.usage, "tool answer"),
    }


class City(pydantic.BaseModel):
    name: str
    country: str


def check_parse(client: OpenAI, model: str) -> dict:
    completion = client.chat.completions.parse(
        model=model,
        messages=[{"role": "user", "content": "Give a city and its country as JSON."}],
        response_format=City,
        max_tokens=64,
        temperature=0,
    )
    choice = completion.choices[0]
    expect(
        choice.finish_reason == "stop",
        f"finish_reason {choice.finish_reason} (content {choice.message.content!r})",
    )
    parsed = choice.message.parsed
    expect(isinstance(parsed, City), f"parsed {parsed!r}")
    return {"parsed": parsed.model_dump(), "usage": usage_counts(completion.usage, "parse")}


TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The current time in a time zone.",
        "parameters": {
            "type": "object",
            "properties": {"zone": {"type": "string"}},
            "required": ["zone"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}


class GetTime(pydantic.BaseModel):
    """The current time in a time zone."""

    zone: str


def forced_call(completion, what: str, names: tuple[str, ...]):
    choice = completion.choices[0]
    expect(
        choice.finish_reason == "tool_calls",
        f"{what}: finish_reason {choice.finish_reason} (content {choice.message.content!r})",
    )
    calls = choice.message.tool_calls or []
    expect(len(calls) >= 1, f"{what}: no tool_calls")
    expect(calls[0].function.name in names, f"{what}: called {calls[0].function.name}")
    arguments = json.loads(calls[0].function.arguments)
    expect(isinstance(arguments, dict), f"{what}: arguments {calls[0].function.arguments}")
    return calls[0]


def check_tool_choice(client: OpenAI, model: str) -> dict:
    """`tool_choice` `required` and a named function force a call; a pydantic tool named
    by `tool_choice` is parsed by `.parse` (issue 61)."""
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    tools = [WEATHER_TOOL, TIME_TOOL]
    required = client.chat.completions.create(
        model=model, messages=messages, tools=tools, tool_choice="required",
        max_tokens=64, temperature=0,
    )
    any_call = forced_call(required, "required", ("get_weather", "get_time"))
    named = client.chat.completions.create(
        model=model, messages=messages, tools=tools,
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=64, temperature=0,
    )
    time_call = forced_call(named, "named", ("get_time",))
    expect(
        isinstance(json.loads(time_call.function.arguments).get("zone"), str),
        f"named: arguments {time_call.function.arguments}",
    )
    parsed = client.chat.completions.parse(
        model=model, messages=messages, tools=[openai.pydantic_function_tool(GetTime)],
        tool_choice={"type": "function", "function": {"name": "GetTime"}},
        max_tokens=64, temperature=0,
    )
    parsed_call = forced_call(parsed, "parse", ("GetTime",))
    expect(
        isinstance(parsed_call.function.parsed_arguments, GetTime),
        f"parse: parsed_arguments {parsed_call.function.parsed_arguments!r}",
    )
    return {
        "required": any_call.function.name,
        "named": json.loads(time_call.function.arguments),
        "parsed": parsed_call.function.parsed_arguments.model_dump(),
    }


class Count(pydantic.BaseModel):
    answer: int
    unit: str


def check_length(client: OpenAI, model: str) -> dict:
    """A structured answer cut off by the token limit is a 200 with `finish_reason:
    length`, which `.parse` (both spellings) turns into the SDK's own LengthFinishReasonError;
    one request each, no retry (issue 61)."""
    messages = [{"role": "user", "content": "How many moons has Jupiter?"}]
    seen = {}
    parsers = {
        "beta.chat.completions.parse": client.beta.chat.completions.parse,
        "chat.completions.parse": client.chat.completions.parse,
    }
    for name, parse in parsers.items():
        try:
            parse(model=model, messages=messages, response_format=Count, max_tokens=4, temperature=0)
            raise CheckFailed(f"{name}: a cut-off answer parsed")
        except openai.LengthFinishReasonError as error:
            choice = error.completion.choices[0]
            expect(choice.finish_reason == "length", f"{name}: finish_reason {choice.finish_reason}")
            seen[name] = {
                "content": choice.message.content,
                "completion_tokens": error.completion.usage.completion_tokens,
            }
    try:
        client.chat.completions.parse(
            model=model, messages=messages, tools=[openai.pydantic_function_tool(GetTime)],
            tool_choice={"type": "function", "function": {"name": "GetTime"}},
            max_tokens=6, temperature=0,
        )
        raise CheckFailed("a cut-off tool call parsed")
    except openai.LengthFinishReasonError as error:
        seen["tool call"] = {"finish_reason": error.completion.choices[0].finish_reason}
    return seen


def check_embeddings(client: OpenAI, embedding_model: str) -> dict:
    texts = ["The cat sat on the mat.", "Tessera answers questions."]
    results = {}
    vectors = {}
    for encoding in ("float", "base64", None):
        if encoding is None:
            # The SDK's default asks for base64 and decodes it itself.
            response = client.embeddings.create(model=embedding_model, input=texts)
        else:
            response = client.embeddings.create(
                model=embedding_model, input=texts, encoding_format=encoding
            )
        label = encoding or "default"
        expect(len(response.data) == 2, f"{label}: {len(response.data)} embeddings")
        expect([d.index for d in response.data] == [0, 1], f"{label}: indexes")
        if encoding == "base64":
            # Asked explicitly, the SDK hands the base64 text over as is: decode it as
            # OpenAI documents it (little-endian float32), as the SDK does by default.
            for item in response.data:
                expect(isinstance(item.embedding, str), f"base64: embedding {type(item.embedding)}")
                raw = base64.b64decode(item.embedding)
                expect(len(raw) % 4 == 0, "base64: not a whole number of float32s")
                item.embedding = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        for item in response.data:
            expect(isinstance(item.embedding, list), f"{label}: embedding {type(item.embedding)}")
            expect(len(item.embedding) == 384, f"{label}: {len(item.embedding)} dimensions")
            expect(
                all(isinstance(x, float) and math.isfinite(x) for x in item.embedding),
                f"{label}: non-float values",
            )
        expect(response.usage.prompt_tokens > 0, f"{label}: prompt_tokens")
        vectors[label] = [item.embedding for item in response.data]
        results[label] = {
            "dimensions": len(response.data[0].embedding),
            "prompt_tokens": response.usage.prompt_tokens,
        }
    for label in ("base64", "default"):
        for a, b in zip(vectors["float"], vectors[label]):
            expect(
                max(abs(x - y) for x, y in zip(a, b)) < 1e-5,
                f"{label} vectors differ from the float ones",
            )
    one = client.embeddings.create(model=embedding_model, input="one text", encoding_format="float")
    expect(len(one.data) == 1, "a single string input")
    return results


def check_store(client: OpenAI, model: str) -> dict:
    # `store: true` keeps the exchange as a Tessera chat, named in `X-Chat-Id`.
    raw = client.chat.completions.with_raw_response.create(
        model=model,
        messages=[{"role": "user", "content": "Say hi."}],
        max_tokens=8,
        temperature=0,
        store=True,
    )
    completion = raw.parse()
    chat = raw.headers.get("x-chat-id")
    expect(bool(chat), f"no X-Chat-Id with store=True: {dict(raw.headers)}")
    expect(bool(completion.choices[0].message.content), "empty content with store=True")
    return {"chat_id": chat}


def check_errors(client: OpenAI, model: str) -> dict:
    """The SDK's typed errors from OpenAI-shaped answers (no generation runs)."""
    seen = {}
    bad_key = client.with_options(api_key="tsk_" + "0" * 43)
    try:
        bad_key.models.list()
        raise CheckFailed("an unknown key was accepted")
    except openai.AuthenticationError as error:
        expect(error.status_code == 401, f"unknown key: status {error.status_code}")
        expect(isinstance(error.body, dict) and "message" in error.body, f"unknown key: body {error.body}")
        seen["unknown_key"] = {"status": error.status_code, "code": error.code}
    try:
        client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}], n=2, max_tokens=4
        )
        raise CheckFailed("n=2 was accepted")
    except openai.BadRequestError as error:
        expect(error.param == "n", f"n=2: param {error.param!r}, body {error.body}")
        seen["n"] = {"status": error.status_code, "param": error.param, "code": error.code}
    try:
        client.chat.completions.create(
            model="no-such-model", messages=[{"role": "user", "content": "Hi"}], max_tokens=4
        )
        raise CheckFailed("an unknown model was accepted")
    except openai.NotFoundError as error:
        expect(error.code == "model_not_found", f"unknown model: code {error.code!r}, body {error.body}")
        seen["unknown_model"] = {"status": error.status_code, "code": error.code}
    return seen


def main() -> None:
    base_url = env("OPENAI_BASE_URL")
    api_key = env("OPENAI_API_KEY")
    model = env("TESSERA_MODEL")
    embedding_model = env("TESSERA_EMBEDDING_MODEL")
    # A model of a remote OpenAI-compatible provider, when the test serves one.
    remote_model = os.environ.get("TESSERA_REMOTE_MODEL")
    # No retries: a failure is reported as the server answered it.
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=300)
    checks = {
        "models": lambda: check_models(client, model, embedding_model),
        "create": lambda: check_create(client, model),
        "stream": lambda: check_stream(client, model),
        "prefix_reuse": lambda: check_prefix_reuse(client, model),
        "tools": lambda: check_tools(client, model),
        "parse": lambda: check_parse(client, model),
        "tool_choice": lambda: check_tool_choice(client, model),
        "length": lambda: check_length(client, model),
        "embeddings": lambda: check_embeddings(client, embedding_model),
        "store": lambda: check_store(client, model),
        "errors": lambda: check_errors(client, model),
    }
    if remote_model:
        checks["tool_choice_remote"] = lambda: check_tool_choice(client, remote_model)
    summary = {"client": "openai-python", "version": openai.__version__}
    failures = []
    for name, run in checks.items():
        try:
            summary[name] = run()
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
            sys.stderr.write(f"openai-python check `{name}` failed: {detail}\n")
    print(json.dumps(summary, indent=2, default=str))
    if failures:
        sys.stderr.write(f"openai-python: {len(failures)} check(s) failed: {', '.join(failures)}\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
