"""Issue 66's policies through the official `openai` package and LangChain's `ChatOpenAI`,
both unchanged, against Tessera's `/openai/v1`: what a guardrail policy, a response cache
and a key's limits do reaches them as ordinary answers and ordinary errors.

The server is set up beforehand (`apps/api/tests/api/policy_clients.rs`): the organization's
guardrail policy blocks emails (rule `emails`) and pseudonymises phone numbers (rule
`phones`) in input; TESSERA_CACHED_MODEL has a response cache policy; TESSERA_ECHO_MODEL and
TESSERA_CACHED_MODEL are served by an upstream answering `answer <n>: <the question>` to its
`n`th request (and costing credits, where the embedded TESSERA_MODEL costs none);
TESSERA_LIMITED_KEY may use TESSERA_MODEL only; TESSERA_BUDGET_KEY has a budget of one
credit a day, unspent.

- Guardrails: an email is a `BadRequestError` (400, `invalid_value`, the message's
  parameter, a message naming the rule and never the value), streamed or not, and the same
  error through LangChain; a phone number comes back restored in an ordinary answer, though
  the provider only read its placeholder, streamed or not, through both clients.
- Response cache: the same request twice gives the same `ChatCompletion`, the second with
  `x-cache: hit` (read with `with_raw_response`), a hit streams ordinary chunks, and
  `Cache-Control: no-cache` asks the model again (`x-cache: miss`, a new answer); LangChain's
  `invoke` twice gives the same content, its second response's headers saying `hit`.
- Limits: the allow-listed key lists and uses only its model, another model is a
  `PermissionDeniedError` (403, `model_not_allowed`); the budgeted key's one completion (of
  the echo model) spends its budget and the next is a `RateLimitError` (429,
  `insufficient_quota`), through both clients.

Reads OPENAI_BASE_URL, OPENAI_API_KEY (a key with `models:read chats:invoke`), the keys and
models above (trust the server's certificate with SSL_CERT_FILE); prints a JSON summary on
stdout and exits 1 with the failing check on stderr.
"""

from __future__ import annotations

import os
import time

import langchain_openai
import openai
from langchain_openai import ChatOpenAI
from openai import OpenAI

from harness import CheckFailed, expect, report

EMAIL = "jane.doe@example.org"
EMAIL_QUESTION = f"Please write to {EMAIL} about the invoice."
PHONE = "+1 415 555 2671"
PHONE_QUESTION = f"Call me back at {PHONE} tomorrow."
# What the dialect answers for a refused message (a validation problem's 400): the
# parameter, then the refusal, naming the rule and the kind of what it found.
BLOCKED = "the input was blocked by guardrail rule `emails` (email)"


def blocked(error: openai.BadRequestError, param: str, what: str) -> dict:
    """The email's refusal, as OpenAI reports an invalid parameter."""
    body = error.body
    expect(error.status_code == 400, f"{what}: status {error.status_code}")
    expect(error.type == "invalid_request_error", f"{what}: type {error.type!r}, {body}")
    expect(error.code == "invalid_value", f"{what}: code {error.code!r}, {body}")
    expect(error.param == param, f"{what}: param {error.param!r}, {body}")
    expect(
        isinstance(body, dict) and body.get("message") == f"{param}: {BLOCKED}",
        f"{what}: message {body}",
    )
    expect(EMAIL not in str(error), f"{what}: the refusal shows the value: {error}")
    return {"code": error.code, "param": error.param, "message": body["message"]}


def restored(content: str | None, what: str) -> str:
    """An echo of PHONE_QUESTION with the phone number put back (the provider read
    `⟦PHONE_1⟧`)."""
    expect(content is not None, f"{what}: no content")
    prefix, _, echoed = (content or "").partition(": ")
    expect(prefix.startswith("answer "), f"{what}: {content!r}")
    expect(echoed == PHONE_QUESTION, f"{what}: not restored: {content!r}")
    return content or ""


