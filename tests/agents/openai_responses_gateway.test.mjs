// contextd's model gateway for the OpenAI Responses API (POST /v1/responses) against the scripted
// Responses double (lib/responses_double.mjs), driven by raw fetch as Codex drives it (store
// false, reasoning.encrypted_content included, the whole input resent each turn): a conversation
// whose branch (branch_create ... branch_return, called over MCP) the double sees folded on the
// next request (branch_create's function_call_output is the summary, every call_id answered, the
// turn that opened it and every reasoning item before it byte for byte, so the double's binding
// of encrypted_content to the items before it holds on every later request), JSON and SSE; a
// secret in a function_call_output the double never sees; usage read from the answer and the SSE
// stream's response.completed; requests naming previous_response_id forwarded byte for byte and
// counted; errors in the OpenAI shape. With the official openai SDK as the client, the isolated
// branch view (issue 33): while the branch is open the double gets the opening items, one user
// message opening the branch and the branch's own items, not the parent's; after the return the
// parent's items as before, folded. Every wait is on an event, bounded by `within` or the test's
// timeout.
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
  // The branch's requests checked here are the parent's history as sent (`branch_view:
  // inherited`, contextd before issue 33); the isolated view, the default, has its own test below.
  const gw = await startGateway({ openai: { base_url: double.url }, folding: { branch_view: 'inherited' } });
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
    assert.deepEqual(double.dropped, [], 'no reasoning item dropped behind a changed prefix');
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

const sdkEntry = new URL('../../tools/npm/agents/node_modules/openai/index.mjs', import.meta.url);
const sdkMissing = missing ?? (existsSync(sdkEntry) ? null
  : 'the openai SDK is not installed (scripts/install-deps.sh installs tools/npm/agents)');
const OpenAI = sdkMissing ? null : (await import(sdkEntry)).default;
const itemText = (item) => (typeof item?.content === 'string' ? item.content
  : (item?.content ?? []).map((p) => p?.text ?? '').join(''));
const excerptOf = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s);

