// Tests of the OpenAI caching double (node --test bench/model/): automatic prefix billing, the
// 1,024-token minimum and 128-token steps, and the validator. Tokens are words here, so that every
// expected number can be checked by hand.
import test from 'node:test';
import assert from 'node:assert/strict';
import { OpenAIPrefixCache, startOpenAICachingDouble, validateChat, openAICostOf } from './openai_caching_double.mjs';

const words = (text) => text.split(/\s+/).filter(Boolean);
const say = (n, tag) => `${tag} `.repeat(n).trim();
const user = (n, tag) => ({ role: 'user', content: say(n, tag) });
const assistant = (n, tag) => ({ role: 'assistant', content: say(n, tag) });
const exact = () => new OpenAIPrefixCache({ tokenize: words, minCacheTokens: 0, increment: 1 });
const bill = (c, messages, tools) => {
  const r = c.bill({ model: 'gpt-bench', messages, ...(tools ? { tools } : {}) });
  return [r.input_tokens, r.cache_read, r.uncached];
};

test('the longest prefix computed before is cached; what follows is uncached; no write premium', () => {
  const c = exact();
  const base = [{ role: 'system', content: say(100, 's') }, user(10, 'u')];
  assert.deepEqual(bill(c, base), [110, 0, 110]);
  assert.deepEqual(bill(c, base), [110, 110, 0]);
  // The assistant's answer was never part of a prompt: it is uncached input on the next request.
  assert.deepEqual(bill(c, [...base, assistant(10, 'a'), user(5, 'v')]), [125, 110, 15]);
  assert.equal(openAICostOf({ cache_read: 110, uncached: 15, output_tokens: 2 }), 11 + 15 + 8);
});

test('a change inside the prefix caches only what comes before it, down to the token', () => {
  const c = exact();
  const first = [{ role: 'system', content: say(100, 's') }, user(10, 'u'), assistant(10, 'a'), user(50, 'r')];
  bill(c, first);
  // The tool result replaced by a placeholder: only the segments before it are cached.
  assert.deepEqual(bill(c, [...first.slice(0, 3), user(1, '[cleared]')]), [121, 120, 1]);
  // Inside a changed segment, the tokens it shares with the one seen at that place count.
  assert.deepEqual(bill(c, [...first.slice(0, 3), { role: 'user', content: `${say(30, 'r')} different tail` }]), [152, 150, 2]);
  // Tools come first: a changed tool misses everything after it.
  const tool = (d) => ({ type: 'function', function: { name: 'bash', description: d, parameters: { type: 'object' } } });
  bill(c, first, [tool('run it')]);
  assert.equal(bill(c, first, [tool('run a command')])[1], 2);  // "bash" and "run" in common
});

test('caching starts at 1,024 tokens and grows in 128-token steps', () => {
  const c = new OpenAIPrefixCache({ tokenize: words });
  const small = [user(1000, 'x')];
  bill(c, small);
  assert.deepEqual(bill(c, small), [1000, 0, 1000]);
  const big = [user(2000, 'y')];
  bill(c, big);
  assert.deepEqual(bill(c, big), [2000, 1920, 80]);
  assert.deepEqual(bill(c, [...big, assistant(300, 'z')]), [2300, 1920, 380]);
  // 1,100 tokens in common: one 1,024-token block, no partial step.
  const c2 = new OpenAIPrefixCache({ tokenize: words });
  bill(c2, [user(1100, 'p'), user(10, 'q')]);
  assert.deepEqual(bill(c2, [user(1100, 'p'), user(10, 'other')]), [1110, 1024, 86]);
});

const call = (id, name = 'bash', args = '{"command":"ls"}') => ({ id, type: 'function', function: { name, arguments: args } });

test('the validator refuses unpaired tool calls, orphan tool messages and bad roles', () => {
  const sys = { role: 'system', content: 's' };
  const ok = [sys, user(1, 'u'), { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2')] },
    { role: 'tool', tool_call_id: 'c1', content: 'a' }, { role: 'tool', tool_call_id: 'c2', content: 'b' }, user(1, 'u')];
  assert.equal(validateChat({ messages: ok }), null);
  assert.match(validateChat({ messages: ok.filter((m) => m.tool_call_id !== 'c2') }), /did not have response messages: c2/);
  assert.match(validateChat({ messages: [sys, user(1, 'u'), { role: 'tool', tool_call_id: 'c9', content: 'x' }] }),
    /must be a response to a preceding message with 'tool_calls'/);
  assert.match(validateChat({ messages: [sys, { role: 'human', content: 'x' }] }), /Invalid value: 'human'/);
  assert.match(validateChat({ messages: [sys, { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: {} } }] }] }),
    /string arguments/);
  assert.match(validateChat({ messages: [] }), /non-empty/);
});

