"""Batches through the official `openai` Python package, unchanged, against Tessera's
`/openai/v1`: a JSON-lines file uploaded with `purpose="batch"`, a chat completion batch
(one line naming an unknown model) polled with `batches.retrieve` until `completed`, its
counts, its output file (the answers, in input order) and its error file (the unknown
model's 404), an embeddings batch, `batches.list`, a batch cancelled at once, and the
errors OpenAI's clients raise (a window other than `24h`, an unknown batch).

Reads OPENAI_BASE_URL, TESSERA_MODEL, TESSERA_EMBEDDING_MODEL and OPENAI_API_KEY (a key with
the files and `chats:invoke chats:read` scopes; trust the server's certificate with
SSL_CERT_FILE), prints a JSON summary on stdout and exits 1 with the failing check on stderr.
"""

from __future__ import annotations

import json
import os
import time

import openai
from openai import OpenAI

from harness import CheckFailed, expect, report

TIMEOUT_SECS = 240
ACTIVE = ("validating", "in_progress", "finalizing", "cancelling")




def chat_line(custom_id: str, model: str, max_tokens: int = 4) -> dict:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {
            "model": model,
            "messages": [{"role": "user", "content": f"Say hello to {custom_id}."}],
            "max_tokens": max_tokens,
            "temperature": 0,
        },
    }


def embedding_line(custom_id: str, model: str, text: str) -> dict:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {"model": model, "input": text},
    }


def upload(client: OpenAI, name: str, lines: list[dict]):
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    file = client.files.create(file=(name, content), purpose="batch")
    expect(file.object == "file" and file.purpose == "batch", f"{file}")
    expect(file.bytes == len(content), f"{file}")
    return file


def wait_for(client: OpenAI, batch_id: str, status: str):
    """Polls the batch until it reaches `status`."""
    deadline = time.monotonic() + TIMEOUT_SECS
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status == status:
            return batch
        expect(batch.status in ACTIVE, f"batch ended {batch.status}, not {status}: {batch}")
        expect(time.monotonic() < deadline, f"still {batch.status} after {TIMEOUT_SECS} s: {batch}")
        time.sleep(0.3)


def lines_of(client: OpenAI, file_id: str) -> list[dict]:
    text = client.files.content(file_id).text
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def chat_batch(client: OpenAI, model: str) -> dict:
    requests = [
        chat_line("c0", model),
        chat_line("c1", model, max_tokens=3),
        chat_line("unknown-model", "local/no-such-model"),
        chat_line("c2", model, max_tokens=8),
    ]
    input_file = upload(client, "requests.jsonl", requests)
    batch = client.batches.create(
        input_file_id=input_file.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"job": "nightly", "owner": "python"},
    )
    expect(batch.object == "batch" and batch.id.startswith("batch_"), f"{batch}")
    expect(batch.status in ("validating", "in_progress"), f"{batch}")
    expect(batch.endpoint == "/v1/chat/completions" and batch.completion_window == "24h", f"{batch}")
    expect(batch.input_file_id == input_file.id, f"{batch}")
    expect(batch.metadata == {"job": "nightly", "owner": "python"}, f"{batch}")
    expect(batch.request_counts is not None and batch.request_counts.total == 4, f"{batch}")
    expect(batch.expires_at == batch.created_at + 24 * 3600, f"{batch}")

    done = wait_for(client, batch.id, "completed")
    counts = done.request_counts
    expect((counts.total, counts.completed, counts.failed) == (4, 3, 1), f"counts: {done}")
    expect(done.completed_at is not None and done.completed_at >= done.created_at, f"{done}")
    expect(done.in_progress_at is not None and done.finalizing_at is not None, f"{done}")
    expect(done.output_file_id and done.error_file_id, f"{done}")

    output = lines_of(client, done.output_file_id)
    ids = [line["custom_id"] for line in output]
    expect(ids == ["c0", "c1", "c2"], f"output custom ids: {ids}")
    for line in output:
        response = line["response"]
        expect(line.get("error") is None, f"{line}")
        expect(response["status_code"] == 200, f"{line}")
        body = response["body"]
        expect(body["object"] == "chat.completion" and body["model"] == model, f"{line}")
        expect(body["choices"] and isinstance(body["choices"][0]["message"]["content"], str), f"{line}")
    errors = lines_of(client, done.error_file_id)
    expect([line["custom_id"] for line in errors] == ["unknown-model"], f"error file: {errors}")
    refused = errors[0]["response"]
    expect(refused["status_code"] == 404, f"{errors[0]}")
    # The error the endpoint answers: `{"error": {"message", "type", "param", "code"}}`.
    error = refused["body"].get("error") or {}
    expect(error.get("code") == "model_not_found", f"not the endpoint's 404 body: {errors[0]}")
    expect(error.get("type") == "not_found_error", f"{errors[0]}")

    # Both files are the organization's, for batches' answers.
    output_file = client.files.retrieve(done.output_file_id)
    expect(output_file.purpose == "batch_output", f"{output_file}")
    return {
        "id": done.id,
        "request_counts": counts.model_dump(),
        "output": [line["response"]["body"]["choices"][0]["message"]["content"] for line in output],
        "error": error,
    }