test('isolated branch view (official SDK): inside a branch the model gets the opening and the branch\'s own items, not the parent\'s; after the return the parent, folded', { skip: sdkMissing ?? false, timeout: 90000 }, async () => {
  // Text only a function_call_output holds: where it shows up says whose work reached the model.
  const PARENT_MARKER = 'PARENT_MARKER_resp_r4';
  const BRANCH_MARKER = 'BRANCH_MARKER_resp_t8';
  const createArgs = { description: 'read the branch file', prompt: 'read /w/branch.txt and report what it holds (PROMPT_RESP_b2)' };
  const returnArgs = { message: 'SUMMARY_RESP: branch.txt holds 40 lines' };
  const double = await startResponsesDouble({ script: [
    { calls: [{ call_id: 'call_parent', name: 'read_file', arguments: { path: '/w/parent.txt' } }] },
    // branch_create with a read beside it: its answer (a secret in it) opens the branch too.
    { calls: [{ call_id: 'call_create', name: 'contextd__branch_create', arguments: createArgs },
      { call_id: 'call_cfg', name: 'read_file', arguments: { path: '/w/config.txt' } }] },
    { calls: [{ call_id: 'call_branch', name: 'read_file', arguments: { path: '/w/branch.txt' } }] },
    { calls: [{ call_id: 'call_return', name: 'contextd__branch_return', arguments: returnArgs }] },
    { text: 'branch.txt holds 40 lines.' },
  ] });
  const gw = await startGateway({ openai: { base_url: double.url } });
  const { client: mcp } = await connectHttp(gw.url);
  const client = new OpenAI({ apiKey: KEY, baseURL: `${gw.origin}/v1`, maxRetries: 0, timeout: 15000 });
  const base = { model: MODEL, instructions: 'You are a test.', tools: TOOLS, store: false,
    include: ['reasoning.encrypted_content'], parallel_tool_calls: true };
  const lines = (marker) => Array.from({ length: 40 }, (_, i) => `${marker} line ${i}: some words about the code`).join('\n');
  const shown = (req) => JSON.stringify(req.json.input.map((i) => [i.type, i.role ?? i.call_id ?? null]));
  try {
    const opening = [
      { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Be brief.' }] },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Survey the files (TASK_RESP_x1).' }] },
    ];
    const input = [...opening];
    const r1 = await client.responses.create({ ...base, input });
    input.push(...r1.output, { type: 'function_call_output', call_id: 'call_parent', output: lines(PARENT_MARKER) });
    const r2 = await client.responses.create({ ...base, input });
    assert.deepEqual(r2.output.map((o) => o.call_id ?? null), [null, 'call_create', 'call_cfg']);
    const seen2 = double.responseRequests().at(-1);
    assert.ok(seen2.bodyText.includes(PARENT_MARKER), 'before the branch the parent is sent as it is');

    // The agent runs branch_create over MCP: the branch exists, open in this conversation.
    const created = await mcp.callTool({ name: 'branch_create', arguments: createArgs });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    assert.ok(branch, textOf(created));
    input.push(...r2.output, { type: 'function_call_output', call_id: 'call_create', output: textOf(created) },
      { type: 'function_call_output', call_id: 'call_cfg', output: `port = 8080\ngithub_token = ${SECRET}\n` });

    // The branch's first turn (streamed through the SDK): the opening as sent, then one user
    // message opening the branch; instructions and tools as sent.
    const stream = await client.responses.create({ ...base, input, stream: true });
    let r3 = null;
    for await (const event of stream) if (event.type === 'response.completed') r3 = event.response;
    assert.deepEqual(r3.output.map((o) => o.call_id ?? null), [null, 'call_branch']);
    const seen3 = double.responseRequests().at(-1);
    const got3 = seen3.json.input;
    assert.equal(got3.length, opening.length + 1, shown(seen3));
    assert.deepEqual(rawItems(seen3.bodyText).slice(0, 2), opening.map((i) => JSON.stringify(i)), 'the opening as sent');
    assert.ok(got3[2].type === 'message' && got3[2].role === 'user', shown(seen3));
    const open = itemText(got3[2]);
    assert.ok(open.startsWith(`[contextd] Branch ${branch}`), open);
    for (const part of [createArgs.description, createArgs.prompt, textOf(created), 'port = 8080',
      'github_token = [REDACTED:github-pat:ghp_]']) assert.ok(open.includes(part), `${part} in ${open}`);
    assert.ok(!seen3.bodyText.includes(SECRET), 'the secret reached the model');
    assert.ok(!seen3.bodyText.includes(PARENT_MARKER), `the parent's work reached the branch: ${shown(seen3)}`);
    assert.equal(seen3.json.instructions, base.instructions);
    assert.deepEqual(seen3.json.tools, TOOLS);

    input.push(...r3.output, { type: 'function_call_output', call_id: 'call_branch', output: lines(BRANCH_MARKER) });
    // The branch's second turn: a continuation of the first, byte for byte (the double verifies
    // the reasoning item it made for the view against the view's items).
    const r4 = await client.responses.create({ ...base, input });
    assert.deepEqual(r4.output.map((o) => o.call_id ?? null), [null, 'call_return']);
    const seen4 = double.responseRequests().at(-1);
    assert.deepEqual(rawItems(seen4.bodyText).slice(0, 3), rawItems(seen3.bodyText));
    assert.deepEqual(seen4.json.input.slice(3).map((i) => [i.type, i.call_id ?? null]),
      [['reasoning', null], ['function_call', 'call_branch'], ['function_call_output', 'call_branch']]);
    assert.ok(seen4.bodyText.includes(BRANCH_MARKER) && !seen4.bodyText.includes(PARENT_MARKER));

    const returned = await mcp.callTool({ name: 'branch_return', arguments: returnArgs });
    assert.ok(!returned.isError, textOf(returned));
    input.push(...r4.output, { type: 'function_call_output', call_id: 'call_return', output: textOf(returned) });

    // Returned: the parent's items as sent before the branch, branch_create's output the summary.
    const r5 = await client.responses.create({ ...base, input });
    assert.equal(r5.output_text, 'branch.txt holds 40 lines.');
    const seen5 = double.responseRequests().at(-1);
    const got5 = seen5.json.input;
    assert.deepEqual(got5.map((i) => [i.type, i.role ?? i.call_id ?? null]), [['message', 'developer'], ['message', 'user'],
      ['reasoning', null], ['function_call', 'call_parent'], ['function_call_output', 'call_parent'],
      ['reasoning', null], ['function_call', 'call_create'], ['function_call', 'call_cfg'],
      ['function_call_output', 'call_create'], ['function_call_output', 'call_cfg']]);
    assert.deepEqual(rawItems(seen5.bodyText).slice(0, 5), rawItems(seen2.bodyText), 'the parent\'s items as they were sent before the branch');
    assert.match(got5[8].output, new RegExp(`^\\[branch ${branch} returned; \\d+ tokens folded away\\]\\n`));
    assert.ok(got5[8].output.includes(returnArgs.message));
    assert.equal(got5[9].output, '(folded with the branch)');
    assert.ok(!seen5.bodyText.includes(SECRET));
    assert.ok(seen5.bodyText.includes(PARENT_MARKER) && !seen5.bodyText.includes(BRANCH_MARKER) && !seen5.bodyText.includes('[contextd] Branch'));
    assertPaired(got5);
    assert.deepEqual(double.problems, [], 'every request was valid (reasoning verified, calls paired)');
    assert.deepEqual(double.dropped, [], 'no reasoning item dropped behind a changed prefix');

    const text = await metricsWhen(gw.origin, (t) => metric(t, 'contextd_model_requests_total', { api: 'openai_responses' }) === 5);
    const views = metric(text, 'contextd_model_branch_view_requests_total', { api: 'openai_responses', view: 'isolated' });
    const spared = metric(text, 'contextd_model_branch_view_tokens_spared_total', { api: 'openai_responses' });
    console.log(`--- Responses: 5 requests, ${views} in the isolated view, ${spared} tokens spared`);
    assert.equal(views, 2);
    assert.ok(spared > 0, text.split('\n').filter((l) => l.includes('branch_view')).join('\n'));
    assert.equal(metric(text, 'contextd_model_folds_total', { api: 'openai_responses' }), 1);
  } finally {
    await mcp.close();
    await gw.stop();
    await double.close();
  }
});