def check_guardrails(client: OpenAI, llm, model: str, echo: str) -> dict:
    seen: dict = {}
    for label, stream in (("blocked", False), ("blocked streamed", True)):
        try:
            client.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": EMAIL_QUESTION}],
                max_tokens=8,
                stream=stream,
            )
            raise CheckFailed(f"{label}: an email passed")
        except openai.BadRequestError as error:
            seen[label] = blocked(error, "messages.0.content", label)
    try:
        # The second message: the refusal says which.
        llm(echo).invoke([("system", "Be brief."), ("human", EMAIL_QUESTION)])
        raise CheckFailed("LangChain: an email passed")
    except openai.BadRequestError as error:
        seen["langchain blocked"] = blocked(error, "messages.1.content", "LangChain")
        seen["langchain blocked"]["exception"] = type(error).__name__

    completion = client.chat.completions.create(
        model=echo, messages=[{"role": "user", "content": PHONE_QUESTION}], max_tokens=64
    )
    expect(completion.object == "chat.completion", f"{completion}")
    expect(completion.choices[0].finish_reason == "stop", f"{completion}")
    seen["restored"] = restored(completion.choices[0].message.content, "create")
    stream = client.chat.completions.create(
        model=echo,
        messages=[{"role": "user", "content": PHONE_QUESTION}],
        max_tokens=64,
        stream=True,
    )
    text, finish = "", None
    for chunk in stream:
        expect(chunk.object == "chat.completion.chunk", f"{chunk}")
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    expect(finish == "stop", f"stream finish_reason {finish}")
    seen["restored streamed"] = restored(text, "stream")
    seen["langchain restored"] = restored(llm(echo).invoke(PHONE_QUESTION).content, "invoke")
    streamed = "".join(str(chunk.content) for chunk in llm(echo).stream(PHONE_QUESTION))
    seen["langchain restored streamed"] = restored(streamed, "LangChain stream")
    return seen


def check_cache(client: OpenAI, llm, cached: str) -> dict:
    x_cache: list[str] = []

    def ask(stream: bool = False, **options):
        raw = client.chat.completions.with_raw_response.create(
            model=cached,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            max_tokens=32,
            temperature=0,
            stream=stream,
            **options,
        )
        x_cache.append(raw.headers.get("x-cache"))
        return raw.parse()

    def content(completion, what: str) -> str:
        expect(completion.object == "chat.completion", f"{what}: {completion}")
        choice = completion.choices[0]
        expect(choice.finish_reason == "stop", f"{what}: {completion}")
        expect(completion.usage is not None and completion.usage.total_tokens > 0, what)
        return choice.message.content or ""

    first = content(ask(), "first")
    second = content(ask(), "second")
    expect(x_cache == ["miss", "hit"], f"x-cache {x_cache}")
    expect(second == first and first.startswith("answer "), f"{first!r} then {second!r}")

    # A hit, streamed: ordinary chunks the SDK parses, the same answer.
    text, finish, usage = "", None, None
    for chunk in ask(stream=True, stream_options={"include_usage": True}):
        expect(chunk.object == "chat.completion.chunk", f"{chunk}")
        usage = chunk.usage or usage
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
    expect(x_cache[-1] == "hit", f"streamed: x-cache {x_cache}")
    expect((text, finish) == (first, "stop"), f"streamed hit: {text!r}, {finish}")
    expect(usage is not None and usage.total_tokens > 0, f"streamed hit: usage {usage}")

    # `no-cache` asks the model (a new answer, kept in place of the first).
    fresh = content(ask(extra_headers={"Cache-Control": "no-cache"}), "no-cache")
    expect(x_cache[-1] == "miss" and fresh != first, f"no-cache: {x_cache}, {fresh!r}")
    again = content(ask(), "after no-cache")
    expect(x_cache[-1] == "hit" and again == fresh, f"after no-cache: {x_cache}, {again!r}")

    # LangChain: `invoke` twice, the same content; its response headers say where from.
    chat = llm(cached, include_response_headers=True)
    question = "How many legs does a spider have?"
    answers = [chat.invoke(question) for _ in range(2)]
    headers = [answer.response_metadata.get("headers", {}) for answer in answers]
    x_cache += [h.get("x-cache") for h in headers]
    expect(
        [h.get("x-cache") for h in headers] == ["miss", "hit"],
        f"LangChain x-cache {[h.get('x-cache') for h in headers]}",
    )
    expect(
        answers[0].content == answers[1].content and str(answers[0].content).startswith("answer "),
        f"LangChain: {answers[0].content!r} then {answers[1].content!r}",
    )
    # Streamed: the headers come with the first chunk.
    chunks = list(chat.stream(question))
    streamed = "".join(str(chunk.content) for chunk in chunks)
    x_cache.append(chunks[0].response_metadata.get("headers", {}).get("x-cache"))
    expect(x_cache[-1] == "hit", f"LangChain stream: x-cache {x_cache}")
    expect(streamed == answers[0].content, f"LangChain stream: {streamed!r}")
    return {
        "x_cache": x_cache,
        "first": first,
        "no-cache": fresh,
        "langchain": answers[0].content,
    }


