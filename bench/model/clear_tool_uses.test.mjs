// Tests of the clear_tool_uses simulation (node --test bench/model/): what is cleared, when, that
// every tool call keeps its result (the edited request stays valid), and what the doubles bill for
// it. Tokens are words here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { clearToolUsesAnthropic, clearToolUsesChat, clearSettings, CLEAR_DEFAULTS } from './clear_tool_uses.mjs';
import { validate } from '../../tests/agents/lib/messages.mjs';
import { validateChat, startOpenAICachingDouble } from './openai_caching_double.mjs';
import { startCachingDouble } from './caching_double.mjs';

const count = (text) => text.split(/\s+/).filter(Boolean).length;
const say = (n, tag) => `${tag} `.repeat(n).trim();
const settings = (over = {}) => ({ ...CLEAR_DEFAULTS, ...over });

// An Anthropic conversation of `n` tool uses, each result 100 words (r<i>), then a closing text.
function anthropic(n) {
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'task' }] }];
  for (let i = 0; i < n; i++) {
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `step ${i}` }, { type: 'tool_use', id: `t${i}`, name: 'bash', input: { command: `cmd ${i}` } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: say(100, `r${i}`) }] });
  }
  return { model: 'm', messages };
}

const resultTexts = (body) => body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
  .filter((b) => b.type === 'tool_result').map((b) => (typeof b.content === 'string' ? b.content : b.content.map((c) => c.text).join('')).split(' ')[0]);

test('Anthropic form: over the trigger, results older than the last 3 tool uses become the placeholder', () => {
  const body = anthropic(6);
  const before = JSON.stringify(body);
  const r = clearToolUsesAnthropic(body, 150000, count);
  assert.equal(JSON.stringify(body), before, 'the client\'s request is not changed');
  assert.deepEqual(resultTexts(r.body), ['[cleared]', '[cleared]', '[cleared]', 'r3', 'r4', 'r5']);
  assert.deepEqual([r.cleared, r.cleared_tokens], [3, 3 * 99]);
  // Tool inputs stay (clear_tool_inputs false), every pair stays valid.
  assert.deepEqual(r.body.messages[1].content[1].input, { command: 'cmd 0' });
  assert.equal(validate(r.body), null);
  // At or under the trigger nothing changes.
  assert.equal(clearToolUsesAnthropic(body, 100000, count).body, body);
  // clear_at_least not reachable: not applied.
  assert.equal(clearToolUsesAnthropic(body, 150000, count, settings({ clearAtLeast: 400 })).cleared, 0);
  assert.equal(clearToolUsesAnthropic(body, 150000, count, settings({ clearAtLeast: 297 })).cleared, 3);
});

test('each request is edited afresh: one more result is cleared as each tool use is added', () => {
  const s = settings({ trigger: 10 });
  assert.deepEqual(resultTexts(clearToolUsesAnthropic(anthropic(4), 500, count, s).body), ['[cleared]', 'r1', 'r2', 'r3']);
  assert.deepEqual(resultTexts(clearToolUsesAnthropic(anthropic(5), 600, count, s).body), ['[cleared]', '[cleared]', 'r2', 'r3', 'r4']);
  assert.deepEqual(clearSettings({ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: 30000 } }),
    settings({ trigger: 30000 }));
});

test('Chat form: the same rule on tool messages; parallel calls keep their answers', () => {
  const messages = [{ role: 'system', content: 's' }, { role: 'user', content: 'task' }];
  for (let i = 0; i < 3; i++) {
    messages.push({ role: 'assistant', content: null, tool_calls: [0, 1].map((k) => ({ id: `c${i}${k}`, type: 'function', function: { name: 'bash', arguments: '{}' } })) });
    for (const k of [0, 1]) messages.push({ role: 'tool', tool_call_id: `c${i}${k}`, content: say(50, `r${i}${k}`) });
  }
  const r = clearToolUsesChat({ messages }, 200000, count);
  assert.deepEqual(r.body.messages.filter((m) => m.role === 'tool').map((m) => m.content.split(' ')[0]),
    ['[cleared]', '[cleared]', '[cleared]', 'r11', 'r20', 'r21']);
  assert.equal(validateChat(r.body), null);
  assert.equal(messages[3].content.split(' ')[0], 'r00');
});

test('the Anthropic double edits a request carrying context_management and bills what results', async () => {
  const double = await startCachingDouble({ count, minCacheTokens: 0 });
  const cc = { type: 'ephemeral' };
  const request = (n) => {
    const body = anthropic(n);
    body.system = [{ type: 'text', text: say(50, 'sys'), cache_control: cc }];
    const last = body.messages.at(-1).content;
    last[last.length - 1] = { ...last[last.length - 1], cache_control: cc };
    body.context_management = { edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: 500 } }] };
    return body;
  };
  const post = (body) => fetch(`${double.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  try {
    for (let n = 3; n <= 6; n++) {
      double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
      assert.equal((await post(request(n))).status, 200);
    }
    const u = double.records.map((r) => r.usage);
    // 3 and 4 uses are under 500 words (366, 471); at 5 (576) two results go; at 6 (681), three.
    assert.deepEqual(u.map((x) => x.cleared), [0, 0, 2, 3]);
    assert.deepEqual(resultTexts(double.records[3].body), ['[cleared]', '[cleared]', '[cleared]', 'r3', 'r4', 'r5']);
    // Anthropic caches at breakpoints only: the edited view's prefix was never written at a
    // breakpoint, so after an edit the read falls back to the system prompt and the rest is written.
    assert.deepEqual([u[1].cache_read, u[2].cache_read, u[3].cache_read], [u[0].input_tokens, 50, 50]);
    assert.equal(u[3].cache_write, u[3].input_tokens - 50);
  } finally {
    await double.close();
  }
});

test('the Chat double simulates it and caches up to the first result cleared anew', async () => {
  const double = await startOpenAICachingDouble({ tokenize: (t) => t.split(/\s+/).filter(Boolean), minCacheTokens: 0, increment: 1,
    clearToolUses: settings({ trigger: 500 }) });
  const request = (n) => {
    const messages = [{ role: 'system', content: say(50, 'sys') }, { role: 'user', content: 'task' }];
    for (let i = 0; i < n; i++) {
      messages.push({ role: 'assistant', content: `step ${i}`, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'bash', arguments: `{"c":${i}}` } }] });
      messages.push({ role: 'tool', tool_call_id: `c${i}`, content: say(100, `r${i}`) });
    }
    return { model: 'gpt-bench', messages };
  };
  try {
    for (let n = 4; n <= 6; n++) {
      double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
      const res = await fetch(`${double.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(request(n)) });
      assert.equal(res.status, 200);
    }
    const u = double.records.map((r) => r.usage);
    assert.deepEqual(u.map((x) => x.cleared), [0, 2, 3]);
    // n = 6 after n = 5: the same view up to r2, cleared now (system 50 + task 1 + 3 x (step+call 4)
    // + r0, r1 placeholders + step 2's 4 words).
    assert.equal(u[2].cache_read, 50 + 1 + 4 + 1 + 4 + 1 + 4);
  } finally {
    await double.close();
  }
});