test('responses.compact (official SDK) while a branch is open: the compaction takes the parent\'s items, not the branch\'s view', { skip: sdkMissing ?? false, timeout: 90000 }, async () => {
  // What the compaction returns replaces the client's history: made from the branch's isolated
  // view, it would drop everything the parent did after its opening.
  const PARENT_MARKER = 'PARENT_MARKER_compact_r4';
  const createArgs = { description: 'read the branch file', prompt: 'read /w/branch.txt (PROMPT_COMPACT_b2)' };
  const double = await startResponsesDouble({ script: [
    { calls: [{ call_id: 'call_parent', name: 'read_file', arguments: { path: '/w/parent.txt' } }] },
    { calls: [{ call_id: 'call_create', name: 'contextd__branch_create', arguments: createArgs }] },
    { calls: [{ call_id: 'call_branch', name: 'read_file', arguments: { path: '/w/branch.txt' } }] },
  ] });
  const gw = await startGateway({ openai: { base_url: double.url } });
  const { client: mcp } = await connectHttp(gw.url);
  const client = new OpenAI({ apiKey: KEY, baseURL: `${gw.origin}/v1`, maxRetries: 0, timeout: 15000 });
  const base = { model: MODEL, instructions: 'You are a test.', tools: TOOLS, store: false, include: ['reasoning.encrypted_content'] };
  try {
    const input = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Survey the files.' }] }];
    const r1 = await client.responses.create({ ...base, input });
    input.push(...r1.output, { type: 'function_call_output', call_id: 'call_parent', output: `${PARENT_MARKER}: 40 lines` });
    const r2 = await client.responses.create({ ...base, input });
    const created = await mcp.callTool({ name: 'branch_create', arguments: createArgs });
    assert.ok(!created.isError, textOf(created));
    const branch = branchIdIn(textOf(created));
    input.push(...r2.output, { type: 'function_call_output', call_id: 'call_create', output: textOf(created) });
    const r3 = await client.responses.create({ ...base, input });
    assert.ok(itemText(double.responseRequests().at(-1).json.input.at(-1)).startsWith(`[contextd] Branch ${branch}`), 'the branch runs in its view');
    input.push(...r3.output, { type: 'function_call_output', call_id: 'call_branch', output: 'branch.txt: 40 lines' });

    // The client compacts its history with the branch open.
    const compacted = await client.responses.compact({ model: MODEL, instructions: base.instructions, input });
    assert.equal(compacted.object, 'response.compaction');
    const seen = double.requests.at(-1);
    assert.equal(seen.url, '/v1/responses/compact');
    const shown = JSON.stringify(seen.json.input.map((i) => [i.type, i.role ?? i.call_id ?? null, excerptOf(itemText(i), 60)]));
    console.log(`--- the compaction request as the model received it: ${shown}`);
    assert.ok(!seen.json.input.some((i) => i.type === 'message' && itemText(i).startsWith('[contextd] Branch')),
      `the compaction was sent as branch ${branch}'s isolated view: ${shown}`);
    assert.ok(seen.bodyText.includes(PARENT_MARKER), `the parent's work reaches the compaction: ${shown}`);
    assert.deepEqual(double.problems, []);
    assert.deepEqual(double.dropped, [], 'no reasoning item dropped behind a changed prefix');
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
    assert.deepEqual(double.dropped, [], 'no reasoning item dropped behind a changed prefix');
  } finally {
    await gw.stop();
    await double.close();
  }
});
