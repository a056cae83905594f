// Tests of the caching double's billing (node --test bench/model/). Tokens are counted as words
// here so that every expected number can be checked by hand.
import test from 'node:test';
import assert from 'node:assert/strict';
import { PromptCache, startCachingDouble, messageFromSse, costOf, requestBlocks } from './caching_double.mjs';

const words = (text) => text.split(/\s+/).filter(Boolean).length;
const cc = { type: 'ephemeral' };
const text = (n, tag, mark = false) => ({ type: 'text', text: `${tag} `.repeat(n).trim(), ...(mark ? { cache_control: cc } : {}) });

// A conversation: a system block of 100 words (breakpoint), then `turns` user/assistant messages
// of 10 words each; the last block of the last message carries a breakpoint.
function conversation(turns, { systemTag = 's', change = -1 } = {}) {
  const messages = [];
  for (let i = 0; i < turns; i++) {
    const tag = i === change ? `changed${i}` : `m${i}`;
    messages.push({ role: i % 2 ? 'assistant' : 'user', content: [text(10, tag, i === turns - 1)] });
  }
  return { model: 'claude-bench', system: [text(100, systemTag, true)], messages };
}

const cache = (opts = {}) => new PromptCache({ count: words, minCacheTokens: 0, ...opts });

test('a request repeated is read from the cache in full', () => {
  const c = cache();
  const first = c.bill(conversation(3));
  assert.deepEqual([first.input_tokens, first.cache_read, first.cache_write, first.uncached], [130, 0, 130, 0]);
  const again = c.bill(conversation(3));
  assert.deepEqual([again.cache_read, again.cache_write, again.uncached], [130, 0, 0]);
});

test('a grown conversation reads up to the previous end and writes the rest', () => {
  const c = cache();
  c.bill(conversation(3));
  const grown = c.bill(conversation(5));
  assert.deepEqual([grown.input_tokens, grown.cache_read, grown.cache_write, grown.uncached], [150, 130, 20, 0]);
});

test('tokens after the last breakpoint are uncached input', () => {
  const c = cache();
  const body = conversation(3);
  body.messages.push({ role: 'user', content: [text(7, 'tail')] });  // no breakpoint: merged turn
  const r = c.bill(body);
  assert.deepEqual([r.cache_read, r.cache_write, r.uncached], [0, 130, 7]);
});

test('a change inside the prefix misses back to the earlier entry (the system breakpoint)', () => {
  const c = cache();
  c.bill(conversation(5));
  const changed = c.bill(conversation(5, { change: 1 }));
  assert.deepEqual([changed.cache_read, changed.cache_write, changed.uncached], [100, 50, 0]);
  const changedSystem = c.bill(conversation(5, { systemTag: 'S' }));
  assert.deepEqual([changedSystem.cache_read, changedSystem.cache_write], [0, 150]);
});

test('cache_control markers do not count in a prefix\'s identity', () => {
  const c = cache();
  c.bill(conversation(3));
  const body = conversation(4);
  // The previous breakpoint moved off message 2; the content is the same.
  assert.equal(body.messages[2].content[0].cache_control, undefined);
  const r = c.bill(body);
  assert.deepEqual([r.cache_read, r.cache_write], [130, 10]);
});

test('the lookback reaches 20 blocks before a breakpoint, not 21', () => {
  // One message of many one-word blocks after the cached conversation.
  const grow = (n) => {
    const body = conversation(3);
    delete body.messages[2].content[0].cache_control;  // the breakpoint moved to the new end
    const blocks = Array.from({ length: n }, (_, i) => text(1, `b${i}`, i === n - 1));
    body.messages.push({ role: 'assistant', content: blocks });
    return body;
  };
  // 21 added: only the system breakpoint still finds an entry.
  for (const [added, read] of [[20, 130], [21, 100]]) {
    const c = cache();
    c.bill(conversation(3));
    const r = c.bill(grow(added));
    assert.equal(r.cache_read, read, `${added} blocks added`);
    assert.equal(r.cache_write, r.input_tokens - read);
  }
});

test('a second breakpoint within 20 blocks keeps the cache reachable when a turn adds more', () => {
  const c = cache();
  c.bill(conversation(3));
  const body = conversation(3);
  delete body.messages[2].content[0].cache_control;
  const blocks = Array.from({ length: 30 }, (_, i) => text(1, `b${i}`, i === 10 || i === 29));
  body.messages.push({ role: 'assistant', content: blocks });
  const r = c.bill(body);
  assert.deepEqual([r.cache_read, r.cache_write], [130, 30]);
});