def embedding_batch(client: OpenAI, model: str) -> dict:
    requests = [
        embedding_line("e0", model, "The Nile is a long river."),
        embedding_line("e1", model, "Sourdough needs a starter."),
    ]
    input_file = upload(client, "embeddings.jsonl", requests)
    batch = client.batches.create(
        input_file_id=input_file.id, endpoint="/v1/embeddings", completion_window="24h"
    )
    done = wait_for(client, batch.id, "completed")
    counts = done.request_counts
    expect((counts.total, counts.completed, counts.failed) == (2, 2, 0), f"counts: {done}")
    expect(done.error_file_id is None, f"no failures, no error file: {done}")
    output = lines_of(client, done.output_file_id)
    expect([line["custom_id"] for line in output] == ["e0", "e1"], f"{output}")
    dimensions = set()
    for line in output:
        expect(line["response"]["status_code"] == 200, f"{line}")
        vector = line["response"]["body"]["data"][0]["embedding"]
        expect(vector and all(isinstance(x, float) for x in vector), f"{line['custom_id']}")
        dimensions.add(len(vector))
    expect(len(dimensions) == 1, f"dimensions: {dimensions}")
    return {"id": done.id, "dimensions": dimensions.pop()}


def cancelled_batch(client: OpenAI, model: str) -> dict:
    requests = [chat_line(f"n{n}", model, max_tokens=24) for n in range(30)]
    input_file = upload(client, "many.jsonl", requests)
    batch = client.batches.create(
        input_file_id=input_file.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    cancelling = client.batches.cancel(batch.id)
    expect(cancelling.id == batch.id, f"{cancelling}")
    expect(cancelling.status in ("cancelling", "cancelled"), f"{cancelling}")
    cancelled = wait_for(client, batch.id, "cancelled")
    expect(cancelled.cancelling_at is not None and cancelled.cancelled_at is not None, f"{cancelled}")
    counts = cancelled.request_counts
    expect(counts.total == 30 and counts.completed + counts.failed < 30, f"counts: {cancelled}")
    if counts.completed:
        kept = lines_of(client, cancelled.output_file_id)
        expect(len(kept) == counts.completed, f"{len(kept)} answers kept: {cancelled}")
        ids = [line["custom_id"] for line in kept]
        expect(ids == [f"n{n}" for n in range(30) if f"n{n}" in ids], f"out of order: {ids}")
    return {"id": cancelled.id, "request_counts": counts.model_dump()}


def run(client: OpenAI) -> dict:
    model = os.environ["TESSERA_MODEL"]
    summary: dict = {"client": "openai-python"}
    summary["chat"] = chat_batch(client, model)
    summary["embeddings"] = embedding_batch(client, os.environ["TESSERA_EMBEDDING_MODEL"])
    summary["cancelled"] = cancelled_batch(client, model)

    # Newest first; auto-pagination follows `after` through pages of one.
    listed = [batch.id for batch in client.batches.list()]
    mine = [summary[key]["id"] for key in ("cancelled", "embeddings", "chat")]
    expect(listed == mine, f"listed: {listed}, made (newest first): {mine}")
    paged = [batch.id for batch in client.batches.list(limit=1)]
    expect(paged == mine, f"paged: {paged}")
    summary["listed"] = listed

    chat_input = client.batches.retrieve(summary["chat"]["id"]).input_file_id
    try:
        client.batches.create(
            input_file_id=chat_input,
            endpoint="/v1/chat/completions",
            completion_window="1h",  # type: ignore[arg-type]
        )
        raise CheckFailed("a window of 1h was accepted")
    except openai.BadRequestError as error:
        expect(error.status_code == 400, f"{error}")
        expect(error.body["param"] == "completion_window", f"{error.body}")
    try:
        client.batches.retrieve("batch_0190f5c1a3e27c3d9b1e4a0c5d6e7f80")
        raise CheckFailed("an unknown batch was found")
    except openai.NotFoundError as error:
        expect(error.body["type"] == "not_found_error", f"{error.body}")
    try:
        client.batches.cancel("batch_missing")
        raise CheckFailed("an unknown batch was cancelled")
    except openai.NotFoundError:
        pass
    return summary


if __name__ == "__main__":
    report("batches", run)
