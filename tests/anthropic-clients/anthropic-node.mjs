// The official `@anthropic-ai/sdk` npm package, unchanged, against Tessera's `/anthropic/v1`.
//
// Reads ANTHROPIC_BASE_URL (the server's `/anthropic`), ANTHROPIC_API_KEY (a `tsk_…` key,
// sent as `x-api-key`) and TESSERA_MODEL (trust the server's certificate with
// NODE_EXTRA_CA_CERTS), runs each check through the SDK's own request building, response
// parsing and stream accumulation (messages, the stream helper and raw events, tools, token
// counts, models, typed errors), prints a JSON summary on stdout and exits 1 with the
// failing checks on stderr.
//
// The embedded model is tiny: the checks assert the protocol and the shapes, not answer
// quality.
//
// Usage: NODE_EXTRA_CA_CERTS=cert.pem ANTHROPIC_BASE_URL=https://localhost:8443/anthropic \
//   ANTHROPIC_API_KEY=tsk_… TESSERA_MODEL=local/smollm2-135m-instruct node anthropic-node.mjs

import Anthropic, { APIError, AuthenticationError, BadRequestError, NotFoundError } from '@anthropic-ai/sdk';
import { VERSION } from '@anthropic-ai/sdk/version';

const MAX_TOKENS = 16;
const QUESTION = { role: 'user', content: 'What is the capital of France?' };
const WEATHER = {
  name: 'get_weather',
  description: 'The current weather in a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', description: 'The city' } },
    required: ['city'],
  },
};

function env(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`anthropic-node check: ${name} is not set\n`);
    process.exit(2);
  }
  return value;
}

class CheckFailed extends Error {}

function expect(condition, message) {
  if (!condition) throw new CheckFailed(message);
}

function usageOf(usage, what) {
  expect(usage.input_tokens + (usage.cache_read_input_tokens ?? 0) > 0, `${what}: no input tokens`);
  expect(usage.output_tokens > 0, `${what}: no output tokens`);
  return { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens };
}

async function checkCreate(client, model) {
  const message = await client.messages.create({
    model,
    max_tokens: MAX_TOKENS,
    system: [{ type: 'text', text: 'Answer in one short sentence.', cache_control: { type: 'ephemeral' } }],
    messages: [QUESTION],
  });
  expect(message.type === 'message' && message.role === 'assistant', `shape: ${JSON.stringify(message)}`);
  expect(message.content.length === 1 && message.content[0].type === 'text', `content: ${JSON.stringify(message.content)}`);
  expect(message.content[0].text.length > 0, 'empty text');
  expect(['end_turn', 'max_tokens'].includes(message.stop_reason), `stop_reason: ${message.stop_reason}`);
  return { text: message.content[0].text, usage: usageOf(message.usage, 'create') };
}

async function checkStream(client, model) {
  // The SDK's stream helper: text events, then the message it accumulated.
  let text = '';
  const stream = client.messages.stream({ model, max_tokens: MAX_TOKENS, messages: [QUESTION] });
  stream.on('text', (delta) => {
    text += delta;
  });
  const final = await stream.finalMessage();
  expect(text.length > 0, 'no text streamed');
  expect(final.content[0].type === 'text' && final.content[0].text === text, `final: ${JSON.stringify(final)}`);
  const usage = usageOf(final.usage, 'stream');
  // The raw events, in Anthropic's order.
  const events = [];
  const raw = await client.messages.create({ model, max_tokens: 4, messages: [QUESTION], stream: true });
  for await (const event of raw) events.push(event.type);
  expect(events[0] === 'message_start' && events.at(-1) === 'message_stop', `events: ${events}`);
  return { text, usage, events };
}