async function post(url, body) {
  const res = await fetch(`${url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

test('the double answers scripted turns as Chat completions, bills them and refuses like the API', async () => {
  const double = await startOpenAICachingDouble({ tokenize: words, minCacheTokens: 0, increment: 1 });
  try {
    assert.match(double.url, /\/v1$/);
    double.enqueue({ content: [{ type: 'text', text: 'look' }, { type: 'tool_use', id: 'call_1', name: 'bash', input: { command: 'ls' } }] });
    const messages = [{ role: 'system', content: say(20, 's') }, user(5, 'u')];
    const first = await post(double.url, { model: 'gpt-bench', messages });
    assert.equal(first.status, 200);
    const m = first.json.choices[0].message;
    assert.deepEqual(m.tool_calls, [call('call_1', 'bash', '{"command":"ls"}')]);
    assert.equal(first.json.choices[0].finish_reason, 'tool_calls');
    assert.deepEqual([first.json.usage.prompt_tokens, first.json.usage.prompt_tokens_details.cached_tokens], [25, 0]);
    // output: "look" + "bash" + '{"command":"ls"}' = 3 words, at 4x
    assert.equal(double.records[0].usage.cost, 25 + 3 * 4);

    // A tool call left unanswered: 400 in the API's error shape, nothing billed.
    const unanswered = await post(double.url, { model: 'gpt-bench', messages: [...messages, { role: 'assistant', content: m.content, tool_calls: m.tool_calls }] });
    assert.equal(unanswered.status, 400);
    assert.deepEqual(Object.keys(unanswered.json.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(unanswered.json.error.type, 'invalid_request_error');
    assert.equal(double.records.length, 1);
    assert.equal(double.errors.length, 1);

    double.enqueue({ content: [{ type: 'text', text: 'done' }] });
    const next = await post(double.url, { model: 'gpt-bench', messages: [...messages,
      { role: 'assistant', content: m.content, tool_calls: m.tool_calls }, { role: 'tool', tool_call_id: 'call_1', content: 'a b c' }] });
    assert.equal(next.status, 200);
    assert.equal(next.json.choices[0].message.content, 'done');
    assert.equal(next.json.usage.prompt_tokens_details.cached_tokens, 25);
    assert.equal(next.json.usage.prompt_tokens, 25 + 3 + 3);  // the assistant message (as output), the result
  } finally {
    await double.close();
  }
});

test('with a TTL, a prefix lives ttl seconds after the last request that carried it, an hour at most', () => {
  const c = new OpenAIPrefixCache({ tokenize: words, minCacheTokens: 0, increment: 1, ttl: 300 });
  const base = [{ role: 'system', content: say(100, 's') }, user(10, 'u')];
  const at = (now, messages = base) => c.bill({ model: 'gpt-bench', messages }, now).cache_read;
  assert.equal(at(0), 0);
  assert.equal(at(200), 110);
  assert.equal(at(500), 110);   // 300 s after the last use: still alive
  assert.equal(at(801), 0);     // 301 s of inactivity: computed again
  // A longer prompt keeps its shorter prefixes alive (they are part of it).
  at(900, [...base, assistant(10, 'a'), user(5, 'v')]);
  assert.equal(at(1150), 110);
  // Used every 250 s, it still goes at 3,600 s after it was computed (here at 801).
  for (let t = 1400; t <= 4400; t += 250) assert.equal(at(t), 110, `t=${t}`);
  assert.equal(at(4650), 0);    // 3,849 s after 801
  assert.equal(at(4700), 110);  // computed again at 4,650
  // Without a TTL nothing expires.
  const forever = exact();
  bill(forever, base);
  assert.equal(forever.bill({ model: 'gpt-bench', messages: base }, 1e9).cache_read, 110);
});

test('a prompt computed again after its hour is new as a whole: the next request reads it all', () => {
  const c = new OpenAIPrefixCache({ tokenize: words, minCacheTokens: 0, increment: 1, ttl: 300 });
  const grow = (n) => [{ role: 'system', content: say(100, 's') }, ...Array.from({ length: n }, (_, i) => user(10, `u${i}`))];
  // One more message every 200 s: each request reads the last one's prompt whole.
  let t = 0;
  for (let n = 1; t <= 3600; n++, t += 200) assert.equal(c.bill({ model: 'gpt-bench', messages: grow(n) }, t).cache_read, t === 0 ? 0 : 100 + 10 * (n - 1), `t=${t}`);
  // At 3,800 s the system prompt (computed at 0) is past its hour: nothing is read and the whole
  // prompt is computed again; the next request reads all of it, not only what expired.
  const n = 3800 / 200 + 1;
  assert.equal(c.bill({ model: 'gpt-bench', messages: grow(n) }, 3800).cache_read, 0);
  assert.equal(c.bill({ model: 'gpt-bench', messages: grow(n + 1) }, 4000).cache_read, 100 + 10 * n);
});
