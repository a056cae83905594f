// contextd's model gateway (POST /v1/messages and the rest of /v1/ on the HTTP listener) driven by
// the official Anthropic TypeScript SDK (tools/npm/agents) and by raw fetch: answers relayed as
// they arrive, JSON and SSE; an https upstream verified against a test CA (and refused under
// another); the provider's errors relayed byte for byte; a stream broken upstream breaks the
// client's; an unreachable or silent upstream and bad requests get Anthropic-shaped errors; a
// client that goes away cancels the upstream request; headers and unknown body fields pass as sent.
// Every wait is on an event, bounded by `within` or the test's timeout.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';
import { startUpstream, closedPort, makeCa, startGateway, within, sse } from './lib/model_upstream.mjs';
import { BINARY, cleanup } from '../e2e/harness.mjs';

const sdkEntry = new URL('../../tools/npm/agents/node_modules/@anthropic-ai/sdk/index.mjs', import.meta.url);
const missing = !existsSync(BINARY) ? `contextd is not built at ${BINARY}`
  : !existsSync(sdkEntry) ? 'the Anthropic SDK is not installed (scripts/install-deps.sh installs tools/npm/agents)'
    : null;
const Anthropic = missing ? null : (await import(sdkEntry)).default;
const opts = (timeout) => ({ skip: missing ?? false, timeout });

const MODEL = 'claude-double-1';
const hello = [{ role: 'user', content: 'Say hello.' }];

function sdk(origin, extra = {}) {
  return new Anthropic({ apiKey: 'sk-ant-test-key', baseURL: origin, maxRetries: 0, timeout: 15000, ...extra });
}

// The Anthropic error shape, parsed; fails the test when `text` is not it.
function anthropicError(text) {
  let body;
  assert.doesNotThrow(() => { body = JSON.parse(text); }, `not JSON: ${text}`);
  assert.equal(body.type, 'error', text);
  assert.equal(typeof body.error?.type, 'string', text);
  assert.equal(typeof body.error?.message, 'string', text);
  return body.error;
}

// Reads an SSE response body: calls onEvent(parsed data) per event as it arrives; resolves with
// {events, error} where `error` is what reading rejected with (null for a clean end).
async function readSse(res, onEvent = () => {}) {
  const events = [];
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of res.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let cut;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = block.split('\n').find((l) => l.startsWith('data: '));
        if (!data) continue;
        const event = JSON.parse(data.slice(6));
        events.push(event);
        onEvent(event);
      }
    }
  } catch (error) {
    return { events, error };
  }
  return { events, error: null };
}

// A message as a streaming upstream sends it; `hold` (a promise) pauses it after the first text
// delta. Resolves when it wrote message_stop.
function streamHello(res, { hold = Promise.resolve(), text = ['Hel', 'lo.'] } = {}) {
  const message = { id: 'msg_up_1', type: 'message', role: 'assistant', model: MODEL, content: [],
    stop_reason: null, stop_sequence: null, usage: { input_tokens: 9, output_tokens: 1 } };
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_up_stream' });
  res.write(sse('message_start', { message }));
  res.write(sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
  res.write(sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: text[0] } }));
  return hold.then(() => {
    for (const t of text.slice(1)) res.write(sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: t } }));
    res.write(sse('content_block_stop', { index: 0 }));
    res.write(sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }));
    res.write(sse('message_stop'));
    res.end();
  });
}

function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