async function checkTools(client, model) {
  const ask = { role: 'user', content: 'What is the weather in Paris?' };
  const first = await client.messages.create({
    model,
    max_tokens: 40,
    tools: [WEATHER],
    tool_choice: { type: 'tool', name: 'get_weather' },
    messages: [ask],
  });
  expect(first.stop_reason === 'tool_use', `stop_reason: ${first.stop_reason}`);
  const call = first.content.find((block) => block.type === 'tool_use');
  expect(call && call.name === 'get_weather', `no get_weather call: ${JSON.stringify(first.content)}`);
  expect(typeof call.input.city === 'string', `input: ${JSON.stringify(call.input)}`);
  const second = await client.messages.create({
    model,
    max_tokens: MAX_TOKENS,
    tools: [WEATHER],
    messages: [
      ask,
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Sunny, 21 C' }] },
    ],
  });
  expect(second.content[0]?.type === 'text', `answer: ${JSON.stringify(second.content)}`);
  // Streamed, the helper accumulates the call's input from its JSON pieces.
  const streamed = await client.messages
    .stream({ model, max_tokens: 40, tools: [WEATHER], tool_choice: { type: 'any' }, messages: [ask] })
    .finalMessage();
  const streamedCall = streamed.content.find((block) => block.type === 'tool_use');
  expect(typeof streamedCall?.input?.city === 'string', `streamed: ${JSON.stringify(streamed.content)}`);
  return { call: call.input, answer: second.content[0].text, streamed: streamedCall.input };
}

async function checkCountTokens(client, model) {
  const plain = await client.messages.countTokens({ model, messages: [QUESTION] });
  const withTools = await client.messages.countTokens({ model, messages: [QUESTION], tools: [WEATHER] });
  expect(plain.input_tokens > 0 && withTools.input_tokens > plain.input_tokens, `counts: ${plain.input_tokens}, ${withTools.input_tokens}`);
  return { plain: plain.input_tokens, with_tools: withTools.input_tokens };
}

async function checkModels(client, model) {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  expect(ids.includes(model), `models.list() lacks ${model}: ${ids}`);
  const one = await client.models.retrieve(model);
  expect(one.id === model && one.type === 'model', `models.retrieve: ${JSON.stringify(one)}`);
  return { ids, display_name: one.display_name };
}

async function checkErrors(client, model) {
  const seen = {};
  const badKey = client.withOptions({ apiKey: `tsk_${'0'.repeat(43)}` });
  try {
    await badKey.models.list();
    throw new CheckFailed('an unknown key was accepted');
  } catch (error) {
    expect(error instanceof AuthenticationError, `unknown key: ${error}`);
    seen.unknown_key = { status: error.status, type: error.error?.error?.type };
  }
  try {
    await client.messages.create({ model, max_tokens: 0, messages: [QUESTION] });
    throw new CheckFailed('max_tokens=0 was accepted');
  } catch (error) {
    expect(error instanceof BadRequestError, `max_tokens=0: ${error}`);
    expect(JSON.stringify(error.error).includes('max_tokens'), `max_tokens=0: ${JSON.stringify(error.error)}`);
    seen.max_tokens = { status: error.status, type: error.error?.error?.type };
  }
  try {
    await client.messages.create({ model: 'claude-no-such-model', max_tokens: 4, messages: [QUESTION] });
    throw new CheckFailed('an unknown model was accepted');
  } catch (error) {
    expect(error instanceof NotFoundError, `unknown model: ${error}`);
    seen.unknown_model = { status: error.status, type: error.error?.error?.type };
  }
  return seen;
}

async function main() {
  const baseURL = env('ANTHROPIC_BASE_URL');
  const apiKey = env('ANTHROPIC_API_KEY');
  const model = env('TESSERA_MODEL');
  // No retries: a failure is reported as the server answered it.
  const client = new Anthropic({ baseURL, apiKey, maxRetries: 0, timeout: 300_000 });
  const checks = {
    create: () => checkCreate(client, model),
    stream: () => checkStream(client, model),
    tools: () => checkTools(client, model),
    count_tokens: () => checkCountTokens(client, model),
    models: () => checkModels(client, model),
    errors: () => checkErrors(client, model),
  };
  const summary = { client: 'anthropic-node', version: VERSION };
  const failures = [];
  for (const [name, run] of Object.entries(checks)) {
    try {
      summary[name] = await run();
    } catch (error) {
      let detail = error instanceof CheckFailed ? error.message : (error?.stack ?? String(error));
      if (error instanceof APIError) detail += `\nstatus ${error.status}, body ${JSON.stringify(error.error)}`;
      failures.push(name);
      summary[name] = { error: String(error?.message ?? error) };
      process.stderr.write(`anthropic-node check \`${name}\` failed: ${detail}\n`);
    }
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (failures.length) {
    process.stderr.write(`anthropic-node: ${failures.length} check(s) failed: ${failures.join(', ')}\n`);
    process.exit(1);
  }
}

await main();
