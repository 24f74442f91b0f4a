"""Files and vector stores through the official `openai` Python package, unchanged, against
Tessera's `/openai/v1`: upload, a vector store made with a file, another file added, both
processed (`in_progress` to `completed`), attributes, search with and without filters,
listing page by page, metadata, the errors OpenAI's clients raise, deletion, and the SDK's
`file_batches.upload_and_poll` ingestion helper, and the Responses API's `file_search` tool
over a store (results, citations, its stream events). A vector store is a Tessera dataset: the summary names
its id, and the Rust test reads the same record through `/v1/datasets`.

Reads OPENAI_BASE_URL, TESSERA_MODEL and OPENAI_API_KEY (a key with the files, datasets and
`chats:invoke` scopes; trust the
server's certificate with SSL_CERT_FILE), prints a JSON summary on stdout and exits 1 with the
failing check on stderr.
"""

from __future__ import annotations

import io
import os
import time

import openai
from openai import OpenAI

from harness import CheckFailed, expect, report

TIMEOUT_SECS = 120

VOLCANOES = (
    "Volcanoes of Iceland\n\n"
    "Hekla is one of the most active volcanoes in Iceland; it erupted in 2000. "
    "Eyjafjallajokull's eruption in 2010 grounded flights across Europe for days."
)
BREAD = (
    "Baking sourdough bread\n\n"
    "A sourdough starter is a culture of flour and water. The dough rises slowly, "
    "and the loaf is baked in a hot Dutch oven until its crust is dark."
)

TEA = (
    "Green tea\n\n"
    "Green tea leaves are steamed or pan-fired soon after picking, which keeps them green; "
    "the water should be well below boiling."
)
RIVERS = (
    "Long rivers\n\n"
    "The Nile and the Amazon are the longest rivers on Earth, each over six thousand "
    "kilometres from source to mouth."
)




def upload(client: OpenAI, name: str, text: str, purpose: str):
    return client.files.create(file=(name, io.BytesIO(text.encode()), "text/plain"), purpose=purpose)


def completed(client: OpenAI, store_id: str):
    """Polls the vector store until no file is in progress."""
    deadline = time.monotonic() + TIMEOUT_SECS
    while True:
        store = client.vector_stores.retrieve(store_id)
        if store.status == "completed":
            return store
        expect(time.monotonic() < deadline, f"still in progress: {store}")
        time.sleep(0.3)