test('SDK through the gateway: messages.create, messages.stream, countTokens and models.list', opts(60000), async () => {
  const double = await startAnthropicDouble({ script: [{ text: 'Hello from the double.' }, { text: 'Streamed hello.' }], matchMain: () => true });
  const gw = await startGateway({ anthropic: { base_url: double.url } });
  try {
    const client = sdk(gw.origin);
    const created = await client.messages.create({ model: MODEL, max_tokens: 64, messages: hello });
    assert.equal(created.type, 'message');
    assert.equal(created.role, 'assistant');
    assert.equal(created.stop_reason, 'end_turn');
    assert.deepEqual(created.content.map((b) => b.type), ['thinking', 'text']);
    assert.equal(created.content[1].text, 'Hello from the double.');
    assert.ok(created.usage.input_tokens > 0 && created.usage.output_tokens === 20, JSON.stringify(created.usage));
    assert.match(created._request_id ?? '', /^req_double_/, 'the request-id header is relayed');
    assert.equal(double.requests.length, 1);
    assert.deepEqual(double.requests[0].json.messages, hello);

    const stream = client.messages.stream({ model: MODEL, max_tokens: 64, messages: hello });
    const types = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const final = await within(stream.finalMessage(), 15000, 'the final streamed message');
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    assert.equal(final.id, 'msg_double_2');
    assert.equal(final.stop_reason, 'end_turn');
    assert.equal(final.content[0].type, 'thinking');
    assert.equal(final.content[0].signature.length > 0, true);
    assert.equal(final.content[1].type, 'text');
    assert.equal(final.content[1].text, 'Streamed hello.');
    assert.equal(final.usage.output_tokens, 20);
    assert.ok(final.usage.input_tokens > 0);
    assert.equal(double.requests[1].json.stream, true);

    const counted = await client.messages.countTokens({ model: MODEL, messages: hello });
    assert.equal(counted.input_tokens, Math.ceil(double.requests[2].raw.length / 4));
    assert.equal(double.requests[2].url, '/v1/messages/count_tokens');

    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, [MODEL]);
    assert.equal(double.requests[3].method, 'GET');
    assert.match(double.requests[3].url, /^\/v1\/models/);
  } finally {
    await gw.stop();
    await double.close();
  }
});

test('SDK stream: the first text delta arrives while the upstream is still holding the rest', opts(30000), async () => {
  const release = deferred();
  let finished = false;
  const upstream = await startUpstream({
    handle: (req, res) => { streamHello(res, { hold: release.promise }).then(() => { finished = true; }); },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  try {
    const stream = sdk(gw.origin).messages.stream({ model: MODEL, max_tokens: 64, messages: hello });
    const firstText = new Promise((resolve) => stream.once('text', (delta) => resolve({ delta, finished })));
    const first = await within(firstText, 10000, 'the first text delta through the gateway');
    assert.deepEqual(first, { delta: 'Hel', finished: false });
    release.resolve();
    const final = await within(stream.finalMessage(), 10000, 'the rest of the stream');
    assert.equal(finished, true);
    assert.deepEqual(final.content.map((b) => [b.type, b.text]), [['text', 'Hello.']]);
    assert.deepEqual(final.usage.output_tokens, 4);
  } finally {
    release.resolve();
    await gw.stop();
    await upstream.close();
  }
});

test('TLS upstream: trusted through ca_file, refused (502, naming the upstream) under another CA', opts(60000), async () => {
  const good = makeCa('good');
  const other = makeCa('other');
  const upstream = await startUpstream({
    tls: { key: good.key, cert: good.cert },
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: [{ type: 'model', id: MODEL, display_name: 'TLS', created_at: '2026-01-01T00:00:00Z' }], has_more: false, first_id: MODEL, last_id: MODEL }));
    },
  });
  const baseUrls = [upstream.url, `https://localhost:${upstream.port}`];
  const trusted = await Promise.all(baseUrls.map((base_url) => startGateway({ anthropic: { base_url, ca_file: good.caFile } })));
  const refused = await startGateway({ anthropic: { base_url: upstream.url, ca_file: other.caFile } });
  try {
    for (const gw of trusted) {
      const res = await fetch(`${gw.origin}/v1/models`, { headers: { 'x-api-key': 'k' } });
      assert.equal(res.status, 200, await res.clone().text());
      assert.equal((await res.json()).data[0].id, MODEL);
      const models = [];
      for await (const m of sdk(gw.origin).models.list()) models.push(m.id);
      assert.deepEqual(models, [MODEL]);
    }
    const seen = upstream.requests.length;
    const res = await fetch(`${refused.origin}/v1/messages`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: hello }),
    });
    const text = await res.text();
    assert.equal(res.status, 502, text);
    const error = anthropicError(text);
    assert.equal(error.type, 'api_error');
    assert.ok(error.message.includes(upstream.url) || error.message.includes(`127.0.0.1:${upstream.port}`), error.message);
    assert.match(error.message, /certificate/i);
    assert.equal(upstream.requests.length, seen, 'no request reached the upstream over an unverified connection');
  } finally {
    for (const gw of [...trusted, refused]) await gw.stop();
    await upstream.close();
    cleanup(good.dir);
    cleanup(other.dir);
  }
});