def check_limits(base_url: str, llm, model: str, echo: str) -> dict:
    seen: dict = {}
    limited = OpenAI(base_url=base_url, api_key=os.environ["TESSERA_LIMITED_KEY"])
    ids = [m.id for m in limited.models.list()]
    expect(ids == [model], f"the allow-listed key lists {ids}")
    try:
        limited.models.retrieve(echo)
        raise CheckFailed(f"the allow-listed key retrieved {echo}")
    except openai.NotFoundError as error:
        expect(error.code == "model_not_found", f"retrieve: {error.body}")

    def not_allowed(error: openai.PermissionDeniedError, what: str) -> dict:
        expect(error.status_code == 403, f"{what}: status {error.status_code}")
        expect(error.type == "permission_error", f"{what}: {error.body}")
        expect(error.code == "model_not_allowed", f"{what}: {error.body}")
        expect(f"may not use model {echo}" in error.message, f"{what}: {error.message}")
        return {"code": error.code, "message": error.body["message"]}

    try:
        limited.chat.completions.create(
            model=echo, messages=[{"role": "user", "content": "Hi"}], max_tokens=2
        )
        raise CheckFailed(f"the allow-listed key used {echo}")
    except openai.PermissionDeniedError as error:
        seen["not allowed"] = not_allowed(error, "create")
    try:
        llm(echo, api_key=os.environ["TESSERA_LIMITED_KEY"]).invoke("Hi")
        raise CheckFailed(f"LangChain: the allow-listed key used {echo}")
    except openai.PermissionDeniedError as error:
        seen["langchain not allowed"] = not_allowed(error, "LangChain")
    allowed = limited.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=2, temperature=0
    )
    expect(allowed.object == "chat.completion" and allowed.model == model, f"{allowed}")
    seen["allowed"] = allowed.choices[0].message.content

    # The budget is spent on the echo model (the embedded one costs no credits). The `openai`
    # package retries a 429 twice by default, with backoff, before raising it; a real client
    # would, and get the same error after the retries (the budget renews at the period's
    # end). No retries here, so the error is the first answer's.
    budget_key = os.environ["TESSERA_BUDGET_KEY"]
    budgeted = OpenAI(base_url=base_url, api_key=budget_key, max_retries=0)
    spent = budgeted.chat.completions.create(
        model=echo, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, temperature=0
    )
    expect(spent.usage is not None and spent.usage.total_tokens > 1, f"{spent}")

    def insufficient(error: openai.RateLimitError, what: str) -> dict:
        expect(error.status_code == 429, f"{what}: status {error.status_code}")
        expect(error.type == "insufficient_quota", f"{what}: {error.body}")
        expect(error.code == "insufficient_quota", f"{what}: {error.body}")
        return {"code": error.code, "message": error.body["message"]}

    try:
        budgeted.chat.completions.create(
            model=echo, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
        )
        raise CheckFailed("the spent budget let a completion through")
    except openai.RateLimitError as error:
        seen["budget spent"] = insufficient(error, "create")
    try:
        llm(echo, api_key=budget_key).invoke("Hi")
        raise CheckFailed("LangChain: the spent budget let a completion through")
    except openai.RateLimitError as error:
        seen["langchain budget spent"] = insufficient(error, "LangChain")
    # The default client, retrying: the same error, later.
    started = time.monotonic()
    try:
        OpenAI(base_url=base_url, api_key=budget_key).chat.completions.create(
            model=echo, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
        )
        raise CheckFailed("retried: the spent budget let a completion through")
    except openai.RateLimitError as error:
        seen["retried budget spent"] = insufficient(error, "retried")
        seen["retried budget spent"]["seconds"] = round(time.monotonic() - started, 2)
    return seen


def run(client: OpenAI) -> dict:
    base_url = os.environ["OPENAI_BASE_URL"]
    model = os.environ["TESSERA_MODEL"]

    def llm(name: str, **options) -> ChatOpenAI:
        # No retries: each error is reported as the server answered it.
        options.setdefault("api_key", os.environ["OPENAI_API_KEY"])
        return ChatOpenAI(
            model=name,
            base_url=base_url,
            max_tokens=64,
            temperature=0,
            max_retries=0,
            timeout=120,
            **options,
        )

    return {
        "client": "openai-python",
        "versions": {
            "openai": openai.__version__,
            "langchain-openai": langchain_openai.__version__,
        },
        "guardrails": check_guardrails(client, llm, model, os.environ["TESSERA_ECHO_MODEL"]),
        "cache": check_cache(client, llm, os.environ["TESSERA_CACHED_MODEL"]),
        "limits": check_limits(base_url, llm, model, os.environ["TESSERA_ECHO_MODEL"]),
    }


if __name__ == "__main__":
    report("policy", run)
