// contextd's model gateway for the OpenAI Responses API (POST /v1/responses) against the scripted
// Responses double (lib/responses_double.mjs), driven by raw fetch as Codex drives it (store
// false, reasoning.encrypted_content included, the whole input resent each turn): a conversation
// whose branch (branch_create ... branch_return, called over MCP) the double sees folded on the
// next request (branch_create's function_call_output is the summary, every call_id answered, the
// turn that opened it and every reasoning item before it byte for byte, so the double's binding
// of encrypted_content to the items before it holds on every later request), JSON and SSE; a
// secret in a function_call_output the double never sees; usage read from the answer and the SSE
// stream's response.completed; requests naming previous_response_id forwarded byte for byte and
// counted; errors in the OpenAI shape. Every wait is on an event, bounded by `within` or the
// test's timeout.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startResponsesDouble, toolOutputFor, outputText } from './lib/responses_double.mjs';
import { startGateway, within } from './lib/model_upstream.mjs';
import { branchIdIn } from './lib/transcript.mjs';
import { BINARY, connectHttp, textOf } from '../e2e/harness.mjs';

const missing = !existsSync(BINARY) ? `contextd is not built at ${BINARY}` : null;
const opts = (timeout) => ({ skip: missing ?? false, timeout });

const MODEL = 'gpt-double';
const KEY = 'sk-proj-VerbatimOpenAIKey_0123456789abcdef';
const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
// A GitHub token shape (the scrubber's github-pat rule).
const SECRET = 'ghp_a7Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'.slice(0, 40);

const TOOLS = [
  { type: 'function', name: 'contextd__branch_create', description: 'Open a branch',
    parameters: { type: 'object', properties: { description: { type: 'string' }, prompt: { type: 'string' } } } },
  { type: 'function', name: 'contextd__branch_return', description: 'Return from the branch',
    parameters: { type: 'object', properties: { message: { type: 'string' } } } },
  { type: 'function', name: 'read_file', description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } } } },
];

