// contextd's model gateway for OpenAI Chat Completions (POST /v1/chat/completions, GET /v1/models)
// driven by the official openai TypeScript SDK (tools/npm/agents) and by raw fetch, against the
// scripted Chat double (lib/chat_double.mjs) or a hand-written upstream: answers relayed as they
// arrive, JSON and SSE (with `stream_options.include_usage` the usage chunk comes through and is
// recorded); /v1/models routed by the request's headers; a conversation whose branch
// (branch_create ... branch_return, called over MCP) the double sees folded on the next request,
// every tool call still answered, the prefix unchanged, and a secret in a tool result it never
// sees; the isolated branch view (issue 33: while the branch is open the double gets the opening,
// one user message opening the branch and the branch's own turns, not the parent's; after the
// return the parent, folded); errors in the OpenAI shape, the provider's relayed byte for byte.
// Every wait is on an event, bounded by `within` or the test's timeout.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startChatDouble } from './lib/chat_double.mjs';
import { startUpstream, closedPort, startGateway, within } from './lib/model_upstream.mjs';
import { branchIdIn } from './lib/transcript.mjs';
import { BINARY, connectHttp, textOf } from '../e2e/harness.mjs';

const sdkEntry = new URL('../../tools/npm/agents/node_modules/openai/index.mjs', import.meta.url);
const missing = !existsSync(BINARY) ? `contextd is not built at ${BINARY}`
  : !existsSync(sdkEntry) ? 'the openai SDK is not installed (scripts/install-deps.sh installs tools/npm/agents)'
    : null;
const OpenAI = missing ? null : (await import(sdkEntry)).default;
const opts = (timeout) => ({ skip: missing ?? false, timeout });

const MODEL = 'gpt-double';
const KEY = 'sk-proj-VerbatimOpenAIKey_0123456789abcdef';
const hello = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hello.' }];

function sdk(origin, extra = {}) {
  return new OpenAI({ apiKey: KEY, baseURL: `${origin}/v1`, maxRetries: 0, timeout: 15000, ...extra });
}

// The OpenAI error shape, parsed; fails the test when `text` is not it.
function openAiError(text) {
  let body;
  assert.doesNotThrow(() => { body = JSON.parse(text); }, `not JSON: ${text}`);
  assert.deepEqual(Object.keys(body), ['error'], text);
  assert.equal(typeof body.error.message, 'string', text);
  assert.equal(typeof body.error.type, 'string', text);
  assert.ok('param' in body.error && 'code' in body.error, text);
  return body.error;
}

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

// Reads /metrics until `ready(text)` holds (the gateway records a request once its answer
// ended, which the client may see first); bounded by `within`.
async function metricsWhen(origin, ready) {
  const poll = async () => {
    for (;;) {
      const text = await (await fetch(`${origin}/metrics`)).text();
      if (ready(text)) return text;
    }
  };
  return within(poll(), 10000, 'the model request in /metrics');
}

function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

