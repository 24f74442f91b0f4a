// Files and vector stores through the official `openai` npm package, unchanged, against
// Tessera's `/openai/v1`: an upload (the SDK sends `file` before `purpose`), a vector store
// filled with `vectorStores.fileBatches.uploadAndPoll` and `vectorStores.files.uploadAndPoll`,
// attributes, search with a filter, the parsed content, pages, the Responses API's
// `file_search` tool streamed, and deletion.
//
// Reads OPENAI_BASE_URL, TESSERA_MODEL and OPENAI_API_KEY (a key with the files, datasets
// and `chats:invoke` scopes; trust
// the server's certificate with NODE_EXTRA_CA_CERTS), prints a JSON summary on stdout and
// exits 1 with the failing check on stderr.

import OpenAI, { BadRequestError, ConflictError, NotFoundError, toFile } from 'openai';

class CheckFailed extends Error {}

function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

const OWLS =
  'Owls\n\nOwls hunt at night; their soft feathers let them fly almost silently, ' +
  'and they swallow small prey whole.';
const GLACIERS =
  'Glaciers\n\nA glacier is a slow river of ice that forms where snow builds up over ' +
  'centuries; it carves valleys as it moves.';
const VOLCANOES =
  'Volcanoes\n\nMagma that reaches the surface is called lava; some volcanoes erupt ' +
  'explosively and throw ash high into the sky.';

function text(name, body) {
  return toFile(Buffer.from(body), name, { type: 'text/plain' });
}

async function run(client) {
  const summary = {};
  const owls = await client.files.create({ file: await text('owls.txt', OWLS), purpose: 'assistants' });
  expect(owls.object === 'file' && owls.purpose === 'assistants', JSON.stringify(owls));
  try {
    await client.files.create({ file: await text('x.txt', 'x'), purpose: 'batch_output' });
    throw new CheckFailed('the purpose batch_output was accepted');
  } catch (error) {
    if (!(error instanceof BadRequestError)) throw error;
    expect(error.param === 'purpose', `param: ${error.param}`);
  }

  const store = await client.vectorStores.create({ name: 'Nature', metadata: { shelf: 'b' } });
  summary.vector_store = store.id;
  const batch = await client.vectorStores.fileBatches.uploadAndPoll(store.id, {
    files: [await text('glaciers.txt', GLACIERS)],
    fileIds: [owls.id],
  });
  expect(batch.object === 'vector_store.files_batch' && batch.status === 'completed', JSON.stringify(batch));
  expect(batch.file_counts.completed === 2, JSON.stringify(batch));
  const lone = await client.vectorStores.files.uploadAndPoll(store.id, await text('volcanoes.txt', VOLCANOES));
  expect(lone.status === 'completed' && lone.vector_store_id === store.id, JSON.stringify(lone));
  const tagged = await client.vectorStores.files.update(lone.id, {
    vector_store_id: store.id,
    attributes: { topic: 'geology' },
  });
  expect(tagged.attributes.topic === 'geology', JSON.stringify(tagged));

  const ids = [];
  for await (const file of client.vectorStores.files.list(store.id, { limit: 1 })) ids.push(file.id);
  expect(ids.length === 3, `files: ${ids}`);
  const content = [];
  for await (const part of client.vectorStores.files.content(owls.id, { vector_store_id: store.id })) {
    content.push(part.text);
  }
  expect(content.join(' ').includes('silently'), `content: ${content}`);

  const hits = [];
  for await (const hit of client.vectorStores.search(store.id, { query: 'How do owls fly quietly?' })) {
    hits.push(hit);
  }
  expect(hits.length > 0 && hits[0].file_id === owls.id, `hits: ${JSON.stringify(hits)}`);
  const geology = [];
  for await (const hit of client.vectorStores.search(store.id, {
    query: 'How do owls fly quietly?',
    filters: { type: 'eq', key: 'topic', value: 'geology' },
  })) {
    geology.push(hit.file_id);
  }
  expect(geology.length > 0 && geology.every((id) => id === lone.id), `filtered: ${geology}`);
  summary.search = hits.map((hit) => ({ file: hit.filename, score: hit.score }));

  // The Responses API's file_search tool, streamed: the search's events, then the text's
  // citations of the store's files.
  const stream = client.responses.stream({
    model: process.env.TESSERA_MODEL,
    input: 'How do owls fly quietly?',
    max_output_tokens: 8,
    temperature: 0,
    tools: [{ type: 'file_search', vector_store_ids: [store.id], max_num_results: 2 }],
    include: ['file_search_call.results'],
  });
  const kinds = [];
  for await (const event of stream) kinds.push(event.type);
  const answer = await stream.finalResponse();
  expect(kinds.includes('response.file_search_call.completed'), `events: ${kinds}`);
  expect(kinds.includes('response.output_text.annotation.added'), `events: ${kinds}`);
  const call = answer.output[0];
  expect(call.type === 'file_search_call' && call.results[0].file_id === owls.id, JSON.stringify(call));
  const message = answer.output.find((item) => item.type === 'message');
  const cited = message.content[0].annotations.map((a) => a.file_id);
  expect(cited.includes(owls.id), `cited: ${cited}`);
  summary.file_search = { results: call.results.map((r) => r.filename), cited };

  try {
    await client.files.delete(owls.id);
    throw new CheckFailed('a file in a vector store was deleted');
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
  const deleted = await client.vectorStores.delete(store.id);
  expect(deleted.deleted && deleted.id === store.id, JSON.stringify(deleted));
  try {
    await client.vectorStores.retrieve(store.id);
    throw new CheckFailed('a deleted vector store is still there');
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  for (const id of [owls.id, lone.id]) {
    const gone = await client.files.delete(id);
    expect(gone.deleted, `delete ${id}`);
  }
  const left = [];
  for await (const file of client.files.list()) left.push(file.id);
  summary.files_left = left;
  return summary;
}

try {
  const summary = await run(new OpenAI());
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} catch (error) {
  process.stderr.write(`openai-node vector stores failed: ${error.stack ?? error}\n`);
  if (error.status) process.stderr.write(`status ${error.status}: ${JSON.stringify(error.error)}\n`);
  process.exit(1);
}