test('prefixes shorter than the minimum are not cached', () => {
  const c = cache({ minCacheTokens: 120 });
  const r = c.bill(conversation(1));  // system 100 (breakpoint, too short) + 10 (breakpoint, too short)
  assert.deepEqual([r.cache_read, r.cache_write, r.uncached], [0, 0, 110]);
  const again = c.bill(conversation(3));
  assert.deepEqual([again.cache_read, again.cache_write, again.uncached], [0, 130, 0]);
});

test('tools come first in the cached prefix: a changed tool list misses everything', () => {
  const c = cache();
  const tool = (d) => ({ name: 'bash', description: d, input_schema: { type: 'object' } });
  c.bill({ ...conversation(3), tools: [tool('run a command')] });
  const r = c.bill({ ...conversation(3), tools: [tool('run a shell command')] });
  assert.equal(r.cache_read, 0);
  assert.equal(requestBlocks({ ...conversation(3), tools: [tool('x')] })[0].id.startsWith('tool\n'), true);
});

async function post(url, body, path = '/v1/messages') {
  const res = await fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

test('the double answers scripted turns, bills them and refuses a fifth breakpoint like Anthropic', async () => {
  const double = await startCachingDouble({ count: words, minCacheTokens: 0 });
  try {
    const use = { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls' } };
    double.enqueue({ content: [{ type: 'text', text: 'look around' }, use] });
    const first = await post(double.url, conversation(1));
    assert.equal(first.status, 200);
    const msg = JSON.parse(first.text);
    assert.deepEqual(msg.content[1], use);
    assert.equal(msg.stop_reason, 'tool_use');
    assert.deepEqual(msg.usage, { input_tokens: 0, cache_creation_input_tokens: 110, cache_read_input_tokens: 0, output_tokens: 4 });
    // output: "look around" (2) + "bash\n{...}" (2 words) = 4; cost 110 * 1.25 + 4 * 5
    assert.equal(double.records[0].usage.cost, costOf({ cache_read: 0, cache_write: 110, uncached: 0, output_tokens: 4 }));
    assert.equal(double.records[0].usage.cost, 157.5);

    const body = conversation(1);
    body.messages.push({ role: 'assistant', content: msg.content });
    body.messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a b c', cache_control: cc }] });
    double.enqueue({ content: [{ type: 'text', text: 'done now' }] });
    const streamed = await post(double.url, { ...body, stream: true });
    const m2 = messageFromSse(streamed.text);
    assert.deepEqual(m2.content, [{ type: 'text', text: 'done now' }]);
    assert.equal(m2.usage.cache_read_input_tokens, 110);
    assert.equal(m2.usage.cache_creation_input_tokens, 2 + 2 + 3);  // assistant text, tool_use, result

    const five = conversation(5);
    for (const m of five.messages) m.content[0].cache_control = cc;
    double.enqueue({ content: [{ type: 'text', text: 'x' }] });
    const refused = await post(double.url, five);
    assert.equal(refused.status, 400);
    assert.match(JSON.parse(refused.text).error.message, /A maximum of 4 blocks with cache_control may be provided. Found 6/);

    const orphan = conversation(1);
    orphan.messages.push({ role: 'assistant', content: [use] });
    const missing = await post(double.url, orphan);
    assert.equal(missing.status, 400);
    assert.match(JSON.parse(missing.text).error.message, /tool_use` ids were found without `tool_result`/);

    const counted = await post(double.url, conversation(3), '/v1/messages/count_tokens');
    assert.deepEqual(JSON.parse(counted.text), { input_tokens: 130 });
    assert.equal(double.records.length, 2);
  } finally {
    await double.close();
  }
});

test('with a TTL, an entry lives ttl seconds after its last write or use (Anthropic: refreshed on use)', () => {
  const c = cache({ ttl: 300 });
  assert.deepEqual([c.bill(conversation(3), 0).cache_write], [130]);
  assert.equal(c.bill(conversation(3), 200).cache_read, 130);  // refreshed: lives to 500
  assert.equal(c.bill(conversation(3), 499).cache_read, 130);  // refreshed: lives to 799
  const cold = c.bill(conversation(3), 800);
  assert.deepEqual([cold.cache_read, cold.cache_write], [0, 130]);
  // Without a TTL nothing expires, whatever the clock says.
  const forever = cache();
  forever.bill(conversation(3), 0);
  assert.equal(forever.bill(conversation(3), 1e9).cache_read, 130);
});

test('reading a longer prefix refreshes the entries inside it (refresh: prefix), not with refresh: entry', () => {
  // t=0 writes the system entry and E3 (messages 0-2); t=100 reads E3 and writes E5; t=250 reads
  // E5. At t=500 a request ending at message 2 again (a fold back to E3) finds E3 alive only if
  // reading E5 kept it alive.
  const play = (refresh) => {
    const c = cache({ ttl: 300, refresh });
    c.bill(conversation(3), 0);
    assert.deepEqual([c.bill(conversation(5), 100).cache_read, c.bill(conversation(5), 250).cache_read], [130, 150]);
    const back = c.bill(conversation(3), 500);
    return [back.cache_read, back.cache_write];
  };
  assert.deepEqual(play('prefix'), [130, 0]);
  assert.deepEqual(play('entry'), [100, 30]);  // E3 expired at 400; the system entry was rewritten at 250
});

test('the double bills each ttl cache beside the main one, at the time the driver set', async () => {
  const double = await startCachingDouble({ count: words, minCacheTokens: 0, ttlCaches: [{ name: 'ttl300', ttl: 300 }] });
  try {
    for (const t of [0, 1000]) {
      double.setTimes({ ttl300: t });
      double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
      assert.equal((await post(double.url, conversation(3))).status, 200);
    }
    const [first, second] = double.records.map((r) => r.usage);
    assert.deepEqual(first.ttl.ttl300, { cache_read: 0, cache_write: 130, uncached: 0, cost: 130 * 1.25 + 1 * 5 });
    assert.equal(second.cache_read, 130);             // no expiry in the main cache
    assert.deepEqual([second.ttl.ttl300.cache_read, second.ttl.ttl300.cache_write], [0, 130]);
  } finally {
    await double.close();
  }
});

// Thinking as Claude binds it (tests/agents/lib/thinking_binding.mjs): a tool loop of two turns
// whose replies carry a scripted thinking block with the driver's placeholder signature.
async function thinkingLoop(double, extra = {}, headers = {}) {
  const say = (text) => ({ role: 'user', content: [{ type: 'text', text }] });
  const turn = (k) => ({ content: [{ type: 'thinking', thinking: `plan ${k}`, signature: 'E'.repeat(344) }, { type: 'tool_use', id: `toolu_${k}`, name: 'bash', input: { command: `ls ${k}` } }] });
  const messages = [say('task')];
  for (let k = 0; k < 2; k++) {
    double.enqueue(turn(k));
    const res = await postWith(double.url, { model: 'claude-bench', thinking: { type: 'adaptive' }, ...extra, messages }, headers);
    assert.equal(res.status, 200, res.text);
    messages.push({ role: 'assistant', content: JSON.parse(res.text).content });
    messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: `toolu_${k}`, content: `out ${k}` }] });
  }
  return messages;
}

async function postWith(url, body, headers = {}) {
  const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

const withoutThinkingAt = (messages, i) => messages.map((m, k) => (k === i ? { ...m, content: m.content.filter((b) => b.type !== 'thinking') } : m));

test('the double signs the thinking of its replies and refuses it behind a changed prefix', async () => {
  const double = await startCachingDouble({ count: words, minCacheTokens: 0 });
  try {
    const messages = await thinkingLoop(double);
    const [a0, a1] = [messages[1].content[0], messages[3].content[0]];
    assert.ok(a0.signature !== 'E'.repeat(344) && a1.signature !== a0.signature, 'each reply carries its own signature');
    const body = { model: 'claude-bench', thinking: { type: 'adaptive' }, messages };
    double.enqueue({ content: [{ type: 'text', text: 'done' }] });
    assert.equal((await postWith(double.url, body)).status, 200);
    // A changed earlier message: the provider's 400, counted in errors like the other refusals.
    const changed = structuredClone(body);
    changed.messages[0].content[0].text = 'task, rewritten';
    const refused = await postWith(double.url, changed);
    assert.equal(refused.status, 400);
    assert.match(JSON.parse(refused.text).error.message, /^messages\.1\.content\.0: Invalid `signature` in `thinking` block\. The block is bound to a different conversation\./);
    assert.equal(double.errors.length, 1);
    // The newest thinking left out (removed from the end): still the tool loop's turn, so adaptive
    // thinking is off for the request, recorded and the scripted thinking not sent.
    double.enqueue({ content: [{ type: 'thinking', thinking: 'plan 2', signature: 'E' }, { type: 'text', text: 'done' }] });
    const res = await postWith(double.url, { ...body, messages: withoutThinkingAt(messages, 3) });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(JSON.parse(res.text).content.map((b) => b.type), ['text']);
    assert.deepEqual(double.degraded.map((d) => d.index), [3]);
    assert.deepEqual(double.records.map((r) => r.usage.degraded), [false, false, false, true]);
    assert.equal(double.errors.length, 1);
  } finally {
    await double.close();
  }
});

test('thinking left out at the end of a finished turn is accepted; drop_block drops and does not bill', async () => {
  const double = await startCachingDouble({ count: words, minCacheTokens: 0 });
  try {
    const messages = await thinkingLoop(double);
    // A new user turn: the tool loop is over, its newest thinking may go.
    const next = [...withoutThinkingAt(messages, 3), { role: 'user', content: [{ type: 'text', text: 'next task' }] }];
    double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
    assert.equal((await postWith(double.url, { model: 'claude-bench', thinking: { type: 'adaptive' }, messages: next })).status, 200);
    const full = double.records[2].usage.input_tokens;

    const changed = structuredClone(next);
    changed[0].content[0].text = 'task, rewritten';
    const thinking = { type: 'adaptive', block_binding: { prefix_mismatch_behavior: 'drop_block' } };
    double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
    const res = await postWith(double.url, { model: 'claude-bench', thinking, messages: changed }, { 'anthropic-beta': 'thinking-binding-controls-2026-08-01' });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(JSON.parse(res.text).input_transformations, [{ type: 'thinking_dropped', path: 'messages.1.content.0', reason: 'prefix_binding_mismatch' }]);
    assert.deepEqual(double.dropped, [{ index: 3, path: 'messages.1.content.0', reason: 'prefix_binding_mismatch' }]);
    const { usage } = double.records[3];
    assert.equal(usage.thinking_dropped, 1);
    // "plan 0" (2 words) is not billed; the rewritten task is one word longer.
    assert.equal(usage.input_tokens, full - 2 + 1);
    assert.deepEqual(double.errors, []);
  } finally {
    await double.close();
  }
});

test('a refused request\'s scripted turn is signed by skip() as its answer, so later requests are judged on their own', async () => {
  const double = await startCachingDouble({ count: words, minCacheTokens: 0 });
  try {
    const messages = await thinkingLoop(double);
    // Five breakpoints on text after the last tool result: refused, though its thinking is fine.
    const notes = (n) => Array.from({ length: 5 }, (_, k) => ({ type: 'text', text: `note ${k}`, ...(k >= 5 - n ? { cache_control: cc } : {}) }));
    const last = (n) => ({ ...messages[4], content: [...messages[4].content, ...notes(n)] });  // n marked
    const turn = { content: [{ type: 'thinking', thinking: 'plan 2', signature: 'E' }, { type: 'tool_use', id: 'toolu_2', name: 'bash', input: {} }] };
    double.enqueue(turn);
    const body = (msgs) => ({ model: 'claude-bench', thinking: { type: 'adaptive' }, messages: msgs });
    assert.equal((await postWith(double.url, body([...messages.slice(0, 4), last(5)]))).status, 400);
    double.skip();
    assert.notEqual(turn.content[0].signature, 'E');
    // The driver goes on with the skipped turn: its thinking holds behind the refused request's
    // prefix (cache_control aside), so the next request is accepted.
    const after = [...messages.slice(0, 4), last(1), { role: 'assistant', content: turn.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_2', content: 'out' }] }];
    double.enqueue({ content: [{ type: 'text', text: 'ok' }] });
    const res = await postWith(double.url, body(after));
    assert.equal(res.status, 200, res.text);
    assert.equal(double.errors.length, 1);
    assert.deepEqual([double.dropped, double.degraded], [[], []]);
  } finally {
    await double.close();
  }
});