test('openai SDK through the gateway: create, a stream with include_usage, models.list; /v1/models routed by headers', opts(60000), async () => {
  const double = await startChatDouble({ script: [
    { text: 'Hello from the double.' },
    { text: 'Streamed hello.', usage: { prompt_tokens: 2048, cached_tokens: 1024, completion_tokens: 9 } },
  ] });
  const anthropic = await startUpstream({
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [{ type: 'model', id: 'claude-x', display_name: 'C', created_at: '2026-01-01T00:00:00Z' }], has_more: false }));
    },
  });
  const gw = await startGateway({ anthropic: { base_url: anthropic.url }, openai: { base_url: double.url } });
  try {
    const client = sdk(gw.origin);
    const created = await client.chat.completions.create({ model: MODEL, messages: hello });
    assert.equal(created.object, 'chat.completion');
    assert.equal(created.choices[0].message.content, 'Hello from the double.');
    assert.equal(created.choices[0].finish_reason, 'stop');
    assert.equal(created.usage.completion_tokens, 12);
    assert.equal(created._request_id, 'req_chat_0', 'the x-request-id header is relayed');
    const first = double.requests[0];
    assert.equal(first.url, '/v1/chat/completions');
    assert.equal(first.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual(first.json.messages, hello);

    const stream = await client.chat.completions.create({ model: MODEL, messages: hello, stream: true, stream_options: { include_usage: true } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'Streamed hello.');
    assert.equal(chunks.at(-2).choices[0].finish_reason, 'stop');
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.equal(last.usage.prompt_tokens, 2048);
    assert.equal(last.usage.prompt_tokens_details.cached_tokens, 1024);
    assert.equal(last.usage.completion_tokens, 9);
    assert.equal(double.requests[1].json.stream_options.include_usage, true);

    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, [MODEL]);
    assert.equal(double.requests[2].method, 'GET');
    assert.equal(double.requests[2].url, '/v1/models');
    assert.equal(double.requests[2].headers.authorization, `Bearer ${KEY}`);
    // An Anthropic client's /v1/models goes to the Anthropic upstream (bearer or not).
    for (const headers of [{ 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      { authorization: 'Bearer sk-ant-oat01-x', 'anthropic-version': '2023-06-01' }]) {
      const res = await fetch(`${gw.origin}/v1/models?limit=5`, { headers });
      assert.equal(res.status, 200);
      assert.equal((await res.json()).data[0].id, 'claude-x');
    }
    assert.deepEqual(anthropic.requests.map((r) => r.url), ['/v1/models?limit=5', '/v1/models?limit=5']);
    assert.equal(double.requests.length, 3);

    // The provider's usage is recorded: cached tokens as cache reads, the rest as input.
    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_chat' }) === 2);
    assert.equal(metric(text, 'contextd_model_requests_total', { api: 'openai_chat', status: '200' }), 2);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_chat', kind: 'cache_read' }), 1024);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_chat', kind: 'output' }), 21);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { api: 'openai_chat', kind: 'input' }),
      1024 + Math.ceil(first.raw.length / 4));
    assert.ok(!gw.stderr().includes(KEY), 'the key is never logged');
    assert.deepEqual(double.problems, []);
  } finally {
    await gw.stop();
    await double.close();
    await anthropic.close();
  }
});

test('SDK stream: the first chunk arrives while the upstream is still holding the rest', opts(30000), async () => {
  const release = deferred();
  let finished = false;
  const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: MODEL,
    choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const upstream = await startUpstream({
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: 'Hel' }));
      release.promise.then(() => {
        res.write(chunk({ content: 'lo.' }));
        res.write(chunk({}, 'stop'));
        res.end('data: [DONE]\n\n');
        finished = true;
      });
    },
  });
  const gw = await startGateway({ openai: { base_url: `${upstream.url}/v1` } });
  try {
    const stream = await sdk(gw.origin).chat.completions.create({ model: MODEL, messages: hello, stream: true });
    const it = stream[Symbol.asyncIterator]();
    const first = await within(it.next(), 10000, 'the first chunk through the gateway');
    assert.equal(first.value.choices[0].delta.content, 'Hel');
    assert.equal(finished, false);
    release.resolve();
    const rest = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    assert.equal(finished, true);
    assert.equal(rest.map((c) => c.choices[0].delta.content ?? '').join(''), 'lo.');
    assert.equal(upstream.requests[0].url, '/v1/chat/completions');
  } finally {
    release.resolve();
    await gw.stop();
    await upstream.close();
  }
});