def run(client: OpenAI) -> dict:
    summary: dict = {}
    volcanoes = upload(client, "volcanoes.txt", VOLCANOES, "assistants")
    expect(volcanoes.object == "file" and volcanoes.purpose == "assistants", f"{volcanoes}")
    expect(volcanoes.bytes == len(VOLCANOES.encode()), f"{volcanoes}")
    bread = upload(client, "bread.txt", BREAD, "user_data")
    expect(bread.purpose == "user_data", f"{bread}")
    expect(client.files.retrieve(bread.id).filename == "bread.txt", "retrieve")
    expect(client.files.content(volcanoes.id).text == VOLCANOES, "content")

    # A purpose OpenAI has but Tessera does not serve is refused, and stores nothing.
    try:
        upload(client, "lines.txt", "x", "fine-tune")
        raise CheckFailed("the purpose fine-tune was accepted")
    except openai.BadRequestError as error:
        expect(error.body["param"] == "purpose", f"{error.body}")
    user_data = [f.id for f in client.files.list(purpose="user_data")]
    expect(user_data == [bread.id], f"user_data files: {user_data}")

    # Auto-pagination follows `after` through pages of one.
    listed = [f.id for f in client.files.list(limit=1)]
    expect(listed[:2] == [bread.id, volcanoes.id], f"listed: {listed}")

    store = client.vector_stores.create(
        name="Knowledge", file_ids=[volcanoes.id], metadata={"team": "geology"}
    )
    expect(store.object == "vector_store" and store.metadata == {"team": "geology"}, f"{store}")
    expect(store.file_counts.total == 1, f"{store}")
    summary["vector_store"] = store.id
    added = client.vector_stores.files.create(
        vector_store_id=store.id, file_id=bread.id, attributes={"topic": "baking"}
    )
    expect(added.object == "vector_store.file" and added.vector_store_id == store.id, f"{added}")
    expect(added.attributes == {"topic": "baking"}, f"{added}")
    tagged = client.vector_stores.files.update(
        file_id=volcanoes.id,
        vector_store_id=store.id,
        attributes={"topic": "geology", "year": 2010, "reviewed": True},
    )
    expect(tagged.attributes == {"topic": "geology", "year": 2010, "reviewed": True}, f"{tagged}")
    expect(added.status in ("in_progress", "completed"), f"{added}")
    done = completed(client, store.id)
    expect(done.file_counts.completed == 2 and done.file_counts.total == 2, f"{done}")
    expect(done.usage_bytes == volcanoes.bytes + bread.bytes, f"{done}")
    files = client.vector_stores.files.list(vector_store_id=store.id)
    expect(sorted(f.id for f in files) == sorted([volcanoes.id, bread.id]), f"{files}")
    expect(all(f.status == "completed" for f in files), f"{files}")
    one = client.vector_stores.files.retrieve(vector_store_id=store.id, file_id=volcanoes.id)
    expect(one.status == "completed", f"{one}")
    parsed = list(client.vector_stores.files.content(file_id=volcanoes.id, vector_store_id=store.id))
    expect(parsed and "Hekla" in parsed[0].text, f"content: {parsed}")

    results = client.vector_stores.search(
        vector_store_id=store.id, query="Which volcano erupted in 2010?", max_num_results=3
    )
    hits = list(results)
    expect(hits and hits[0].file_id == volcanoes.id, f"best hit: {hits}")
    expect(hits[0].filename == "volcanoes.txt", f"{hits[0]}")
    expect("Eyjafjallajokull" in hits[0].content[0].text, f"{hits[0]}")
    summary["search"] = [{"file": h.filename, "score": h.score} for h in hits]
    bread_hits = list(
        client.vector_stores.search(
            vector_store_id=store.id,
            query=["sourdough starter", "Dutch oven"],
            ranking_options={"ranker": "none"},
        )
    )
    expect(bread_hits[0].file_id == bread.id, f"bread hits: {bread_hits}")
    expect(hits[0].attributes == {"topic": "geology", "year": 2010, "reviewed": True}, f"{hits[0]}")
    # Filters pick the files searched: a volcano question among the baking files only.
    baking = list(
        client.vector_stores.search(
            vector_store_id=store.id,
            query="Which volcano erupted in 2010?",
            filters={"type": "eq", "key": "topic", "value": "baking"},
        )
    )
    expect(baking and all(h.file_id == bread.id for h in baking), f"filtered: {baking}")
    compound = list(
        client.vector_stores.search(
            vector_store_id=store.id,
            query="volcano",
            filters={
                "type": "and",
                "filters": [
                    {"type": "gte", "key": "year", "value": 2000},
                    {"type": "eq", "key": "reviewed", "value": True},
                ],
            },
        )
    )
    expect(compound and all(h.file_id == volcanoes.id for h in compound), f"{compound}")
    summary["filtered"] = {"baking": len(baking), "compound": len(compound)}
    one_of = list(
        client.vector_stores.search(
            vector_store_id=store.id,
            query="volcano",
            filters={"type": "in", "key": "topic", "value": ["baking", "knitting"]},
        )
    )
    expect(one_of and all(h.file_id == bread.id for h in one_of), f"in: {one_of}")
    try:
        client.vector_stores.search(
            vector_store_id=store.id,
            query="volcano",
            filters={"type": "in", "key": "topic", "value": []},
        )
        raise CheckFailed("an empty `in` filter was accepted")
    except openai.BadRequestError as error:
        expect(error.body["param"] == "filters.value", f"{error.body}")

    renamed = client.vector_stores.update(store.id, name="Renamed", metadata={})
    expect(renamed.name == "Renamed" and renamed.metadata == {}, f"{renamed}")
    ids = [s.id for s in client.vector_stores.list()]
    expect(store.id in ids, f"stores: {ids}")

    # A file a vector store holds is not deleted; removed from the store, it is.
    try:
        client.files.delete(volcanoes.id)
        raise CheckFailed("a file in a vector store was deleted")
    except openai.ConflictError as error:
        expect(error.status_code == 409, f"{error}")
    removed = client.vector_stores.files.delete(vector_store_id=store.id, file_id=volcanoes.id)
    expect(removed.deleted and removed.id == volcanoes.id, f"{removed}")
    expect(client.files.delete(volcanoes.id).deleted, "file delete")
    try:
        client.files.retrieve(volcanoes.id)
        raise CheckFailed("a deleted file is still there")
    except openai.NotFoundError:
        pass
    deleted = client.vector_stores.delete(store.id)
    expect(deleted.deleted and deleted.id == store.id, f"{deleted}")
    try:
        client.vector_stores.retrieve(store.id)
        raise CheckFailed("a deleted vector store is still there")
    except openai.NotFoundError as error:
        expect(error.body["type"] == "not_found_error", f"{error.body}")

    # Expiry: days after the last activity; cleared by `None` (sent as null).
    brief = client.vector_stores.create(
        name="Brief", expires_after={"anchor": "last_active_at", "days": 3}
    )
    expect(brief.expires_after is not None and brief.expires_after.days == 3, f"{brief}")
    expect(brief.expires_at == brief.last_active_at + 3 * 86400, f"{brief}")
    expect(brief.status == "completed", f"{brief}")
    try:
        client.vector_stores.create(expires_after={"anchor": "last_active_at", "days": 366})
        raise CheckFailed("an expiry of 366 days was accepted")
    except openai.BadRequestError as error:
        expect(error.body["param"] == "expires_after.days", f"{error.body}")
    lasting = client.vector_stores.update(brief.id, expires_after=None)
    expect(lasting.expires_after is None and lasting.expires_at is None, f"{lasting}")
    expect(client.vector_stores.delete(brief.id).deleted, "delete brief")

    # The SDK's own ingestion helper: upload, one batch, poll until processed.
    shelf = client.vector_stores.create(name="Shelf")
    batch = client.vector_stores.file_batches.upload_and_poll(
        vector_store_id=shelf.id,
        files=[
            ("tea.txt", io.BytesIO(TEA.encode()), "text/plain"),
            ("rivers.txt", io.BytesIO(RIVERS.encode()), "text/plain"),
        ],
    )
    expect(batch.object == "vector_store.files_batch" and batch.status == "completed", f"{batch}")
    expect(batch.file_counts.completed == 2 and batch.file_counts.total == 2, f"{batch}")
    expect(client.vector_stores.file_batches.retrieve(batch.id, vector_store_id=shelf.id).id == batch.id, "retrieve batch")
    batch_files = list(client.vector_stores.file_batches.list_files(batch.id, vector_store_id=shelf.id))
    expect(len(batch_files) == 2 and all(f.status == "completed" for f in batch_files), f"{batch_files}")
    river = list(client.vector_stores.search(vector_store_id=shelf.id, query="Which river is the longest?"))
    expect(river and river[0].filename == "rivers.txt", f"{river}")
    summary["batch"] = {"id": batch.id, "files": sorted(f.id for f in batch_files)}
    summary["file_search"] = file_search(client, shelf.id, {f.id for f in batch_files})
    expect(client.vector_stores.delete(shelf.id).deleted, "delete shelf")
    for file in batch_files:
        expect(client.files.delete(file.id).deleted, f"delete {file.id}")
    summary["files_left"] = [f.id for f in client.files.list()]
    return summary


