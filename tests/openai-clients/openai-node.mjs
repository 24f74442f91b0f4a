// The official `openai` npm package, unchanged, against Tessera's `/openai/v1`.
//
// Reads OPENAI_BASE_URL, OPENAI_API_KEY, TESSERA_MODEL and TESSERA_EMBEDDING_MODEL (trust
// the server's certificate with NODE_EXTRA_CA_CERTS), and TESSERA_REMOTE_MODEL when the
// server has a model of a remote provider (the tool-choice checks run on it too), runs each check through the SDK's own
// request building and response parsing, prints a JSON summary on stdout and exits 1 with
// the failing checks on stderr.
//
// The embedded model is tiny: the checks assert the protocol and the shapes (non-empty
// content, finish reasons, usage, tool calls and structured answers that parse), not
// answer quality.
//
// Usage: NODE_EXTRA_CA_CERTS=cert.pem OPENAI_BASE_URL=https://localhost:8443/openai/v1 \
//   OPENAI_API_KEY=tsk_… TESSERA_MODEL=local/smollm2-135m-instruct \
//   TESSERA_EMBEDDING_MODEL=all-MiniLM-L6-v2 node openai-node.mjs

import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import { LengthFinishReasonError } from 'openai/error';
import { zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { VERSION } from 'openai/version';

const MAX_TOKENS = 24;

function env(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`openai-node check: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

class CheckFailed extends Error {}

function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

function usageCounts(usage, what) {
  expect(usage != null, `${what}: no usage`);
  expect(usage.prompt_tokens > 0, `${what}: prompt_tokens = ${usage.prompt_tokens}`);
  expect(usage.completion_tokens > 0, `${what}: completion_tokens = ${usage.completion_tokens}`);
  expect(
    usage.total_tokens === usage.prompt_tokens + usage.completion_tokens,
    `${what}: total_tokens ${usage.total_tokens} is not the sum`,
  );
  return {
    prompt_tokens: usage.prompt_tokens,
    completion_tokens: usage.completion_tokens,
    total_tokens: usage.total_tokens,
  };
}

async function checkModels(client, model, embeddingModel) {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  expect(ids.includes(model), `models.list() lacks ${model}: ${ids}`);
  expect(ids.includes(embeddingModel), `models.list() lacks ${embeddingModel}: ${ids}`);
  const one = await client.models.retrieve(model);
  expect(one.id === model && one.object === 'model', `models.retrieve: ${JSON.stringify(one)}`);
  try {
    await client.models.retrieve('no-such-model');
    throw new CheckFailed("models.retrieve('no-such-model') did not fail");
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    expect(error.code === 'model_not_found', `unknown model: code ${error.code}, body ${JSON.stringify(error.error)}`);
  }
  return { ids };
}

async function checkCreate(client, model) {
  const completion = await client.chat.completions.create({
    model,
    messages: [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'Name three colours.' },
    ],
    max_tokens: MAX_TOKENS,
    temperature: 0,
  });
  expect(completion.object === 'chat.completion', `object ${completion.object}`);
  expect(completion.id.startsWith('chatcmpl-'), `id ${completion.id}`);
  expect(completion.choices.length === 1, `${completion.choices.length} choices`);
  const choice = completion.choices[0];
  expect(choice.message.role === 'assistant', `role ${choice.message.role}`);
  expect(!!choice.message.content, 'empty content');
  expect(['stop', 'length'].includes(choice.finish_reason), `finish_reason ${choice.finish_reason}`);
  return {
    content: choice.message.content,
    finish_reason: choice.finish_reason,
    usage: usageCounts(completion.usage, 'create'),
  };
}

async function checkStream(client, model) {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Say hello.' }],
    max_completion_tokens: MAX_TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  expect(chunks.length >= 3, `${chunks.length} chunks`);
  for (const chunk of chunks) expect(chunk.object === 'chat.completion.chunk', `chunk object ${chunk.object}`);
  const text = chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  expect(text !== '', 'no content in the stream');
  const finishes = chunks.map((c) => c.choices[0]?.finish_reason).filter(Boolean);
  expect(finishes.length === 1, `finish reasons ${finishes}`);
  expect(['stop', 'length'].includes(finishes[0]), `finish_reason ${finishes[0]}`);
  const last = chunks[chunks.length - 1];
  expect(last.choices.length === 0, `the last chunk has choices: ${JSON.stringify(last)}`);
  for (const chunk of chunks.slice(0, -1)) expect(chunk.usage == null, `usage before the last chunk: ${JSON.stringify(chunk)}`);
  // The SDK's stream helper assembles the same stream into a completion.
  const runner = client.chat.completions.stream({
    model,
    messages: [{ role: 'user', content: 'Say hello.' }],
    max_completion_tokens: MAX_TOKENS,
    temperature: 0,
    stream_options: { include_usage: true },
  });
  const assembled = await runner.finalChatCompletion();
  expect(!!assembled.choices[0].message.content, 'stream helper: empty content');
  return {
    chunks: chunks.length,
    content: text,
    finish_reason: finishes[0],
    usage: usageCounts(last.usage, 'stream'),
    helper: { content: assembled.choices[0].message.content, usage: usageCounts(assembled.usage, 'stream helper') },
  };
}

const WEATHER_TOOL = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The current weather in a city.',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
    strict: true,
  },
};

async function checkTools(client, model) {
  const messages = [
    { role: 'system', content: 'Use the get_weather tool to answer questions about the weather.' },
    { role: 'user', content: 'What is the weather in Paris?' },
  ];
  const first = await client.chat.completions.create({
    model,
    messages,
    tools: [WEATHER_TOOL],
    max_tokens: 48,
    temperature: 0,
  });
  const choice = first.choices[0];
  expect(choice.finish_reason === 'tool_calls', `finish_reason ${choice.finish_reason} (content ${JSON.stringify(choice.message.content)})`);
  const calls = choice.message.tool_calls ?? [];
  expect(calls.length >= 1, 'no tool_calls');
  const call = calls[0];
  expect(call.type === 'function', `tool call type ${call.type}`);
  expect(call.function.name === 'get_weather', `tool name ${call.function.name}`);
  expect(!!call.id, 'tool call without id');
  const args = JSON.parse(call.function.arguments);
  expect(args && typeof args.city === 'string', `arguments ${call.function.arguments}`);
  usageCounts(first.usage, 'tool call');
  messages.push(choice.message);
  messages.push({
    role: 'tool',
    tool_call_id: call.id,
    content: JSON.stringify({ city: args.city, weather: 'sunny, 21 °C' }),
  });
  const final = await client.chat.completions.create({
    model,
    messages,
    tools: [WEATHER_TOOL],
    tool_choice: 'none',
    max_tokens: MAX_TOKENS,
    temperature: 0,
  });
  const answer = final.choices[0];
  expect(!!answer.message.content, 'empty final answer');
  expect(['stop', 'length'].includes(answer.finish_reason), `final finish_reason ${answer.finish_reason}`);

  // The same call streamed: tool-call deltas the SDK's stream helper assembles.
  const runner = client.chat.completions.stream({
    model,
    messages: messages.slice(0, 2),
    tools: [WEATHER_TOOL],
    max_tokens: 48,
    temperature: 0,
  });
  const streamed = await runner.finalChatCompletion();
  const streamedCall = streamed.choices[0].message.tool_calls?.[0];
  expect(streamed.choices[0].finish_reason === 'tool_calls', `streamed finish_reason ${streamed.choices[0].finish_reason}`);
  expect(streamedCall?.function?.name === 'get_weather', `streamed tool call ${JSON.stringify(streamedCall)}`);
  expect(typeof JSON.parse(streamedCall.function.arguments).city === 'string', `streamed arguments ${streamedCall.function.arguments}`);
  return {
    tool_call: { name: call.function.name, arguments: args },
    streamed_tool_call: { name: streamedCall.function.name, arguments: JSON.parse(streamedCall.function.arguments) },
    answer: answer.message.content,
    usage: usageCounts(final.usage, 'tool answer'),
  };
}

const TIME_TOOL = {
  type: 'function',
  function: {
    name: 'get_time',
    description: 'The current time in a time zone.',
    parameters: {
      type: 'object',
      properties: { zone: { type: 'string' } },
      required: ['zone'],
      additionalProperties: false,
    },
    strict: true,
  },
};

function forcedCall(completion, what, names) {
  const choice = completion.choices[0];
  expect(choice.finish_reason === 'tool_calls', `${what}: finish_reason ${choice.finish_reason} (content ${JSON.stringify(choice.message.content)})`);
  const call = choice.message.tool_calls?.[0];
  expect(names.includes(call?.function?.name), `${what}: tool call ${JSON.stringify(call)}`);
  const args = JSON.parse(call.function.arguments);
  expect(args && typeof args === 'object', `${what}: arguments ${call.function.arguments}`);
  return { name: call.function.name, arguments: args };
}

// `tool_choice` `required` and a named function force a call (issue 61), streamed or not.
async function checkToolChoice(client, model) {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const tools = [WEATHER_TOOL, TIME_TOOL];
  const ask = (toolChoice) => ({ model, messages, tools, tool_choice: toolChoice, max_tokens: 64, temperature: 0 });
  const required = forcedCall(await client.chat.completions.create(ask('required')), 'required', ['get_weather', 'get_time']);
  const byName = { type: 'function', function: { name: 'get_time' } };
  const named = forcedCall(await client.chat.completions.create(ask(byName)), 'named', ['get_time']);
  expect(typeof named.arguments.zone === 'string', `named: arguments ${JSON.stringify(named.arguments)}`);
  const streamed = await client.chat.completions.stream(ask(byName)).finalChatCompletion();
  const streamedCall = forcedCall(streamed, 'named, streamed', ['get_time']);
  return { required: required.name, named: named.arguments, streamed: streamedCall.arguments };
}

const City = z.object({ name: z.string(), country: z.string() });
const Count = z.object({ answer: z.number().int(), unit: z.string() });

// A structured answer cut off by the token limit: a 200 with `finish_reason: length`, which
// `.parse` turns into the SDK's own LengthFinishReasonError (issue 61).
async function checkLength(client, model) {
  try {
    await client.chat.completions.parse({
      model,
      messages: [{ role: 'user', content: 'How many moons has Jupiter?' }],
      response_format: zodResponseFormat(Count, 'count'),
      max_tokens: 4,
      temperature: 0,
    });
    throw new CheckFailed('a cut-off answer parsed');
  } catch (error) {
    if (!(error instanceof LengthFinishReasonError)) throw error;
    return { error: error.constructor.name, message: error.message };
  }
}

async function checkParse(client, model) {
  const completion = await client.chat.completions.parse({
    model,
    messages: [{ role: 'user', content: 'Give a city and its country as JSON.' }],
    response_format: zodResponseFormat(City, 'city'),
    max_tokens: 64,
    temperature: 0,
  });
  const choice = completion.choices[0];
  expect(choice.finish_reason === 'stop', `finish_reason ${choice.finish_reason} (content ${JSON.stringify(choice.message.content)})`);
  const parsed = choice.message.parsed;
  expect(City.safeParse(parsed).success, `parsed ${JSON.stringify(parsed)}`);
  return { parsed, usage: usageCounts(completion.usage, 'parse') };
}

async function checkEmbeddings(client, embeddingModel) {
  const texts = ['The cat sat on the mat.', 'Tessera answers questions.'];
  const results = {};
  const vectors = {};
  for (const encoding of ['float', 'base64', undefined]) {
    const label = encoding ?? 'default';
    const body = { model: embeddingModel, input: texts };
    if (encoding) body.encoding_format = encoding;
    const response = await client.embeddings.create(body);
    expect(response.data.length === 2, `${label}: ${response.data.length} embeddings`);
    expect(response.data.map((d) => d.index).join() === '0,1', `${label}: indexes`);
    if (encoding === 'base64') {
      // Asked explicitly, the SDK hands the base64 text over as is: decode it as OpenAI documents
      // (little-endian float32).
      for (const item of response.data) {
        expect(typeof item.embedding === 'string', `base64: embedding is a ${typeof item.embedding}`);
        const bytes = Buffer.from(item.embedding, 'base64');
        item.embedding = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
      }
    }
    for (const item of response.data) {
      expect(Array.isArray(item.embedding), `${label}: embedding is not an array`);
      expect(item.embedding.length === 384, `${label}: ${item.embedding.length} dimensions`);
      expect(item.embedding.every((x) => typeof x === 'number' && Number.isFinite(x)), `${label}: non-number values`);
    }
    expect(response.usage.prompt_tokens > 0, `${label}: prompt_tokens`);
    vectors[label] = response.data.map((d) => d.embedding);
    results[label] = { dimensions: response.data[0].embedding.length, prompt_tokens: response.usage.prompt_tokens };
  }
  for (const label of ['base64', 'default']) {
    vectors.float.forEach((a, i) => {
      const b = vectors[label][i];
      const diff = Math.max(...a.map((x, j) => Math.abs(x - b[j])));
      expect(diff < 1e-5, `${label} vectors differ from the float ones by ${diff}`);
    });
  }
  return results;
}

async function checkResponses(client, model) {
  // The Responses API (`client.responses`): create, stream, and continue the conversation.
  const first = await client.responses.create({
    model, input: 'My name is Ada.', max_output_tokens: MAX_TOKENS, temperature: 0,
  });
  expect(first.object === 'response' && first.id.startsWith('resp_'), `create: ${first.id}`);
  expect(['completed', 'incomplete'].includes(first.status), `create: status ${first.status}`);
  expect(first.output_text.length > 0, 'create: empty output_text');
  expect(first.usage.input_tokens > 0 && first.usage.output_tokens > 0, 'create: usage');
  const stream = await client.responses.create({
    model, previous_response_id: first.id, input: 'What is my name?',
    max_output_tokens: MAX_TOKENS, temperature: 0, stream: true,
  });
  const events = [];
  for await (const event of stream) events.push(event);
  const kinds = events.map((event) => event.type);
  expect(kinds[0] === 'response.created', `stream: first event ${kinds[0]}`);
  const last = events[events.length - 1];
  expect(['response.completed', 'response.incomplete'].includes(last.type), `stream: last event ${last.type}`);
  expect(events.every((event, at) => event.sequence_number === at), 'stream: sequence numbers');
  const deltas = events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('');
  // Stream events carry the raw response (the SDK adds `output_text` only to `create`'s).
  const finalText = last.response.output
    .filter((item) => item.type === 'message')
    .flatMap((item) => item.content.filter((part) => part.type === 'output_text').map((part) => part.text))
    .join('');
  expect(deltas.length > 0 && deltas === finalText, `stream: deltas ${deltas} != final ${finalText}`);
  expect(last.response.previous_response_id === first.id, `continue: previous ${last.response.previous_response_id}`);
  const again = await client.responses.retrieve(last.response.id);
  expect(again.output_text === deltas, 'retrieve: another text');
  return { first: first.id, second: last.response.id, events: events.length };
}

async function checkErrors(client, model) {
  // The SDK's typed errors from OpenAI-shaped answers (no generation runs).
  const seen = {};
  try {
    await client.withOptions({ apiKey: `tsk_${'0'.repeat(43)}` }).models.list();
    throw new CheckFailed('an unknown key was accepted');
  } catch (error) {
    if (!(error instanceof AuthenticationError)) throw error;
    expect(typeof error.error?.message === 'string', `unknown key: body ${JSON.stringify(error.error)}`);
    seen.unknown_key = { status: error.status, code: error.code };
  }
  try {
    await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }], n: 2, max_tokens: 4 });
    throw new CheckFailed('n=2 was accepted');
  } catch (error) {
    if (!(error instanceof BadRequestError)) throw error;
    expect(error.param === 'n', `n=2: param ${error.param}, body ${JSON.stringify(error.error)}`);
    seen.n = { status: error.status, param: error.param, code: error.code };
  }
  try {
    await client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 });
    throw new CheckFailed('an unknown model was accepted');
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    expect(error.code === 'model_not_found', `unknown model: code ${error.code}, body ${JSON.stringify(error.error)}`);
    seen.unknown_model = { status: error.status, code: error.code };
  }
  return seen;
}

async function main() {
  const baseURL = env('OPENAI_BASE_URL');
  const apiKey = env('OPENAI_API_KEY');
  const model = env('TESSERA_MODEL');
  const embeddingModel = env('TESSERA_EMBEDDING_MODEL');
  // A model of a remote OpenAI-compatible provider, when the test serves one.
  const remoteModel = process.env.TESSERA_REMOTE_MODEL;
  // No retries: a failure is reported as the server answered it.
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 300_000 });
  const checks = {
    models: () => checkModels(client, model, embeddingModel),
    create: () => checkCreate(client, model),
    stream: () => checkStream(client, model),
    tools: () => checkTools(client, model),
    parse: () => checkParse(client, model),
    tool_choice: () => checkToolChoice(client, model),
    length: () => checkLength(client, model),
    embeddings: () => checkEmbeddings(client, embeddingModel),
    responses: () => checkResponses(client, model),
    errors: () => checkErrors(client, model),
  };
  if (remoteModel) checks.tool_choice_remote = () => checkToolChoice(client, remoteModel);
  const summary = { client: 'openai-node', version: VERSION };
  const failures = [];
  for (const [name, run] of Object.entries(checks)) {
    try {
      summary[name] = await run();
    } catch (error) {
      let detail = error instanceof CheckFailed ? error.message : (error?.stack ?? String(error));
      if (error instanceof APIError) detail += `\nstatus ${error.status}, body ${JSON.stringify(error.error)}`;
      failures.push(name);
      summary[name] = { error: String(error?.message ?? error) };
      process.stderr.write(`openai-node check \`${name}\` failed: ${detail}\n`);
    }
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (failures.length) {
    process.stderr.write(`openai-node: ${failures.length} check(s) failed: ${failures.join(', ')}\n`);
    process.exit(1);
  }
}

await main();