const TOOLS = [
  { type: 'function', function: { name: 'contextd__branch_create', description: 'Open a branch',
    parameters: { type: 'object', properties: { description: { type: 'string' }, prompt: { type: 'string' } } } } },
  { type: 'function', function: { name: 'contextd__branch_return', description: 'Return from the branch',
    parameters: { type: 'object', properties: { message: { type: 'string' } } } } },
  { type: 'function', function: { name: 'read_file', description: 'Read a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } } } } },
];
// A GitHub token shape (the scrubber's github-pat rule).
const SECRET = 'ghp_a7Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'.slice(0, 40);

// The raw body up to the end of its last message (without the array's ']'): the SDK writes
// `messages` before `tools`, so this is what a later request of the conversation must start with.
function messagesPrefix(raw) {
  const end = raw.indexOf(',"tools":');
  assert.ok(end > 0 && raw[end - 1] === ']', raw.slice(0, 200));
  return raw.slice(0, end - 1);
}

test('a branch is folded on the next request, a secret in a tool result never reaches the model, the prefix stays', opts(90000), async () => {
  const createInput = { description: 'find the port', prompt: 'read config.txt and report the port' };
  const returnInput = { message: 'the port is 8080 (config.txt line 1)' };
  const double = await startChatDouble({ script: [
    { calls: [{ id: 'call_create', name: 'contextd__branch_create', arguments: createInput },
      { id: 'call_read', name: 'read_file', arguments: { path: '/w/config.txt' } }] },
    { calls: [{ id: 'call_return', name: 'contextd__branch_return', arguments: returnInput }] },
    { text: 'The port is 8080.' },
    { text: 'You are welcome.' },
  ] });
  // The branch's requests checked here are the parent's history as sent (`branch_view:
  // inherited`, contextd before issue 33); the isolated view, the default, has its own test below.
  const gw = await startGateway({ openai: { base_url: double.url }, folding: { branch_view: 'inherited' } });
  const { client: mcp } = await connectHttp(gw.url);
  const client = sdk(gw.origin);
  // An assistant message as the agent sends it back.
  const asSent = (m) => ({ role: 'assistant', content: m.content ?? null,
    ...(m.tool_calls?.length ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments } })) } : {}) });
  try {
    const messages = [{ role: 'system', content: 'You are a test.' }, { role: 'user', content: 'Find the port.' }];
    const r1 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    const calls1 = r1.choices[0].message.tool_calls;
    assert.deepEqual(calls1.map((c) => c.function.name), ['contextd__branch_create', 'read_file']);

    // The agent runs the calls: contextd's branch_create over MCP, its own read.
    const created = await mcp.callTool({ name: 'branch_create', arguments: createInput });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    assert.ok(branch, textOf(created));
    messages.push(asSent(r1.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_create', content: textOf(created) });
    messages.push({ role: 'tool', tool_call_id: 'call_read', content: `port = 8080\ngithub_token = ${SECRET}\n${'# padding\n'.repeat(200)}` });

    // Streamed: the tool call arrives in deltas through the gateway.
    const r2 = await client.chat.completions.stream({ model: MODEL, messages, tools: TOOLS, stream_options: { include_usage: true } }).finalChatCompletion();
    const calls2 = r2.choices[0].message.tool_calls;
    assert.deepEqual(calls2.map((c) => [c.id, c.function.name, JSON.parse(c.function.arguments)]),
      [['call_return', 'contextd__branch_return', returnInput]]);
    const seen2 = double.requests.at(-1);
    assert.ok(!seen2.raw.includes(SECRET), 'the secret reached the model');
    assert.match(seen2.json.messages[4].content, /github_token = \[REDACTED:github-pat:ghp_\]/);
    assert.equal(seen2.json.messages[3].content, textOf(created));

    const returned = await mcp.callTool({ name: 'branch_return', arguments: returnInput });
    assert.ok(!returned.isError, textOf(returned));
    messages.push(asSent(r2.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_return', content: textOf(returned) });

    const r3 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    assert.equal(r3.choices[0].message.content, 'The port is 8080.');
    const seen3 = double.requests.at(-1);
    // Folded: the turn that opened the branch, then one tool message per call of it: the summary
    // for branch_create, a stub for the read. The branch's own turns are gone.
    const got = seen3.json.messages;
    assert.deepEqual(got.map((m) => [m.role, m.tool_call_id ?? null]),
      [['system', null], ['user', null], ['assistant', null], ['tool', 'call_create'], ['tool', 'call_read']]);
    assert.deepEqual(got[2], seen2.json.messages[2]);
    assert.match(got[3].content, new RegExp(`^\\[branch ${branch} returned; \\d+ tokens folded away\\]\\n`));
    assert.ok(got[3].content.includes(returnInput.message), got[3].content);
    assert.equal(got[4].content, '(folded with the branch)');
    assert.ok(!seen3.raw.includes('call_return') && !seen3.raw.includes('github_token'), seen3.raw);
    assert.ok(!seen3.raw.includes(SECRET));
    // Byte for byte, everything before the first tool message is what the last request carried.
    const cut = seen2.raw.indexOf('{"role":"tool"');
    assert.equal(seen3.raw.slice(0, cut), seen2.raw.slice(0, cut));

    // The next request folds to the same bytes: the model sees the conversation only grow.
    messages.push(asSent(r3.choices[0].message));
    messages.push({ role: 'user', content: 'Thanks.' });
    const stream4 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, stream: true, stream_options: { include_usage: true } });
    let text4 = '';
    for await (const chunk of stream4) text4 += chunk.choices[0]?.delta?.content ?? '';
    assert.equal(text4, 'You are welcome.');
    const seen4 = double.requests.at(-1);
    assert.ok(seen4.raw.startsWith(messagesPrefix(seen3.raw)), `not a continuation:\n${seen4.raw.slice(0, 2000)}`);
    assert.deepEqual(seen4.json.messages.slice(-2), [{ role: 'assistant', content: 'The port is 8080.' }, { role: 'user', content: 'Thanks.' }]);
    assert.ok(!seen4.raw.includes(SECRET));
    assert.deepEqual(double.problems, [], 'every request was valid (tool calls paired)');

    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_chat' }) === 4);
    assert.equal(metric(text, 'contextd_model_folds_total', { api: 'openai_chat' }), 1);
    assert.equal(metric(text, 'contextd_model_redacted_blocks_total', { api: 'openai_chat' }), 1);
  } finally {
    await mcp.close();
    await gw.stop();
    await double.close();
  }
});