// What the provider sends for its errors (bodies as the API writes them).
const providerErrors = [
  { status: 429, headers: { 'retry-after': '7', 'anthropic-ratelimit-requests-remaining': '0', 'request-id': 'req_up_429' },
    body: '{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit (https://docs.anthropic.com/en/api/rate-limits); see the response headers for current usage."},"request_id":"req_up_429"}',
    sdkClass: 'RateLimitError' },
  { status: 529, headers: { 'request-id': 'req_up_529', 'x-should-retry': 'true' },
    body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_up_529"}',
    sdkClass: null },
  { status: 400, headers: { 'request-id': 'req_up_400' },
    body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: Input should be a valid list"},"request_id":"req_up_400"}',
    sdkClass: 'BadRequestError' },
];

test('upstream errors (429 with retry-after, 529, 400) relayed with their status, headers and bytes', opts(60000), async () => {
  let current = providerErrors[0];
  const upstream = await startUpstream({
    handle: (req, res) => {
      res.writeHead(current.status, { 'content-type': 'application/json', ...current.headers });
      res.end(current.body);
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  try {
    for (const e of providerErrors) {
      current = e;
      const res = await fetch(`${gw.origin}/v1/messages`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: MODEL, max_tokens: 8, messages: hello }),
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(res.status, e.status);
      assert.equal(bytes.toString('utf8'), e.body, `${e.status}: body bytes`);
      assert.equal(res.headers.get('content-type'), 'application/json');
      for (const [k, v] of Object.entries(e.headers)) assert.equal(res.headers.get(k), v, `${e.status}: header ${k}`);

      let caught = null;
      try {
        await sdk(gw.origin).messages.create({ model: MODEL, max_tokens: 8, messages: hello });
      } catch (error) {
        caught = error;
      }
      assert.ok(caught instanceof Anthropic.APIError, `${e.status}: SDK threw ${caught}`);
      if (e.sdkClass) assert.ok(caught instanceof Anthropic[e.sdkClass], `${e.status}: ${caught.constructor.name}`);
      assert.equal(caught.status, e.status);
      assert.deepEqual(caught.error, JSON.parse(e.body));
      assert.equal(caught.requestID, e.headers['request-id']);
      for (const [k, v] of Object.entries(e.headers)) assert.equal(caught.headers.get(k), v, `${e.status}: SDK header ${k}`);
    }
    assert.equal(upstream.requests.length, providerErrors.length * 2, 'maxRetries: 0 and no retry by contextd');
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

test('a stream the upstream drops mid-answer breaks the client stream; contextd stays healthy', opts(30000), async () => {
  const delta = deferred();
  let dropped = false;
  const upstream = await startUpstream({
    handle: (req, res, record) => {
      if (JSON.parse(record.raw).messages[0].content === 'after') { streamHello(res); return; }
      streamHello(res, { hold: new Promise(() => {}) });
      // Dropped once the client saw the delta: the gateway had it in hand before the break.
      delta.promise.then(() => { dropped = true; res.socket.destroy(); });
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  const post = (content) => fetch(`${gw.origin}/v1/messages`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: MODEL, max_tokens: 8, stream: true, messages: [{ role: 'user', content }] }),
  });
  try {
    const res = await post('drop');
    assert.equal(res.status, 200);
    const read = await within(readSse(res, (e) => { if (e.type === 'content_block_delta') delta.resolve(); }), 15000, 'the broken stream to end');
    assert.equal(dropped, true);
    const types = read.events.map((e) => e.type);
    // No message_stop: the answer is visibly incomplete. (That reading also
    // fails is the next test.)
    assert.deepEqual(types, ['message_start', 'content_block_start', 'content_block_delta']);

    // Through the SDK: finalMessage rejects (today with "stream ended without producing a
    // Message", straight from the upstream with undici's "terminated").
    const sdkDelta = deferred();
    delta.promise = sdkDelta.promise;
    dropped = false;
    const stream = sdk(gw.origin).messages.stream({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'drop' }] });
    stream.on('text', () => sdkDelta.resolve());
    const outcome = await within(stream.finalMessage().then((m) => ({ message: m }), (error) => ({ error })), 15000, 'the SDK stream to end');
    assert.equal(dropped, true);
    assert.ok(outcome.error instanceof Anthropic.AnthropicError, `the SDK stream ended with ${JSON.stringify(outcome.message)}`);

    const health = await fetch(`${gw.origin}/healthz`);
    assert.equal(health.status, 200);
    const after = await post('after');
    const ok = await within(readSse(after), 15000, 'a later stream');
    assert.equal(ok.error, null);
    assert.equal(ok.events.at(-1).type, 'message_stop');
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

// What the client reads after the upstream broke off: the raw bytes of one streamed answer.
async function rawStreamBytes(origin, content) {
  const { connect } = await import('node:net');
  const { hostname, port } = new URL(origin);
  const body = JSON.stringify({ model: MODEL, max_tokens: 8, stream: true, messages: [{ role: 'user', content }] });
  const socket = connect(Number(port), hostname);
  const chunks = [];
  socket.on('data', (c) => chunks.push(c));
  socket.write(`POST /v1/messages HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
    `x-api-key: k\r\nanthropic-version: 2023-06-01\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  await new Promise((resolve) => socket.on('close', resolve));
  return Buffer.concat(chunks).toString('utf8');
}

test('a stream the upstream drops mid-answer is cut at the HTTP level too (no last chunk)', {
  ...opts(30000),
}, async () => {
  const upstream = await startUpstream({
    handle: (req, res) => {
      streamHello(res, { hold: new Promise(() => {}) });
      // The first delta has been written by the time the socket goes (writes are in order).
      res.socket.end(() => res.socket.destroy());
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  try {
    const raw = await within(rawStreamBytes(gw.origin, 'drop'), 15000, 'contextd to close the connection');
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.match(raw, /content_block_delta/);
    assert.ok(!raw.includes('message_stop'));
    assert.ok(!raw.endsWith('\r\n0\r\n\r\n'), `the chunked body ends cleanly: ...${JSON.stringify(raw.slice(-120))}`);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

test('unreachable upstream: 502 api_error naming it; silent upstream: 504 timeout_error', opts(30000), async () => {
  const port = await closedPort();
  const silent = await startUpstream({ handle: () => {} });
  const unreachable = await startGateway({ anthropic: { base_url: `http://127.0.0.1:${port}` } });
  const slow = await startGateway({ anthropic: { base_url: silent.url, response_timeout_seconds: 1 } });
  const body = JSON.stringify({ model: MODEL, max_tokens: 8, messages: hello });
  const headers = { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
  try {
    const res = await fetch(`${unreachable.origin}/v1/messages`, { method: 'POST', headers, body });
    const text = await res.text();
    assert.equal(res.status, 502, text);
    const error = anthropicError(text);
    assert.equal(error.type, 'api_error');
    assert.ok(error.message.includes(`127.0.0.1:${port}`), error.message);
    assert.equal(res.headers.get('content-type'), 'application/json');

    const started = Date.now();
    const timed = await fetch(`${slow.origin}/v1/messages`, { method: 'POST', headers, body });
    const timedText = await timed.text();
    assert.equal(timed.status, 504, timedText);
    const timeout = anthropicError(timedText);
    assert.equal(timeout.type, 'timeout_error');
    assert.ok(timeout.message.includes(silent.url) || timeout.message.includes(`127.0.0.1:${silent.port}`), timeout.message);
    assert.ok(Date.now() - started < 10000, 'answered near response_timeout_seconds');
    assert.equal(silent.requests.length, 1);
  } finally {
    await unreachable.stop();
    await slow.stop();
    await silent.close();
  }
});

test('model_gateway.providers.<name> configures the upstreams the aliases do: each API goes to its provider', { timeout: 30000 }, async () => {
  const anthropicPort = await closedPort();
  const openaiPort = await closedPort();
  const silent = await startUpstream({ handle: () => {} });
  const unreachable = await startGateway({ providers: {
    anthropic: { base_url: `http://127.0.0.1:${anthropicPort}` },
    openai: { base_url: `http://127.0.0.1:${openaiPort}/v1` },
  } });
  const slow = await startGateway({ providers: { openai: { base_url: `${silent.url}/v1`, response_timeout_seconds: 1 } } });
  const json = { 'content-type': 'application/json' };
  const messages = JSON.stringify({ model: MODEL, max_tokens: 8, messages: hello });
  const chat = JSON.stringify({ model: 'gpt', messages: [{ role: 'user', content: 'hi' }] });
  try {
    const toAnthropic = await fetch(`${unreachable.origin}/v1/messages`, {
      method: 'POST', headers: { ...json, 'x-api-key': 'k', 'anthropic-version': '2023-06-01' }, body: messages });
    const anthropicText = await toAnthropic.text();
    assert.equal(toAnthropic.status, 502, anthropicText);
    assert.equal(anthropicError(anthropicText).type, 'api_error');
    assert.ok(anthropicText.includes(`127.0.0.1:${anthropicPort}`), anthropicText);

    const toOpenai = await fetch(`${unreachable.origin}/v1/chat/completions`, {
      method: 'POST', headers: { ...json, authorization: 'Bearer k' }, body: chat });
    const openaiText = await toOpenai.text();
    assert.equal(toOpenai.status, 502, openaiText);
    const openaiError = JSON.parse(openaiText).error;
    assert.equal(openaiError.code, 'upstream_unreachable');
    assert.ok(openaiError.message.includes(`127.0.0.1:${openaiPort}/v1`), openaiText);

    const timed = await fetch(`${slow.origin}/v1/chat/completions`, {
      method: 'POST', headers: { ...json, authorization: 'Bearer k' }, body: chat });
    const timedText = await timed.text();
    assert.equal(timed.status, 504, timedText);
    assert.equal(JSON.parse(timedText).error.code, 'upstream_timeout');
    assert.equal(silent.requests.length, 1);
    assert.equal(silent.requests[0].url, '/v1/chat/completions');
  } finally {
    await unreachable.stop();
    await slow.stop();
    await silent.close();
  }
});

test('bad requests: malformed JSON gets 400 invalid_request_error; a malformed body never goes upstream', opts(30000), async () => {
  const upstream = await startUpstream({ handle: (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); } });
  const gw = await startGateway({ anthropic: { base_url: upstream.url }, maxBodyBytes: 2048 });
  const headers = { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
  try {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const res = await fetch(`${gw.origin}${path}`, { method: 'POST', headers, body: '{"model": "x", "messages": [' });
      const text = await res.text();
      assert.equal(res.status, 400, text);
      assert.equal(anthropicError(text).type, 'invalid_request_error');
      assert.equal(res.headers.get('content-type'), 'application/json');
    }
    assert.equal(upstream.requests.length, 0);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

test('a body over max_body_bytes gets 413 in the Anthropic error shape', {
  ...opts(30000),
}, async () => {
  const upstream = await startUpstream({ handle: (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); } });
  const gw = await startGateway({ anthropic: { base_url: upstream.url }, maxBodyBytes: 2048 });
  const headers = { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
  try {
    const big = JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    for (const path of ['/v1/messages', '/v1/models']) {
      const res = await fetch(`${gw.origin}${path}`, { method: 'POST', headers, body: big });
      const text = await res.text();
      assert.equal(res.status, 413, text);
      assert.equal(upstream.requests.length, 0);
      const error = anthropicError(text);
      assert.equal(error.type, 'request_too_large', text);
      assert.match(error.message, /2048/);
    }
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

// One raw HTTP exchange on a fresh connection (the listener's refusals come before any HTTP client
// would send them): resolves with {status, headers, body} once the server has closed.
function rawExchange(origin, bytes) {
  const { hostname, port } = new URL(origin);
  return within(new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) }, () => socket.end(bytes));
    const chunks = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const cut = text.indexOf('\r\n\r\n');
      const head = text.slice(0, cut).split('\r\n');
      const headers = Object.fromEntries(head.slice(1).map((l) => {
        const i = l.indexOf(':');
        return [l.slice(0, i).toLowerCase(), l.slice(i + 1).trim()];
      }));
      resolve({ status: Number(head[0].split(' ')[1]), headers, body: text.slice(cut + 4) });
    });
  }), 10000, `an answer to ${JSON.stringify(bytes.slice(0, 40))}`);
}

test('the listener\'s own refusals on /v1/messages and /v1/chat/completions come in the provider\'s error shape', {
  ...opts(30000),
}, async () => {
  const upstream = await startUpstream({ handle: (req, res) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); } });
  const gw = await startGateway({ anthropic: { base_url: upstream.url }, openai: { base_url: upstream.url } });
  const { host } = new URL(gw.origin);
  const body = JSON.stringify({ model: MODEL, max_tokens: 8, messages: hello });
  const request = (method, path, headers) =>
    `${method} ${path} HTTP/1.1\r\n${headers}Content-Type: application/json\r\nConnection: close\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  const cases = [
    { name: 'Host not allowed', status: 403, bytes: (p) => request('POST', p, 'Host: evil.example\r\n') },
    { name: 'Origin not allowed', status: 403, bytes: (p) => request('POST', p, `Host: ${host}\r\nOrigin: https://evil.example\r\n`) },
    { name: 'headers too large', status: 431, bytes: (p) => request('POST', p, `Host: ${host}\r\nX-Big: ${'a'.repeat(70000)}\r\n`) },
    { name: 'malformed headers', status: 400, bytes: (p) => request('POST', p, `Host: ${host}\r\nNot A Header\r\n`) },
  ];
  try {
    for (const path of ['/v1/messages', '/v1/chat/completions']) {
      for (const c of cases) {
        const res = await rawExchange(gw.origin, c.bytes(path));
        const what = `${path}, ${c.name}: ${res.body}`;
        assert.equal(res.status, c.status, what);
        assert.equal(res.headers['content-type'], 'application/json', what);
        const parsed = JSON.parse(res.body);
        if (path === '/v1/messages') {
          assert.equal(parsed.type, 'error', what);
          assert.equal(parsed.error.type, c.status === 403 ? 'permission_error' : 'invalid_request_error', what);
          assert.equal(typeof parsed.error.message, 'string', what);
        } else {
          assert.equal(parsed.jsonrpc, undefined, what);
          assert.equal(parsed.error.type, 'invalid_request_error', what);
          assert.equal(typeof parsed.error.message, 'string', what);
        }
      }
    }
    // A GET on the POST-only Messages route: 405 with Allow, in the Anthropic shape.
    const res = await rawExchange(gw.origin, `GET /v1/messages HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    assert.equal(res.status, 405, res.body);
    assert.equal(res.headers.allow, 'POST');
    assert.equal(JSON.parse(res.body).type, 'error', res.body);
    assert.equal(upstream.requests.length, 0);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

test('a client that goes away mid-stream cancels the upstream request', opts(30000), async () => {
  const upstreamClosed = deferred();
  const upstream = await startUpstream({
    handle: (req, res) => {
      req.socket.once('close', () => upstreamClosed.resolve('socket closed'));
      streamHello(res, { hold: new Promise(() => {}) });
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  try {
    // Raw fetch.
    const controller = new AbortController();
    const res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 8, stream: true, messages: hello }),
    });
    const read = readSse(res, (e) => { if (e.type === 'content_block_delta') controller.abort(); });
    assert.equal(await within(upstreamClosed.promise, 5000, 'the upstream request to be closed after the client aborted'), 'socket closed');
    assert.ok((await read).error, 'the aborted read rejects');

    // The SDK's own abort.
    const sdkClosed = deferred();
    upstream.handle = (req, res) => {
      req.socket.once('close', () => sdkClosed.resolve('socket closed'));
      streamHello(res, { hold: new Promise(() => {}) });
    };
    const stream = sdk(gw.origin).messages.stream({ model: MODEL, max_tokens: 8, messages: hello });
    stream.on('text', () => stream.abort());
    const aborted = stream.finalMessage().catch((e) => e);
    assert.equal(await within(sdkClosed.promise, 5000, 'the upstream request to be closed after the SDK aborted'), 'socket closed');
    assert.ok((await aborted) instanceof Anthropic.APIUserAbortError);
    assert.equal((await fetch(`${gw.origin}/healthz`)).status, 200);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});

test('headers and unknown body fields reach the upstream as sent', opts(30000), async () => {
  const upstream = await startUpstream({
    handle: (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'msg_h', type: 'message', role: 'assistant', model: MODEL, content: [{ type: 'text', text: 'ok' }],
        stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } }));
    },
  });
  const gw = await startGateway({ anthropic: { base_url: upstream.url } });
  const sent = {
    'content-type': 'application/json',
    'x-api-key': 'sk-ant-api03-VerbatimKey_0123456789',
    authorization: 'Bearer sk-ant-oat01-VerbatimToken_abcdef',
    'anthropic-version': '2023-06-01',
    'anthropic-beta': 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14, context-1m-2025-08-07',
    'anthropic-dangerous-direct-browser-access': 'true',
    // (Leading and trailing blanks are not part of a field value: fetch and node strip them.)
    'anthropic-custom-header': 'spaced  value ; with=parts',
    'x-stainless-retry-count': '0',
    'user-agent': 'claude-cli/2.1.332 (external, cli)',
  };
  // Unknown fields beside known ones, in an order and spelling the gateway must not normalise.
  const rest = {
    model: MODEL, max_tokens: 16, stream: false,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral', ttl: '1h' } }],
    metadata: { user_id: 'user_abc' },
    thinking: { type: 'enabled', budget_tokens: 1024 },
    temperature: 0.5,
    context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] },
    future_field: { nested: [1, 2.5, 'three', null, true], unicode: 'é\u2028✓' },
  };
  const body = JSON.stringify({ ...rest, messages: hello });
  try {
    const res = await fetch(`${gw.origin}/v1/messages?beta=true`, { method: 'POST', headers: sent, body });
    assert.equal(res.status, 200, await res.clone().text());
    assert.equal((await res.json()).content[0].text, 'ok');
    const got = upstream.requests[0];
    assert.equal(got.url, '/v1/messages?beta=true');
    for (const [k, v] of Object.entries(sent)) assert.equal(got.headers[k], v, `header ${k}`);
    const received = JSON.parse(got.raw);
    const { messages, ...receivedRest } = received;
    assert.deepEqual(receivedRest, rest);
    assert.deepEqual(messages, hello);
    assert.deepEqual(Object.keys(received), Object.keys(JSON.parse(body)), 'field order kept');

    // Written by hand (blanks, escapes, number spellings): everything but `messages` arrives byte
    // for byte, and so do unchanged messages.
    const handWritten = '{ "model" : "claude-double-1",\n  "max_tokens": 16, "temperature": 0.50, "top_k": 1e1,\n' +
      '  "metadata": {"user_id": "caf\\u00e9"}, "messages": [ {"role": "user", "content": "Say hello."} ],\n' +
      '  "zzz_unknown": [ 1.0, -0, "\\/" ] }';
    JSON.parse(handWritten);
    const res2 = await fetch(`${gw.origin}/v1/messages`, { method: 'POST', headers: sent, body: handWritten });
    assert.equal(res2.status, 200, await res2.clone().text());
    await res2.arrayBuffer();
    assert.equal(upstream.requests[1].raw, handWritten);

    // The SDK's betas become one comma-separated anthropic-beta header; every header the SDK
    // sends (its key, version, stainless ones) arrives as it sends it straight to the upstream,
    // but those the gateway documents as its own (Host, Content-Length, Connection,
    // Accept-Encoding).
    const betaCall = { model: MODEL, max_tokens: 16, messages: hello, betas: ['beta-one-2025-01-01', 'beta-two-2025-02-02'] };
    await sdk(gw.origin).beta.messages.create(betaCall);
    await sdk(upstream.url).beta.messages.create(betaCall);
    const [viaGateway, direct] = upstream.requests.slice(2, 4).map((r) => {
      const { host, connection, 'content-length': length, 'accept-encoding': encoding, ...h } = r.headers;
      return h;
    });
    assert.equal(viaGateway['anthropic-beta'], 'beta-one-2025-01-01,beta-two-2025-02-02');
    assert.ok(viaGateway['x-api-key'] === 'sk-ant-test-key' || viaGateway.authorization === 'Bearer sk-ant-test-key', JSON.stringify(viaGateway));
    assert.deepEqual(viaGateway, direct);
    assert.equal(upstream.requests[2].raw, upstream.requests[3].raw);
  } finally {
    await gw.stop();
    await upstream.close();
  }
});