def file_search(client: OpenAI, store_id: str, file_ids: set[str]) -> dict:
    """The Responses API's `file_search` tool over a store: the search runs on the server
    before the model answers; the response shows it and cites the store's files, streamed
    and not."""
    question = "Which river is the longest?"
    request = {
        "model": os.environ["TESSERA_MODEL"],
        "input": question,
        "max_output_tokens": 8,
        "temperature": 0,
        "tools": [{"type": "file_search", "vector_store_ids": [store_id], "max_num_results": 2}],
    }
    answer = client.responses.create(**request, include=["file_search_call.results"])
    calls = [item for item in answer.output if item.type == "file_search_call"]
    expect(len(calls) == 1 and calls[0].status == "completed", f"{answer.output}")
    expect(calls[0].queries == [question], f"{calls[0]}")
    results = calls[0].results or []
    expect(results and results[0].filename == "rivers.txt", f"{calls[0]}")
    expect(all(r.file_id in file_ids and r.text for r in results), f"{results}")
    message = next(item for item in answer.output if item.type == "message")
    annotations = message.content[0].annotations
    expect(annotations and all(a.type == "file_citation" for a in annotations), f"{message}")
    expect({a.file_id for a in annotations} <= file_ids, f"{annotations}")

    # Eight tokens may cut the answer (`response.incomplete`, which the SDK's
    # `get_final_response` does not take): the last event carries the response either way.
    with client.responses.stream(**request) as stream:
        events = list(stream)
    kinds = [event.type for event in events]
    expect(kinds[-1] in ("response.completed", "response.incomplete"), f"{kinds}")
    final = events[-1].response
    for kind in ("response.file_search_call.searching", "response.file_search_call.completed",
                 "response.output_text.annotation.added"):
        expect(kind in kinds, f"{kind} not in {kinds}")
    expect(final.output[0].type == "file_search_call" and final.output[0].results is None, f"{final.output}")
    cited = [a.filename for a in next(i for i in final.output if i.type == "message").content[0].annotations]
    expect(cited and "rivers.txt" in cited, f"{cited}")

    # The tool's filters pick files by their attributes: a tea question among river files.
    rivers_id = results[0].file_id
    client.vector_stores.files.update(file_id=rivers_id, vector_store_id=store_id, attributes={"kind": "river"})
    only_rivers = {**request["tools"][0], "filters": {"type": "eq", "key": "kind", "value": "river"}}
    filtered = client.responses.create(
        **{**request, "input": "How is green tea made?", "tools": [only_rivers]},
        include=["file_search_call.results"],
    )
    found = filtered.output[0].results or []
    expect([r.file_id for r in found] == [rivers_id], f"{filtered.output[0]}")
    expect(found[0].attributes == {"kind": "river"}, f"{found[0]}")

    try:
        client.responses.create(**{**request, "tools": [{"type": "file_search", "vector_store_ids": ["vs_missing"]}]})
        raise CheckFailed("an unknown vector store was searched")
    except openai.NotFoundError as error:
        expect(error.body["param"] == "tools", f"{error.body}")
    return {"results": [r.filename for r in results], "cited": cited, "events": len(kinds)}


if __name__ == "__main__":
    report("vector stores", run)
