// The Vercel AI SDK (`ai`) with its OpenAI-compatible provider (`@ai-sdk/openai-compatible`),
// unchanged, against Tessera's `/openai/v1`.
//
// Reads OPENAI_BASE_URL, OPENAI_API_KEY, TESSERA_MODEL and TESSERA_EMBEDDING_MODEL (trust
// the server's certificate with NODE_EXTRA_CA_CERTS), runs generateText, streamText,
// generateObject and generateText with Output.object (zod schemas, sent as a strict
// `json_schema`), a tool call with a zod input schema run and continued over two steps, and
// embedMany; prints a JSON summary on stdout and exits 1 with the failing checks on stderr.
//
// The embedded model is tiny: the checks assert the protocol and the shapes (non-empty
// text, finish reasons, usage, tool inputs and objects that validate), not answer quality.
//
// Usage: NODE_EXTRA_CA_CERTS=cert.pem OPENAI_BASE_URL=https://localhost:8443/openai/v1 \
//   OPENAI_API_KEY=tsk_… TESSERA_MODEL=local/smollm2-135m-instruct \
//   TESSERA_EMBEDDING_MODEL=all-MiniLM-L6-v2 node ai-sdk.mjs

import { APICallError, Output, embedMany, generateObject, generateText, stepCountIs, streamText, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const MAX_TOKENS = 24;

function env(name) {
  const value = process.env[name];
  if (!value) {
    process.stderr.write(`ai-sdk check: ${name} is not set\n`);
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
  expect(usage.inputTokens > 0, `${what}: inputTokens = ${usage.inputTokens}`);
  expect(usage.outputTokens > 0, `${what}: outputTokens = ${usage.outputTokens}`);
  expect(
    usage.totalTokens === usage.inputTokens + usage.outputTokens,
    `${what}: totalTokens ${usage.totalTokens} is not the sum`,
  );
  return { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, totalTokens: usage.totalTokens };
}

function finished(reason, allowed, what) {
  expect(allowed.includes(reason), `${what}: finishReason ${reason}`);
  return reason;
}

async function checkGenerateText(model) {
  const result = await generateText({
    model,
    system: 'You are a helpful assistant.',
    prompt: 'Name three colours.',
    maxOutputTokens: MAX_TOKENS,
    temperature: 0,
    maxRetries: 0,
  });
  expect(result.text.length > 0, 'empty text');
  return {
    text: result.text,
    finishReason: finished(result.finishReason, ['stop', 'length'], 'generateText'),
    usage: usageCounts(result.usage, 'generateText'),
  };
}

async function checkStreamText(model) {
  const errors = [];
  const result = streamText({
    model,
    prompt: 'Say hello.',
    maxOutputTokens: MAX_TOKENS,
    temperature: 0,
    maxRetries: 0,
    onError: ({ error }) => errors.push(error),
  });
  const deltas = [];
  for await (const delta of result.textStream) deltas.push(delta);
  const [text, finishReason, usage] = await Promise.all([result.text, result.finishReason, result.usage]);
  expect(errors.length === 0, `stream errors: ${errors.map(String).join('; ')}`);
  expect(deltas.length >= 1 && text.length > 0, `deltas ${deltas.length}, text ${JSON.stringify(text)}`);
  expect(deltas.join('') === text, 'the deltas do not add up to the text');
  return {
    deltas: deltas.length,
    text,
    finishReason: finished(finishReason, ['stop', 'length'], 'streamText'),
    // The usage arrives in the stream's last chunk (`includeUsage: true`).
    usage: usageCounts(usage, 'streamText'),
  };
}

const City = z.object({ name: z.string(), country: z.string() });

async function checkGenerateObject(model) {
  const result = await generateObject({
    model,
    schema: City,
    schemaName: 'city',
    prompt: 'Give a city and its country as JSON.',
    maxOutputTokens: 64,
    temperature: 0,
    maxRetries: 0,
  });
  expect(City.safeParse(result.object).success, `object ${JSON.stringify(result.object)}`);
  const request = JSON.parse(result.request?.body ?? '{}');
  const viaOutput = await generateText({
    model,
    output: Output.object({ schema: City, name: 'city' }),
    prompt: 'Give another city and its country as JSON.',
    maxOutputTokens: 64,
    temperature: 0,
    maxRetries: 0,
  });
  expect(City.safeParse(viaOutput.output).success, `Output.object ${JSON.stringify(viaOutput.output)}`);
  return {
    object: result.object,
    finishReason: finished(result.finishReason, ['stop'], 'generateObject'),
    usage: usageCounts(result.usage, 'generateObject'),
    responseFormat: request.response_format?.type,
    outputObject: viaOutput.output,
  };
}

async function checkTool(model) {
  const executed = [];
  const getWeather = tool({
    description: 'The current weather in a city.',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      executed.push(city);
      return { city, weather: 'sunny, 21 °C' };
    },
  });
  const result = await generateText({
    model,
    system: 'Use the get_weather tool to answer questions about the weather.',
    prompt: 'What is the weather in Paris?',
    tools: { get_weather: getWeather },
    // The tool call, then the answer that reads its result.
    stopWhen: stepCountIs(2),
    prepareStep: ({ stepNumber }) => (stepNumber > 0 ? { toolChoice: 'none' } : {}),
    maxOutputTokens: 48,
    temperature: 0,
    maxRetries: 0,
  });
  expect(result.steps.length === 2, `${result.steps.length} steps`);
  const [first, second] = result.steps;
  finished(first.finishReason, ['tool-calls'], 'tool step');
  expect(first.toolCalls.length >= 1, 'no tool call');
  const call = first.toolCalls[0];
  expect(call.toolName === 'get_weather', `tool ${call.toolName}`);
  expect(!call.invalid && z.object({ city: z.string() }).safeParse(call.input).success, `input ${JSON.stringify(call.input)}`);
  expect(first.toolResults.length >= 1 && executed.length >= 1, 'the tool did not run');
  expect(second.text.length > 0, 'empty answer after the tool result');
  finished(second.finishReason, ['stop', 'length'], 'answer step');

  // The same call streamed: tool-call deltas the provider assembles.
  const streamed = streamText({
    model,
    system: 'Use the get_weather tool to answer questions about the weather.',
    prompt: 'What is the weather in Paris?',
    tools: { get_weather: tool({ description: getWeather.description, inputSchema: z.object({ city: z.string() }) }) },
    maxOutputTokens: 48,
    temperature: 0,
    maxRetries: 0,
  });
  const streamedCalls = await streamed.toolCalls;
  expect(streamedCalls.length >= 1 && streamedCalls[0].toolName === 'get_weather', `streamed tool calls ${JSON.stringify(streamedCalls)}`);
  expect(z.object({ city: z.string() }).safeParse(streamedCalls[0].input).success, `streamed input ${JSON.stringify(streamedCalls[0].input)}`);
  finished(await streamed.finishReason, ['tool-calls'], 'streamed tool step');
  usageCounts(await streamed.usage, 'streamed tool step');
  return {
    toolCall: { name: call.toolName, input: call.input },
    streamedToolCall: { name: streamedCalls[0].toolName, input: streamedCalls[0].input },
    answer: second.text,
    usage: usageCounts(result.totalUsage, 'tool round trip'),
  };
}

async function checkEmbeddings(provider, embeddingModel) {
  const { embeddings, usage } = await embedMany({
    model: provider.embeddingModel(embeddingModel),
    values: ['The cat sat on the mat.', 'Tessera answers questions.'],
    maxRetries: 0,
  });
  expect(embeddings.length === 2, `${embeddings.length} embeddings`);
  for (const vector of embeddings) {
    expect(vector.length === 384 && vector.every(Number.isFinite), `vector of ${vector.length}`);
  }
  expect(usage.tokens > 0, `usage ${JSON.stringify(usage)}`);
  return { dimensions: embeddings[0].length, tokens: usage.tokens };
}

async function checkErrors(provider) {
  // An OpenAI-shaped error parsed by the provider's error schema (no generation runs).
  try {
    await generateText({ model: provider('no-such-model'), prompt: 'Hi', maxOutputTokens: 4, maxRetries: 0 });
    throw new CheckFailed('an unknown model was accepted');
  } catch (error) {
    if (!APICallError.isInstance(error)) throw error;
    expect(error.statusCode === 404, `unknown model: status ${error.statusCode}, body ${error.responseBody}`);
    expect(error.data?.error?.code === 'model_not_found', `unknown model: data ${JSON.stringify(error.data)}`);
    expect(error.isRetryable === false, 'unknown model: retryable');
    return { unknownModel: { status: error.statusCode, code: error.data.error.code, message: error.message } };
  }
}

async function main() {
  const baseURL = env('OPENAI_BASE_URL');
  const apiKey = env('OPENAI_API_KEY');
  const modelId = env('TESSERA_MODEL');
  const embeddingModel = env('TESSERA_EMBEDDING_MODEL');
  const provider = createOpenAICompatible({
    name: 'tessera',
    baseURL,
    apiKey,
    supportsStructuredOutputs: true,
    includeUsage: true,
  });
  const model = provider(modelId);
  const checks = {
    generateText: () => checkGenerateText(model),
    streamText: () => checkStreamText(model),
    generateObject: () => checkGenerateObject(model),
    tool: () => checkTool(model),
    embedMany: () => checkEmbeddings(provider, embeddingModel),
    errors: () => checkErrors(provider),
  };
  const summary = {
    client: 'ai-sdk',
    versions: {
      ai: require('ai/package.json').version,
      '@ai-sdk/openai-compatible': require('@ai-sdk/openai-compatible/package.json').version,
    },
  };
  const failures = [];
  for (const [name, run] of Object.entries(checks)) {
    try {
      summary[name] = await run();
    } catch (error) {
      let detail = error instanceof CheckFailed ? error.message : (error?.stack ?? String(error));
      if (APICallError.isInstance(error)) {
        detail += `\nstatus ${error.statusCode}, request ${JSON.stringify(error.requestBodyValues)}, response ${error.responseBody}`;
      }
      if (error?.cause) detail += `\ncause: ${error.cause?.stack ?? error.cause}`;
      if (error?.text !== undefined) detail += `\ntext: ${JSON.stringify(error.text)}`;
      failures.push(name);
      summary[name] = { error: String(error?.message ?? error) };
      process.stderr.write(`ai-sdk check \`${name}\` failed: ${detail}\n`);
    }
  }
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  if (failures.length) {
    process.stderr.write(`ai-sdk: ${failures.length} check(s) failed: ${failures.join(', ')}\n`);
    process.exit(1);
  }
}

await main();
