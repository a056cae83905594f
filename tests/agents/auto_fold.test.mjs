// Auto-fold through the real contextd binary, driven by the official openai SDK (tools/npm/agents)
// against the scripted Chat double: an agent that never branches reads file after file; once its
// requests pass the trigger, the results older than the last `keep` tool uses reach the model as
// handles naming a trail event, every tool call still answered; a step only comes when it folds at
// least clear_at_least tokens, and between steps every request repeats the previous one's bytes
// up to its new tail (the provider's cache holds). trail_unfold over MCP brings a folded result
// back whole. The x-contextd-auto-fold header turns it on per request; a bad value is an
// OpenAI-shaped 400. Every wait is on an event, bounded by the test's timeout.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { startChatDouble } from './lib/chat_double.mjs';
import { startGateway } from './lib/model_upstream.mjs';
import { BINARY, connectHttp } from '../e2e/harness.mjs';

const sdkEntry = new URL('../../tools/npm/agents/node_modules/openai/index.mjs', import.meta.url);
const missing = !existsSync(BINARY) ? `contextd is not built at ${BINARY}`
  : !existsSync(sdkEntry) ? 'the openai SDK is not installed (scripts/install-deps.sh installs tools/npm/agents)'
    : null;
const OpenAI = missing ? null : (await import(sdkEntry)).default;
const opts = (timeout) => ({ skip: missing ?? false, timeout });

const MODEL = 'gpt-double';
const TOOLS = [{ type: 'function', function: { name: 'read_file', description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } } }];
const READS = 8;
// A file's text: distinct words per file and line, about 700 o200k tokens.
const fileText = (i) => Array.from({ length: 60 },
  (_, n) => `def handler_${i}_${n}(request): return render(request, "page_${i}_${n}.html")`).join('\n');
const AUTO_FOLD = { enabled: true, trigger_tokens: 3000, keep: 2, min_result_tokens: 200, clear_at_least: 1000 };
const HANDLE = /^\[contextd: ([\d,]+) tokens of read_file \/src\/f(\d+)\.py folded; trail_unfold (\{.*\})\]$/;

// Plays READS reads and a final answer as an agent would, returning the double's requests.
async function readFiles(client, task = 'Read them all.') {
  const messages = [{ role: 'system', content: 'You read files.' }, { role: 'user', content: task }];
  for (let i = 0; i <= READS; ++i) {
    const r = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS });
    const m = r.choices[0].message;
    if (!m.tool_calls?.length) return m.content;
    messages.push({ role: 'assistant', content: m.content ?? null, tool_calls: m.tool_calls.map((c) => ({
      id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } })) });
    for (const c of m.tool_calls) {
      const n = Number(/f(\d+)\.py/.exec(JSON.parse(c.function.arguments).path)[1]);
      messages.push({ role: 'tool', tool_call_id: c.id, content: fileText(n) });
    }
  }
  return null;
}

const script = () => [
  ...Array.from({ length: READS }, (_, i) => ({ calls: [{ id: `call_${i}`, name: 'read_file', arguments: { path: `/src/f${i}.py` } }] })),
  { text: 'All read.' },
];

