// Checks one Server-Sent-Events body in the Vercel AI SDK "UI message stream"
// format (protocol v1, header `x-vercel-ai-ui-message-stream: v1`) with the
// real `ai` package's own machinery, the same path `DefaultChatTransport` and
// `useChat` take in a browser:
//
//   parseJsonEventStream({ stream, schema: uiMessageChunkSchema })
//     -> every `data:` event is JSON-parsed and validated against the SDK's
//        chunk schema (`data: [DONE]` is skipped by the parser itself);
//   readUIMessageStream({ stream })
//     -> the validated chunks are assembled into a UIMessage.
//
// Usage: node tests/ai-sdk/check.mjs < body.txt
//
// stdout: JSON.stringify({ chunks: [...validated chunks...], message: <last UIMessage snapshot or null> })
// exit 0: stream valid and complete.
// exit 1: stream rejected (malformed JSON, a chunk failing the schema, a
//         chunk the SDK cannot apply such as a text-delta without text-start,
//         or the body not terminated by `data: [DONE]`); reason on stderr,
//         nothing on stdout.
// exit 3: stream valid but it carried one or more `error` chunks; the JSON is
//         still printed and each errorText goes to stderr.

import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

function fail(message) {
  process.stderr.write(`ai-sdk check: ${message}\n`);
  process.exit(1);
}

async function readStdin() {
  const parts = [];
  for await (const part of process.stdin) parts.push(part);
  return new Uint8Array(Buffer.concat(parts));
}

function bytesStream(bytes) {
  return new ReadableStream({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

// The SDK's parser silently drops `[DONE]` and does not require it, so the
// termination rule is checked here, on the raw text: the last dispatched SSE
// event carrying data must be exactly `[DONE]`, and it must be dispatched,
// i.e. followed by a blank line (per the SSE spec an unterminated final event
// is discarded). Comment lines (`: keep-alive`) may appear anywhere.
function checkTerminatedByDone(text) {
  const lines = text.split(/\r\n|\r|\n/);
  let data = null; // data of the event being built, null if no data line yet
  const events = []; // data of every dispatched event that had data
  for (const line of lines) {
    if (line === '') {
      if (data !== null) events.push(data);
      data = null;
      continue;
    }
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') data = data === null ? value : `${data}\n${value}`;
  }
  if (data !== null) {
    fail(`the body ends inside an unterminated SSE event (no blank line after its last data line): ${JSON.stringify(data.slice(0, 200))}`);
  }
  const doneAt = events.indexOf('[DONE]');
  if (doneAt === -1) fail('the body is not terminated by `data: [DONE]`');
  if (doneAt !== events.length - 1) {
    fail(`${events.length - 1 - doneAt} data event(s) follow \`data: [DONE]\`: ${JSON.stringify(events[doneAt + 1].slice(0, 200))}`);
  }
}

// The chunk schema is a union over all chunk types, so zod reports every
// branch; keep only the branches whose `type` matched, which is the useful part.
// Returns null when the error is not of that shape (the SDK message is used).
function summarizeSchemaError(error, value) {
  const issues = error?.cause?.issues;
  if (!Array.isArray(issues) || issues.length !== 1 || issues[0].code !== 'invalid_union') return null;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'schema: the chunk is not a JSON object';
  const matching = issues[0].errors.filter((branch) => !branch.some((issue) => issue.path?.[0] === 'type'));
  if (matching.length === 0) return `schema: unknown chunk type ${JSON.stringify(value?.type)}`;
  const describe = (issue) => `${issue.path?.length ? issue.path.join('.') : '(chunk)'}: ${issue.message}`;
  return `schema: ${[...new Set(matching.map((branch) => branch.map(describe).join(', ')))].join(' | ')}`;
}

const bytes = await readStdin();
checkTerminatedByDone(new TextDecoder().decode(bytes));

// 1. Parse and validate every event with the SDK's parser and chunk schema.
const chunks = [];
const reader = parseJsonEventStream({ stream: bytesStream(bytes), schema: uiMessageChunkSchema }).getReader();
for (;;) {
  const { done, value: result } = await reader.read();
  if (done) break;
  if (!result.success) {
    const raw = result.rawValue === undefined ? '' : `\nchunk: ${JSON.stringify(result.rawValue)}`;
    const why = summarizeSchemaError(result.error, result.rawValue) ?? result.error?.message ?? String(result.error);
    fail(`chunk #${chunks.length} rejected by the ai package: ${why}${raw}`);
  }
  chunks.push(result.value);
}

// 2. Assemble the validated chunks into a UIMessage with the SDK's reader.
const errorTexts = chunks.filter((chunk) => chunk.type === 'error').map((chunk) => chunk.errorText);
const unexpectedErrors = [];
let message = null;
const messages = readUIMessageStream({
  stream: new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  }),
  onError(error) {
    // An `error` chunk is reported as a plain Error carrying its errorText;
    // anything else is the SDK refusing to apply a chunk.
    const fromErrorChunk = error?.constructor === Error && errorTexts.includes(error.message);
    if (!fromErrorChunk) unexpectedErrors.push(error);
  },
});
for await (const snapshot of messages) message = snapshot;

if (unexpectedErrors.length > 0) {
  fail(`the ai package could not assemble the message: ${unexpectedErrors.map((e) => e?.message ?? String(e)).join('; ')}`);
}

process.stdout.write(`${JSON.stringify({ chunks, message })}\n`);
if (errorTexts.length > 0) {
  for (const text of errorTexts) process.stderr.write(`ai-sdk check: stream carried an error chunk: ${text}\n`);
  process.exitCode = 3;
}
