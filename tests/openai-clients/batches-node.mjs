// Batches through the official `openai` npm package, unchanged, against Tessera's
// `/openai/v1`: a JSON-lines file uploaded with `toFile` for `purpose: 'batch'` (the SDK sends
// `file` before `purpose`), an embeddings batch polled with `batches.retrieve` until
// `completed`, its output read with `files.content`, `batches.list`, and an unknown batch.
//
// Reads OPENAI_BASE_URL, TESSERA_EMBEDDING_MODEL and OPENAI_API_KEY (a key with the files and
// `chats:invoke chats:read` scopes; trust the server's certificate with NODE_EXTRA_CA_CERTS),
// prints a JSON summary on stdout and exits 1 with the failing check on stderr.

import OpenAI, { NotFoundError, toFile } from 'openai';

const TIMEOUT_MS = 240_000;

class CheckFailed extends Error {}

function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

const TEXTS = {
  owls: 'Owls hunt at night and fly almost silently.',
  glaciers: 'A glacier is a slow river of ice.',
  volcanoes: 'Some volcanoes erupt explosively.',
};

async function waitFor(client, id, status) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const batch = await client.batches.retrieve(id);
    if (batch.status === status) return batch;
    expect(
      ['validating', 'in_progress', 'finalizing', 'cancelling'].includes(batch.status),
      `batch ended ${batch.status}, not ${status}: ${JSON.stringify(batch)}`,
    );
    expect(Date.now() < deadline, `still ${batch.status}: ${JSON.stringify(batch)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}

async function run(client) {
  const model = process.env.TESSERA_EMBEDDING_MODEL;
  const ids = Object.keys(TEXTS);
  const jsonl = ids
    .map((id) =>
      JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/embeddings', body: { model, input: TEXTS[id] } }),
    )
    .join('\n');
  const input = await client.files.create({
    file: await toFile(Buffer.from(`${jsonl}\n`), 'embeddings.jsonl', { type: 'application/jsonl' }),
    purpose: 'batch',
  });
  expect(input.object === 'file' && input.purpose === 'batch', JSON.stringify(input));

  const batch = await client.batches.create({
    input_file_id: input.id,
    endpoint: '/v1/embeddings',
    completion_window: '24h',
    metadata: { client: 'node' },
  });
  expect(batch.object === 'batch' && batch.request_counts.total === ids.length, JSON.stringify(batch));
  expect(batch.metadata.client === 'node', JSON.stringify(batch));
  const done = await waitFor(client, batch.id, 'completed');
  expect(
    done.request_counts.completed === ids.length && done.request_counts.failed === 0,
    JSON.stringify(done.request_counts),
  );
  expect(done.error_file_id === null, `error file: ${done.error_file_id}`);

  const content = await client.files.content(done.output_file_id);
  const lines = (await content.text())
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
  const customIds = lines.map((line) => line.custom_id);
  expect(JSON.stringify(customIds) === JSON.stringify(ids), `custom ids: ${customIds}`);
  for (const line of lines) {
    expect(line.response.status_code === 200, JSON.stringify(line));
    expect(line.response.body.data[0].embedding.length > 0, `${line.custom_id}: no vector`);
  }
  const output = await client.files.retrieve(done.output_file_id);
  expect(output.purpose === 'batch_output', JSON.stringify(output));

  const listed = [];
  for await (const item of client.batches.list()) listed.push(item.id);
  expect(listed.includes(batch.id), `listed: ${listed}`);
  try {
    await client.batches.retrieve('batch_0190f5c1a3e27c3d9b1e4a0c5d6e7f80');
    throw new CheckFailed('an unknown batch was found');
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
  }
  return {
    client: 'openai-node',
    batch: done.id,
    input_file: input.id,
    output_file: done.output_file_id,
    request_counts: done.request_counts,
    custom_ids: customIds,
    dimensions: lines[0].response.body.data[0].embedding.length,
  };
}

try {
  const summary = await run(new OpenAI());
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} catch (error) {
  process.stderr.write(`openai-node batches failed: ${error.stack ?? error}\n`);
  if (error.status) process.stderr.write(`status ${error.status}: ${JSON.stringify(error.error)}\n`);
  process.exit(1);
}