test('auto-fold: stale results become trail handles in steps, the prefix holds between them, trail_unfold brings one back', opts(60000), async () => {
  const double = await startChatDouble({ script: script() });
  const gw = await startGateway({ openai: { base_url: double.url }, autoFold: AUTO_FOLD });
  const { client: mcp } = await connectHttp(gw.url);
  try {
    const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${gw.origin}/v1`, maxRetries: 0, timeout: 15000 });
    assert.equal(await readFiles(client), 'All read.');
    assert.deepEqual(double.problems ?? [], []);
    const seen = double.requests.filter((r) => r.json?.messages);
    assert.equal(seen.length, READS + 1);

    // What the model received on the last request: results 0..READS-3 folded, the last 2 whole.
    const last = seen.at(-1).json.messages;
    const tools = last.filter((m) => m.role === 'tool');
    assert.equal(tools.length, READS);
    const folded = tools.filter((m) => m.content.startsWith('[contextd: '));
    assert.ok(folded.length >= 1, 'nothing was folded');
    for (const m of tools.slice(-AUTO_FOLD.keep)) assert.ok(!m.content.startsWith('[contextd: '), m.content);
    for (const m of folded) assert.match(m.content, HANDLE);
    // Every call answered, in order, right after its call (the double refuses otherwise, too).
    tools.forEach((m, i) => assert.equal(m.tool_call_id, `call_${i}`));

    // Cache-aware: each request is the previous one plus its tail, except at a fold step, whose
    // first changed message is a newly folded result; a step folds at least clear_at_least.
    let steps = 0;
    for (let k = 1; k < seen.length; ++k) {
      const before = seen[k - 1].json.messages;
      const after = seen[k].json.messages;
      let first = 0;
      while (first < before.length && JSON.stringify(before[first]) === JSON.stringify(after[first])) ++first;
      if (first === before.length) continue;
      ++steps;
      assert.equal(after[first].role, 'tool', `request ${k} changed message ${first}`);
      assert.match(after[first].content, HANDLE);
      let gained = 0;
      for (let j = first; j < before.length; ++j) {
        if (JSON.stringify(before[j]) === JSON.stringify(after[j])) continue;
        assert.match(after[j].content, HANDLE, `request ${k} changed message ${j} other than by folding it`);
        gained += Number(HANDLE.exec(after[j].content)[1].replaceAll(',', ''));
      }
      assert.ok(gained >= AUTO_FOLD.clear_at_least, `a step folded only ${gained} tokens`);
      // And byte for byte, everything up to the first changed message is what the previous
      // request carried.
      const cut = (raw) => raw.indexOf(JSON.stringify(after[first]));
      assert.ok(cut(seen[k].raw) > 0);
      assert.equal(seen[k].raw.slice(0, cut(seen[k].raw)), seen[k - 1].raw.slice(0, cut(seen[k].raw)));
    }
    assert.ok(steps >= 1 && steps < READS, `${steps} fold steps`);

    // The handle names where the trail keeps the result: trail_unfold gives it back whole.
    const [, , file, ref] = HANDLE.exec(folded[0].content);
    const args = JSON.parse(ref);
    const unfolded = await mcp.callTool({ name: 'trail_unfold', arguments: args });
    assert.ok(!unfolded.isError, JSON.stringify(unfolded));
    const events = unfolded.structuredContent.events;
    assert.equal(events.at(-1).kind, 'tool_result');
    assert.equal(events.at(-1).payload, fileText(Number(file)));
    assert.equal(events[0].kind, 'tool_call');
    assert.match(events[0].payload, /f0\.py/);

    const metrics = await (await fetch(`${gw.origin}/metrics`)).text();
    assert.match(metrics, new RegExp(`contextd_model_auto_folds_total\\{api="openai_chat"\\} ${folded.length}\\b`));
    assert.match(metrics, /contextd_model_auto_fold_steps_total\{api="openai_chat",outcome="folded"\} \d/);
  } finally {
    await mcp.close();
    await gw.stop();
    await double.close();
  }
});

test('auto-fold: off by default, on per request with x-contextd-auto-fold; a bad value is a 400', opts(60000), async () => {
  const double = await startChatDouble({ script: [...script(), ...script()] });
  const gw = await startGateway({ openai: { base_url: double.url },
    autoFold: { ...AUTO_FOLD, enabled: false } });
  try {
    const plain = new OpenAI({ apiKey: 'sk-test', baseURL: `${gw.origin}/v1`, maxRetries: 0, timeout: 15000 });
    assert.equal(await readFiles(plain), 'All read.');
    assert.ok(!double.requests.at(-1).raw.includes('[contextd: '), 'folded without being asked');

    const asking = new OpenAI({ apiKey: 'sk-test', baseURL: `${gw.origin}/v1`, maxRetries: 0, timeout: 15000,
      defaultHeaders: { 'x-contextd-auto-fold': 'on' } });
    // A different first message: another conversation.
    assert.equal(await readFiles(asking, 'Read every file.'), 'All read.');
    const last = double.requests.at(-1);
    assert.match(last.raw, /\[contextd: [\d,]+ tokens of read_file/);
    assert.ok(!('x-contextd-auto-fold' in last.headers), 'contextd header forwarded');

    const bad = await fetch(`${gw.origin}/v1/chat/completions`, { method: 'POST',
      headers: { 'content-type': 'application/json', 'x-contextd-auto-fold': 'sometimes' },
      body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.equal(bad.status, 400);
    const error = (await bad.json()).error;
    assert.match(error.message, /x-contextd-auto-fold must be on or off/);
    assert.equal(error.type, 'invalid_request_error');
  } finally {
    await gw.stop();
    await double.close();
  }
});