// The samples of `name` in a Prometheus text body whose labels include every one of `labels`.
function metric(text, name, labels) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const [head, value] = line.split(/\s+/);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`))) sum = (sum ?? 0) + Number(value);
  }
  return sum;
}

// Reads /metrics until `ready(text)` holds (a request is recorded once its answer ended, which
// the client may see first); bounded by `within`.
async function metricsWhen(origin, ready) {
  const poll = async () => {
    for (;;) {
      const text = await (await fetch(`${origin}/metrics`)).text();
      if (ready(text)) return text;
    }
  };
  return within(poll(), 10000, 'the model request in /metrics');
}

// POSTs a Responses request through the gateway; returns the final response object, read from
// the JSON body or (stream) from the SSE stream's response.completed event.
async function create(origin, body) {
  const res = await fetch(`${origin}/v1/responses`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, text);
  if (!body.stream) return JSON.parse(text);
  assert.match(res.headers.get('content-type'), /text\/event-stream/);
  const events = text.split('\n\n').filter(Boolean).map((chunk) => {
    const data = chunk.split('\n').find((l) => l.startsWith('data: '));
    return JSON.parse(data.slice(6));
  });
  const done = events.find((e) => e.type === 'response.completed');
  assert.ok(done, text.slice(0, 500));
  return done.response;
}

// Fails unless every function_call in `input` is answered by a function_call_output after it.
function assertPaired(input) {
  const calls = input.filter((i) => i.type === 'function_call').map((i) => i.call_id);
  const outputs = input.filter((i) => i.type === 'function_call_output').map((i) => i.call_id);
  assert.deepEqual([...outputs].sort(), [...calls].sort(), JSON.stringify(input.map((i) => [i.type, i.call_id])));
  for (const id of calls) {
    const at = input.findIndex((i) => i.type === 'function_call' && i.call_id === id);
    const answer = input.findIndex((i) => i.type === 'function_call_output' && i.call_id === id);
    assert.ok(answer > at, `call ${id} answered before it was made`);
  }
}

// The raw JSON text of item `index` of the `input` array of a request body as it was sent.
function rawItems(bodyText) {
  const items = JSON.parse(bodyText).input;
  return items.map((item) => JSON.stringify(item));
}

test('a branch folds in Responses form: the summary as branch_create\'s output, reasoning replayed unchanged, a secret never sent', opts(90000), async () => {
  const createArgs = { description: 'find the port', prompt: 'read config.txt and report the port' };
  const returnArgs = { message: 'the port is 8080 (config.txt line 1)' };
  const double = await startResponsesDouble({ script: [
    { calls: [{ call_id: 'call_create', name: 'contextd__branch_create', arguments: createArgs },
      { call_id: 'call_read', name: 'read_file', arguments: { path: '/w/config.txt' } }] },
    { calls: [{ call_id: 'call_return', name: 'contextd__branch_return', arguments: returnArgs }] },
    { text: 'The port is 8080.' },
    { text: 'You are welcome.' },
  ] });
  const gw = await startGateway({ openai: { base_url: double.url } });
  const { client: mcp } = await connectHttp(gw.url);
  const base = { model: MODEL, instructions: 'You are a test.', tools: TOOLS, store: false,
    include: ['reasoning.encrypted_content'], parallel_tool_calls: true };
  try {
    const input = [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Find the port.' }] },
    ];
    const r1 = await create(gw.origin, { ...base, input });
    assert.deepEqual(r1.output.map((o) => o.type), ['reasoning', 'function_call', 'function_call']);
    const created = await mcp.callTool({ name: 'branch_create', arguments: createArgs });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    assert.ok(branch, textOf(created));
    input.push(...r1.output);
    input.push({ type: 'function_call_output', call_id: 'call_create', output: textOf(created) });
    input.push({ type: 'function_call_output', call_id: 'call_read',
      output: `port = 8080\ngithub_token = ${SECRET}\n${'# padding\n'.repeat(200)}` });

    // Streamed: the answer comes back as SSE through the gateway.
    const r2 = await create(gw.origin, { ...base, input, stream: true });
    assert.deepEqual(r2.output.map((o) => [o.type, o.call_id ?? null]),
      [['reasoning', null], ['function_call', 'call_return']]);
    const seen2 = double.responseRequests().at(-1);
    assert.ok(!seen2.bodyText.includes(SECRET), 'the secret reached the model');
    assert.match(outputText(toolOutputFor(seen2.json, 'call_read')), /github_token = \[REDACTED:github-pat:ghp_\]/);
    assert.equal(outputText(toolOutputFor(seen2.json, 'call_create')), textOf(created));

    const returned = await mcp.callTool({ name: 'branch_return', arguments: returnArgs });
    assert.ok(!returned.isError, textOf(returned));
    input.push(...r2.output);
    input.push({ type: 'function_call_output', call_id: 'call_return', output: textOf(returned) });

    const r3 = await create(gw.origin, { ...base, input });
    assert.equal(r3.output.at(-1).content[0].text, 'The port is 8080.');
    const seen3 = double.responseRequests().at(-1);
    // Folded: the turn that opened the branch (its reasoning item and both calls), then one
    // function_call_output per call of it: the summary for branch_create, a stub for the read.
    const got = seen3.json.input;
    assert.deepEqual(got.map((i) => [i.type, i.role ?? i.call_id ?? null]), [
      ['message', 'developer'], ['message', 'user'], ['reasoning', null],
      ['function_call', 'call_create'], ['function_call', 'call_read'],
      ['function_call_output', 'call_create'], ['function_call_output', 'call_read']]);
    assert.match(got[5].output, new RegExp(`^\\[branch ${branch} returned; \\d+ tokens folded away\\]\\n`));
    assert.ok(got[5].output.includes(returnArgs.message), got[5].output);
    assert.equal(got[6].output, '(folded with the branch)');
    assertPaired(got);
    assert.ok(!seen3.bodyText.includes('call_return') && !seen3.bodyText.includes('github_token'));
    // The create turn's items, its reasoning item first, are byte for byte what was sent before.
    assert.deepEqual(rawItems(seen3.bodyText).slice(0, 5), rawItems(seen2.bodyText).slice(0, 5));
    const cut = seen2.bodyText.indexOf('{"type":"function_call_output"');
    assert.ok(cut > 0);
    assert.equal(seen3.bodyText.slice(0, cut), seen2.bodyText.slice(0, cut));

    // The next request folds to the same bytes; the reasoning item the double produced for the
    // folded request (bound to the folded prefix) verifies: the model sees the conversation grow.
    input.push(...r3.output);
    input.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Thanks.' }] });
    const r4 = await create(gw.origin, { ...base, input, stream: true });
    assert.equal(r4.output.at(-1).content[0].text, 'You are welcome.');
    const seen4 = double.responseRequests().at(-1);
    const prefix3 = seen3.bodyText.slice(0, seen3.bodyText.lastIndexOf('}]'));
    assert.ok(seen4.bodyText.startsWith(prefix3), `not a continuation:\n${seen4.bodyText.slice(0, 2000)}`);
    const replayed = seen4.json.input.filter((i) => i.type === 'reasoning');
    assert.equal(replayed.length, 2, 'the create turn\'s reasoning and the folded request\'s');
    assert.deepEqual(replayed.map((r) => r.encrypted_content),
      [r1.output[0].encrypted_content, r3.output[0].encrypted_content]);
    assertPaired(seen4.json.input);
    assert.ok(!seen4.bodyText.includes(SECRET));
    assert.deepEqual(double.problems, [], 'every request was valid (reasoning verified, calls paired)');
    assert.equal(double.responseRequests().length, 4);

    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_responses' }) === 4);
    assert.equal(metric(text, 'contextd_model_requests_total', { api: 'openai_responses', status: '200' }), 4);
    assert.equal(metric(text, 'contextd_model_folds_total', { api: 'openai_responses' }), 1);
    assert.equal(metric(text, 'contextd_model_redacted_blocks_total', { api: 'openai_responses' }), 1);
    // The provider's usage, from the JSON bodies and the streams' response.completed alike.
    const usage = double.turns.map((t) => t.response.usage);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_responses', kind: 'input' }),
      usage.reduce((n, u) => n + u.input_tokens, 0));
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_responses', kind: 'output' }),
      usage.reduce((n, u) => n + u.output_tokens, 0));
    assert.ok(!gw.stderr().includes(KEY), 'the key is never logged');
  } finally {
    await mcp.close();
    await gw.stop();
    await double.close();
  }
});

test('previous_response_id and string inputs go as sent; /v1/models and /v1/responses/<id> pass through; errors OpenAI-shaped', opts(60000), async () => {
  const double = await startResponsesDouble({ script: [
    { text: 'one' }, { text: 'two', usage: { input_tokens: 40, output_tokens: 2 } }, { text: 'three' },
  ] });
  const gw = await startGateway({ openai: { base_url: double.url } });
  try {
    // Hand-written (blanks, escapes, a secret-shaped string): the history is on the provider's
    // side, so nothing of this body is the conversation: it arrives byte for byte.
    const chained = '{ "model" : "gpt-double", "previous_response_id": "resp_abc",\n' +
      '  "input": [ {"type":"function_call_output","call_id":"call_1","output":"token ' + SECRET + ' caf\\u00e9"} ],\n' +
      '  "store": true, "future_field": [1.0, null] }';
    const res = await fetch(`${gw.origin}/v1/responses`, { method: 'POST', headers, body: chained });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).previous_response_id, 'resp_abc');
    assert.equal(double.requests.at(-1).bodyText, chained);

    const plain = '{"model":"gpt-double", "input": "Say \\"hi\\".", "stream": true}';
    const streamed = await fetch(`${gw.origin}/v1/responses`, { method: 'POST', headers, body: plain });
    assert.equal(streamed.status, 200);
    assert.match(await streamed.text(), /event: response\.completed/);
    assert.equal(double.requests.at(-1).bodyText, plain);
    assert.equal(double.requests.at(-1).url, '/v1/responses');

    const models = await fetch(`${gw.origin}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(models.status, 200);
    assert.equal((await models.json()).data[0].id, 'double-model');
    // Other paths under /v1/responses are not folded: forwarded as sent (the double knows none).
    const byId = await fetch(`${gw.origin}/v1/responses/resp_abc?include=x`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(byId.status, 404);
    assert.equal(double.requests.at(-1).url, '/v1/responses/resp_abc?include=x');

    // Malformed, or not a Responses request: 400 from contextd in the OpenAI shape, nothing sent.
    const seen = double.requests.length;
    for (const [body, message] of [['{"input": [', /not a Responses request: invalid JSON at byte \d+/],
      ['{"model":"m","input":{"role":"user"}}', /input: a string or an array of items is required/]]) {
      const bad = await fetch(`${gw.origin}/v1/responses`, { method: 'POST', headers, body });
      const text = await bad.text();
      assert.equal(bad.status, 400, text);
      const error = JSON.parse(text).error;
      assert.equal(error.type, 'invalid_request_error');
      assert.match(error.message, message);
    }
    assert.equal(double.requests.length, seen);

    // A third, ordinary request: folded API, nothing unfoldable about it.
    const r = await fetch(`${gw.origin}/v1/responses`, { method: 'POST', headers,
      body: JSON.stringify({ model: MODEL, input: [{ role: 'user', content: 'hello' }] }) });
    assert.equal(r.status, 200);

    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_responses' }) === 3);
    assert.equal(metric(text, 'contextd_model_unfoldable_requests_total', { api: 'openai_responses', reason: 'previous_response_id' }), 1);
    assert.equal(metric(text, 'contextd_model_unfoldable_requests_total', { api: 'openai_responses' }), 1);
    assert.equal(metric(text, 'contextd_model_requests_total', { api: 'openai', status: '404' }), 1);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_responses', kind: 'input' }),
      double.turns.reduce((n, t) => n + t.response.usage.input_tokens, 0));

    // The standalone compaction takes the conversation as /v1/responses does: redacted (and
    // folded) the same way, so its summary is written from what the model was sent.
    const compact = await fetch(`${gw.origin}/v1/responses/compact`, { method: 'POST', headers,
      body: JSON.stringify({ model: MODEL, input: [{ role: 'user', content: 'task' },
        { type: 'function_call', call_id: 'c9', name: 'read_file', arguments: '{}' },
        { type: 'function_call_output', call_id: 'c9', output: `token ${SECRET}` }] }) });
    assert.equal(compact.status, 200, await compact.clone().text());
    assert.equal((await compact.json()).object, 'response.compaction');
    assert.equal(double.requests.at(-1).url, '/v1/responses/compact');
    assert.ok(!double.requests.at(-1).bodyText.includes(SECRET), 'the compaction carried the secret');
    assert.deepEqual(double.problems, []);
  } finally {
    await gw.stop();
    await double.close();
  }
});