// The text of a Chat message: its string content or its text parts joined.
const chatText = (m) => (typeof m?.content === 'string' ? m.content
  : (m?.content ?? []).filter((p) => p.type === 'text').map((p) => p.text).join('\n'));

test('isolated branch view: inside a branch the model gets the opening and the branch\'s own turns, not the parent\'s; after the return the parent, folded', opts(90000), async () => {
  // Text only a tool result holds: where it shows up says whose work reached the model.
  const PARENT_MARKER = 'PARENT_MARKER_chat_r4';
  const BRANCH_MARKER = 'BRANCH_MARKER_chat_t8';
  const createInput = { description: 'read the branch file', prompt: 'read /w/branch.txt and report what it holds (PROMPT_CHAT_b2)' };
  const returnInput = { message: 'SUMMARY_CHAT: branch.txt holds 40 lines' };
  const double = await startChatDouble({ script: [
    { calls: [{ id: 'call_parent', name: 'read_file', arguments: { path: '/w/parent.txt' } }] },
    // branch_create with a read beside it: its answer (a secret in it) opens the branch too.
    { calls: [{ id: 'call_create', name: 'contextd__branch_create', arguments: createInput },
      { id: 'call_cfg', name: 'read_file', arguments: { path: '/w/config.txt' } }] },
    { calls: [{ id: 'call_branch', name: 'read_file', arguments: { path: '/w/branch.txt' } }] },
    { calls: [{ id: 'call_return', name: 'contextd__branch_return', arguments: returnInput }] },
    { text: 'branch.txt holds 40 lines.' },
  ] });
  const gw = await startGateway({ openai: { base_url: double.url } });
  const { client: mcp } = await connectHttp(gw.url);
  const client = sdk(gw.origin);
  const asSent = (m) => ({ role: 'assistant', content: m.content ?? null,
    ...(m.tool_calls?.length ? { tool_calls: m.tool_calls.map((c) => ({ id: c.id, type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments } })) } : {}) });
  const lines = (marker) => Array.from({ length: 40 }, (_, i) => `${marker} line ${i}: some words about the code`).join('\n');
  try {
    const opening = [{ role: 'system', content: 'You are a test.' }, { role: 'user', content: 'Survey the files (TASK_CHAT_x1).' }];
    const messages = [...opening];
    const r1 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    messages.push(asSent(r1.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_parent', content: lines(PARENT_MARKER) });
    const r2 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    assert.deepEqual(r2.choices[0].message.tool_calls.map((c) => c.function.name), ['contextd__branch_create', 'read_file']);
    const seen2 = double.requests.at(-1);
    assert.ok(seen2.raw.includes(PARENT_MARKER), 'before the branch the parent is sent as it is');

    // The agent runs branch_create over MCP: the branch exists, open in this conversation.
    const created = await mcp.callTool({ name: 'branch_create', arguments: createInput });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    assert.ok(branch, textOf(created));
    messages.push(asSent(r2.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_create', content: textOf(created) });
    messages.push({ role: 'tool', tool_call_id: 'call_cfg', content: `port = 8080\ngithub_token = ${SECRET}\n` });

    // The branch's first turn: the opening as sent, then one user message opening the branch
    // (branch_create's answer and the read's, redacted).
    const r3 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    assert.deepEqual(r3.choices[0].message.tool_calls.map((c) => c.id), ['call_branch']);
    const seen3 = double.requests.at(-1);
    const got3 = seen3.json.messages;
    const where3 = JSON.stringify(got3, null, 1).slice(0, 3000);
    assert.equal(got3.length, opening.length + 1, where3);
    assert.deepEqual(got3.slice(0, opening.length), opening);
    assert.equal(got3[2].role, 'user', where3);
    const open = chatText(got3[2]);
    assert.ok(open.startsWith(`[contextd] Branch ${branch}`), where3);
    for (const part of [createInput.description, createInput.prompt, textOf(created), 'port = 8080',
      'github_token = [REDACTED:github-pat:ghp_]']) assert.ok(open.includes(part), `${part} in ${open}`);
    assert.ok(!seen3.raw.includes(SECRET), 'the secret reached the model');
    assert.ok(!seen3.raw.includes(PARENT_MARKER), `the parent's work reached the branch: ${where3}`);
    assert.deepEqual(seen3.json.tools, TOOLS, 'tools as sent');
    assert.equal(seen3.raw.slice(seen3.raw.indexOf(',"tools":')), seen2.raw.slice(seen2.raw.indexOf(',"tools":')), 'every byte after the messages as sent');

    messages.push(asSent(r3.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_branch', content: lines(BRANCH_MARKER) });
    // Streamed: the branch's second turn, its own work after the view's opening, byte for byte a
    // continuation of the first.
    const r4 = await client.chat.completions.stream({ model: MODEL, messages, tools: TOOLS }).finalChatCompletion();
    assert.deepEqual(r4.choices[0].message.tool_calls.map((c) => c.id), ['call_return']);
    const seen4 = double.requests.at(-1);
    assert.ok(seen4.raw.startsWith(messagesPrefix(seen3.raw)), `not a continuation:\n${seen4.raw.slice(0, 2000)}`);
    assert.deepEqual(seen4.json.messages.slice(3).map((m) => [m.role, m.tool_call_id ?? null]), [['assistant', null], ['tool', 'call_branch']]);
    assert.ok(seen4.raw.includes(BRANCH_MARKER) && !seen4.raw.includes(PARENT_MARKER));

    // branch_status shows what the gateway sent in the branch's view (its usage rows are written
    // once each answer has ended: polled).
    let views = null;
    for (let i = 0; i < 50 && views?.isolated_requests !== 2; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const status = await mcp.callTool({ name: 'branch_status', arguments: { branch_id: branch } });
      views = status.structuredContent?.branches?.[0]?.model_views ?? null;
    }
    assert.equal(views?.isolated_requests, 2, JSON.stringify(views));
    assert.equal(views.inherited_requests, 0);
    assert.ok(views.tokens_spared > 0, JSON.stringify(views));

    const returned = await mcp.callTool({ name: 'branch_return', arguments: returnInput });
    assert.ok(!returned.isError, textOf(returned));
    messages.push(asSent(r4.choices[0].message));
    messages.push({ role: 'tool', tool_call_id: 'call_return', content: textOf(returned) });

    // Returned: the parent's transcript, byte for byte up to branch_create's answer, which now
    // stands for the branch with its summary.
    const r5 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    assert.equal(r5.choices[0].message.content, 'branch.txt holds 40 lines.');
    const seen5 = double.requests.at(-1);
    const got5 = seen5.json.messages;
    assert.deepEqual(got5.map((m) => [m.role, m.tool_call_id ?? null]), [['system', null], ['user', null],
      ['assistant', null], ['tool', 'call_parent'], ['assistant', null], ['tool', 'call_create'], ['tool', 'call_cfg']]);
    const cut = seen2.raw.indexOf(',"tools":') - 1;
    assert.equal(seen5.raw.slice(0, cut), seen2.raw.slice(0, cut), 'the parent\'s prefix as it was sent before the branch');
    assert.match(got5[5].content, new RegExp(`^\\[branch ${branch} returned; \\d+ tokens folded away\\]\\n`));
    assert.ok(got5[5].content.includes(returnInput.message));
    assert.equal(got5[6].content, '(folded with the branch)');
    assert.ok(!seen5.raw.includes(SECRET));
    assert.ok(seen5.raw.includes(PARENT_MARKER) && !seen5.raw.includes(BRANCH_MARKER) && !seen5.raw.includes('[contextd] Branch'));
    assert.deepEqual(double.problems, [], 'every request was valid (tool calls paired)');

    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_chat' }) === 5);
    const isolated = metric(text, 'contextd_model_branch_view_requests_total', { api: 'openai_chat', view: 'isolated' });
    const spared = metric(text, 'contextd_model_branch_view_tokens_spared_total', { api: 'openai_chat' });
    console.log(`--- Chat: 5 requests, ${isolated} in the isolated view, ${spared} tokens spared`);
    assert.equal(isolated, 2);
    assert.ok(spared > 0, text.split('\n').filter((l) => l.includes('branch_view')).join('\n'));
    assert.equal(metric(text, 'contextd_model_folds_total', { api: 'openai_chat' }), 1);
  } finally {
    await mcp.close();
    await gw.stop();
    await double.close();
  }
});

test('errors: the provider\'s relayed byte for byte; contextd\'s own (400, 413, 502) in the OpenAI shape', opts(60000), async () => {
  const errors = [
    { status: 429, headers: { 'retry-after': '7', 'x-request-id': 'req_up_429', 'x-ratelimit-remaining-requests': '0' },
      body: '{\n    "error": {\n        "message": "Rate limit reached for gpt-double in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.",\n        "type": "requests",\n        "param": null,\n        "code": "rate_limit_exceeded"\n    }\n}\n',
      sdkClass: 'RateLimitError' },
    { status: 400, headers: { 'x-request-id': 'req_up_400' },
      body: '{"error":{"message":"Invalid \'messages[1].content\': string too long.","type":"invalid_request_error","param":"messages[1].content","code":"string_above_max_length"}}',
      sdkClass: 'BadRequestError' },
  ];
  let current = errors[0];
  const upstream = await startUpstream({
    handle: (req, res) => {
      res.writeHead(current.status, { 'content-type': 'application/json', ...current.headers });
      res.end(current.body);
    },
  });
  const gw = await startGateway({ openai: { base_url: `${upstream.url}/v1` }, maxBodyBytes: 4096 });
  const port = await closedPort();
  const unreachable = await startGateway({ openai: { base_url: `http://127.0.0.1:${port}/v1` } });
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${KEY}` };
  const body = JSON.stringify({ model: MODEL, messages: hello });
  try {
    for (const e of errors) {
      current = e;
      const res = await fetch(`${gw.origin}/v1/chat/completions`, { method: 'POST', headers, body });
      assert.equal(res.status, e.status);
      assert.equal(await res.text(), e.body);
      for (const [k, v] of Object.entries(e.headers)) assert.equal(res.headers.get(k), v, `${e.status}: header ${k}`);
      const caught = await sdk(gw.origin).chat.completions.create({ model: MODEL, messages: hello }).catch((x) => x);
      assert.ok(caught instanceof OpenAI[e.sdkClass], `${e.status}: ${caught}`);
      assert.deepEqual(caught.error, JSON.parse(e.body).error);
      assert.equal(caught.requestID, e.headers['x-request-id']);
    }
    assert.equal(upstream.requests.length, errors.length * 2, 'no retry by contextd');

    // Malformed JSON and a body that is not a Chat request: 400 from contextd, nothing upstream.
    const seen = upstream.requests.length;
    const malformed = await fetch(`${gw.origin}/v1/chat/completions`, { method: 'POST', headers, body: '{"model": "x", "messages": [' });
    const malformedText = await malformed.text();
    assert.equal(malformed.status, 400, malformedText);
    assert.equal(malformed.headers.get('content-type'), 'application/json');
    const bad = openAiError(malformedText);
    assert.equal(bad.type, 'invalid_request_error');
    assert.match(bad.message, /not a Chat Completions request: invalid JSON at byte \d+/);
    const notChat = await sdk(gw.origin).chat.completions.create({ model: MODEL, messages: { role: 'user' } }).catch((x) => x);
    assert.ok(notChat instanceof OpenAI.BadRequestError, String(notChat));
    assert.equal(notChat.type, 'invalid_request_error');
    assert.match(notChat.message, /messages: an array is required/);
    // Over max_body_bytes: refused by the listener, in the route's (OpenAI) shape.
    const big = await fetch(`${gw.origin}/v1/chat/completions`, { method: 'POST', headers,
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'x'.repeat(8192) }] }) });
    const bigText = await big.text();
    assert.equal(big.status, 413, bigText);
    assert.equal(openAiError(bigText).code, 'request_too_large');
    assert.equal(upstream.requests.length, seen);

    // Unreachable: 502 naming the upstream.
    const res = await fetch(`${unreachable.origin}/v1/chat/completions`, { method: 'POST', headers, body });
    const text = await res.text();
    assert.equal(res.status, 502, text);
    const down = openAiError(text);
    assert.equal(down.type, 'server_error');
    assert.equal(down.code, 'upstream_unreachable');
    assert.ok(down.message.includes(`127.0.0.1:${port}`), down.message);
    const caught = await sdk(unreachable.origin).chat.completions.create({ model: MODEL, messages: hello }).catch((x) => x);
    assert.ok(caught instanceof OpenAI.InternalServerError, String(caught));
    assert.equal(caught.status, 502);
    // An OpenAI /v1/models to an unreachable upstream: the same shape.
    const models = await fetch(`${unreachable.origin}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(models.status, 502);
    assert.equal(openAiError(await models.text()).code, 'upstream_unreachable');
    for (const g of [gw, unreachable]) assert.ok(!g.stderr().includes(KEY), 'the key is never logged');
  } finally {
    await gw.stop();
    await unreachable.stop();
    await upstream.close();
  }
});

test('headers, the query and unknown body fields reach the upstream as sent', opts(30000), async () => {
  const upstream = await startUpstream({
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'chatcmpl-h', object: 'chat.completion', created: 1, model: MODEL,
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }));
    },
  });
  const gw = await startGateway({ openai: { base_url: `${upstream.url}/openai/v1/` } });
  const sent = {
    'content-type': 'application/json',
    authorization: `Bearer ${KEY}`,
    'openai-organization': 'org-verbatim',
    'openai-project': 'proj_verbatim',
    'x-stainless-retry-count': '0',
    'user-agent': 'OpenAI/JS 6.49.0',
  };
  // Written by hand (blanks, escapes, number spellings, unknown fields and part types, a custom
  // tool call): every byte arrives as sent.
  const handWritten = '{ "model" : "gpt-double",\n  "temperature": 0.50, "top_p": 1e0, "seed": -0,\n' +
    '  "messages": [ {"role": "developer", "content": "caf\\u00e9"},\n' +
    '    {"role":"user","name":"ann","content":[{"type":"text","text":"look \\/ here"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},\n' +
    '    {"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"custom","custom":{"name":"apply_patch","input":"*** Begin"}}],"reasoning_content":"hm"},\n' +
    '    {"role":"tool","tool_call_id":"t1","content":[{"type":"text","text":"done"}]},\n' +
    '    {"role":"user","content":"next"} ],\n' +
    '  "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},\n' +
    '  "parallel_tool_calls": false, "prompt_cache_key": "conv-1", "future_field": [1.0, "\\u2028", null] }';
  JSON.parse(handWritten);
  try {
    const res = await fetch(`${gw.origin}/v1/chat/completions?api-version=2026-01-01`, { method: 'POST', headers: sent, body: handWritten });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).choices[0].message.content, 'ok');
    const got = upstream.requests[0];
    assert.equal(got.url, '/openai/v1/chat/completions?api-version=2026-01-01');
    for (const [k, v] of Object.entries(sent)) assert.equal(got.headers[k], v, `header ${k}`);
    assert.equal(got.raw, handWritten);

    // Through the SDK: what the gateway forwards is what the SDK sends straight to the upstream,
    // but the headers the gateway documents as its own.
    const call = { model: MODEL, messages: hello, tools: TOOLS, user: 'u-1', metadata: { k: 'v' }, store: false };
    await sdk(gw.origin).chat.completions.create(call);
    await new OpenAI({ apiKey: KEY, baseURL: `${upstream.url}/openai/v1`, maxRetries: 0, timeout: 15000 }).chat.completions.create(call);
    const [viaGateway, direct] = upstream.requests.slice(1, 3).map((r) => {
      const { host, connection, 'content-length': length, 'accept-encoding': encoding, ...h } = r.headers;
      return h;
    });
    assert.deepEqual(viaGateway, direct);
    assert.equal(upstream.requests[1].raw, upstream.requests[2].raw);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});
