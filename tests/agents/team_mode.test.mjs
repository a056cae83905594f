// Team mode of the model gateway (issue 21, decision 0022): contextd holds the provider keys
// (model_gateway.<provider>.api_key_env) and clients authenticate with their tenant's contextd
// token as x-api-key or Authorization: Bearer (or x-contextd-token). Against double upstreams
// (127.0.0.1 port 0) that record every request: the provider key replaces the tenant token (the
// token never reaches the provider), a request without a known token gets the provider-shaped 401
// and never leaves; usage is counted per tenant and project (X-Contextd-Project) in /metrics and
// in `contextd usage`; a tenant's conversations are not another's.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startUpstream } from './lib/model_upstream.mjs';
import { BINARY, startHttpServer, tempDataDir, cleanup } from '../e2e/harness.mjs';

const opts = (timeout) => ({ skip: existsSync(BINARY) ? false : `contextd is not built at ${BINARY}`, timeout });

const ANTHROPIC_KEY = 'sk-ant-provider-key-held-by-contextd';
const OPENAI_KEY = 'sk-openai-provider-key-held-by-contextd';
const TOKEN_ACME = 'acme-token-0123456789abcdef';
const TOKEN_GLOBEX = 'globex-token-0123456789abcdef';

function messagesAnswer(res) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-x', content: [{ type: 'text', text: 'hi' }],
    stop_reason: 'end_turn', stop_sequence: null,
    usage: { input_tokens: 10, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 5 },
  }));
}

function chatAnswer(res) {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({
    id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-x',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 30, completion_tokens: 7, total_tokens: 37, prompt_tokens_details: { cached_tokens: 16 } },
  }));
}

async function startTeamGateway({ anthropicUrl, openaiUrl, teamAnthropic = true, teamOpenai = true }) {
  const dir = tempDataDir();
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `acme:${TOKEN_ACME}\nglobex:${TOKEN_GLOBEX}\n`);
  const config = join(dir, 'contextd.yaml');
  writeFileSync(config, [
    'model_gateway:',
    '  anthropic:',
    `    base_url: ${JSON.stringify(anthropicUrl)}`,
    ...(teamAnthropic ? ['    api_key_env: TEAM_ANTHROPIC_KEY'] : []),
    '  openai:',
    `    base_url: ${JSON.stringify(`${openaiUrl}/v1`)}`,
    ...(teamOpenai ? ['    api_key_env: TEAM_OPENAI_KEY'] : []),
    '',
  ].join('\n'));
  const server = await startHttpServer({
    dataDir: join(dir, 'data'), args: ['--config', config, '--auth-token-file', tokens],
    env: { TEAM_ANTHROPIC_KEY: ANTHROPIC_KEY, TEAM_OPENAI_KEY: OPENAI_KEY },
  });
  return { ...server, dir, origin: new URL(server.url).origin, async stop() { await server.stop(); cleanup(dir); } };
}

const messagesBody = (text) => JSON.stringify({ model: 'claude-x', max_tokens: 16, messages: [{ role: 'user', content: text }] });
const chatBody = (text) => JSON.stringify({ model: 'gpt-x', messages: [{ role: 'user', content: text }] });

async function metricsText(origin) {
  const res = await fetch(`${origin}/metrics`, { headers: { authorization: `Bearer ${TOKEN_ACME}` } });
  return res.text();
}

function metric(text, name, labels) {
  let sum = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const [head, value] = line.split(/\s+/);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`))) sum = (sum ?? 0) + Number(value);
  }
  return sum;
}

test('team mode: the tenant token (x-api-key or bearer) is replaced by the provider key; no token, a 401 in the provider\'s shape', opts(60000), async () => {
  const anthropic = await startUpstream({ handle: (req, res) => messagesAnswer(res) });
  const openai = await startUpstream({ handle: (req, res) => chatAnswer(res) });
  const gw = await startTeamGateway({ anthropicUrl: anthropic.url, openaiUrl: openai.url });
  try {
    // Anthropic: the token as x-api-key (ANTHROPIC_API_KEY=<token>), with a project path.
    let res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TOKEN_ACME, 'x-contextd-project': '/srv/checkouts/board' },
      body: messagesBody('hello from acme'),
    });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
    assert.equal(anthropic.requests.length, 1);
    const sent = anthropic.requests[0];
    assert.equal(sent.headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(sent.headers.authorization, undefined);
    assert.ok(!JSON.stringify(sent.rawHeaders).includes(TOKEN_ACME), 'the tenant token never reaches the provider');
    assert.ok(!JSON.stringify(sent.rawHeaders).toLowerCase().includes('x-contextd-'), 'contextd headers stay');

    // Anthropic: the token as Authorization: Bearer (ANTHROPIC_AUTH_TOKEN=<token>).
    res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', authorization: `Bearer ${TOKEN_GLOBEX}` },
      body: messagesBody('hello from globex'),
    });
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(anthropic.requests[1].headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(anthropic.requests[1].headers.authorization, undefined);

    // OpenAI: the token as the bearer key (OPENAI_API_KEY=<token>); an explicit project id.
    res = await fetch(`${gw.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN_ACME}`, 'x-contextd-project': 'board' },
      body: chatBody('hello from acme over openai'),
    });
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(openai.requests.length, 1);
    assert.equal(openai.requests[0].headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.ok(!JSON.stringify(openai.requests[0].rawHeaders).includes(TOKEN_ACME));

    // Without a known token: the provider's 401 shape, and nothing reaches the provider.
    const before = [anthropic.requests.length, openai.requests.length];
    res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant-a-real-user-key' },
      body: messagesBody('no token'),
    });
    assert.equal(res.status, 401);
    const anthropicError = await res.json();
    assert.equal(anthropicError.type, 'error');
    assert.equal(anthropicError.error.type, 'authentication_error');
    res = await fetch(`${gw.origin}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: chatBody('no token'),
    });
    assert.equal(res.status, 401);
    const openaiError = await res.json();
    assert.equal(openaiError.error.code, 'invalid_api_key');
    assert.equal(openaiError.error.type, 'invalid_request_error');
    res = await fetch(`${gw.origin}/v1/models`, { headers: { authorization: 'Bearer nope-not-a-token' } });
    assert.equal(res.status, 401);
    assert.equal((await res.json()).error.code, 'invalid_api_key');
    // An x-contextd-token that is not known is a 401 even with a valid key header beside it.
    res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TOKEN_ACME, 'x-contextd-token': 'unknown-token-0123456789' },
      body: messagesBody('bad contextd token'),
    });
    assert.equal(res.status, 401);
    await res.text();
    assert.deepEqual([anthropic.requests.length, openai.requests.length], before);

    // An invalid project header: 400 in the provider's shape.
    res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TOKEN_ACME, 'x-contextd-project': 'not a project' },
      body: messagesBody('bad project'),
    });
    assert.equal(res.status, 400);
    assert.equal((await res.json()).error.type, 'invalid_request_error');

    // Usage per tenant and project: /metrics (recorded once each answer ended) ...
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = await metricsText(gw.origin);
      if ((metric(text, 'contextd_model_requests_total', { status: '200' }) ?? 0) >= 3) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(metric(text, 'contextd_model_requests_total', { tenant: 'acme', project: 'board', api: 'openai_chat' }), 1);
    assert.equal(metric(text, 'contextd_model_requests_total', { tenant: 'globex', project: 'default' }), 1);
    assert.match(text, /contextd_model_requests_total\{[^}]*project="p_[0-9a-f]{16}"[^}]*tenant="acme"/);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { tenant: 'acme', kind: 'cache_read' }), 100 + 16);
    assert.equal(metric(text, 'contextd_model_provider_tokens_total', { tenant: 'globex', kind: 'output' }), 5);

    // ... and `contextd usage` from the SQLite file.
    const usage = JSON.parse(execFileSync(BINARY, ['usage', '--data-dir', join(gw.dir, 'data'), '--json']).toString());
    const rows = Object.fromEntries(usage.usage.map((u) => [`${u.tenant}/${u.project}`, u]));
    assert.equal(rows['acme/board'].requests, 1);
    // OpenAI's prompt_tokens include the cached ones; contextd keeps input apart from cache reads.
    assert.equal(rows['acme/board'].input_tokens, 30 - 16);
    assert.equal(rows['acme/board'].cache_read_input_tokens, 16);
    assert.equal(rows['acme/board'].output_tokens, 7);
    assert.equal(rows['globex/default'].requests, 1);
    assert.equal(rows['globex/default'].cache_creation_input_tokens, 20);
    const acmePath = usage.usage.find((u) => u.tenant === 'acme' && u.project.startsWith('p_'));
    assert.equal(acmePath.requests, 1);
    assert.equal(acmePath.input_tokens, 10);
    const onlyGlobex = JSON.parse(execFileSync(BINARY, ['usage', '--data-dir', join(gw.dir, 'data'), '--json', '--tenant', 'globex', '--since', '1h']).toString());
    assert.deepEqual(onlyGlobex.usage.map((u) => u.tenant), ['globex']);
    const table = execFileSync(BINARY, ['usage', '--data-dir', join(gw.dir, 'data')]).toString();
    assert.match(table, /TENANT\s+PROJECT\s+REQUESTS\s+INPUT\s+CACHE_READ\s+CACHE_WRITE\s+OUTPUT/);
    assert.match(table, /acme\s+board\s+1\s+14\s+16\s+0\s+7/);
  } finally {
    await gw.stop();
    await anthropic.close();
    await openai.close();
  }
});

test('without api_key_env the client\'s own key passes through (x-contextd-token names the tenant)', opts(30000), async () => {
  const anthropic = await startUpstream({ handle: (req, res) => messagesAnswer(res) });
  const openai = await startUpstream({ handle: (req, res) => chatAnswer(res) });
  const gw = await startTeamGateway({ anthropicUrl: anthropic.url, openaiUrl: openai.url, teamAnthropic: false });
  try {
    const res = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant-user-own-key', 'x-contextd-token': TOKEN_ACME },
      body: messagesBody('own key'),
    });
    assert.equal(res.status, 200);
    await res.text();
    assert.equal(anthropic.requests[0].headers['x-api-key'], 'sk-ant-user-own-key');
    // The token alone as x-api-key is not a tenant here (the client's key is the provider's).
    const bare = await fetch(`${gw.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': TOKEN_ACME },
      body: messagesBody('token as key'),
    });
    assert.equal(bare.status, 401);
    assert.equal((await bare.json()).error.type, 'authentication_error');
  } finally {
    await gw.stop();
    await anthropic.close();
    await openai.close();
  }
});

test('api_key_env naming an unset variable, or without tenant tokens, stops the server at start', opts(30000), async () => {
  const dir = tempDataDir();
  try {
    const config = join(dir, 'contextd.yaml');
    writeFileSync(config, 'model_gateway:\n  openai:\n    api_key_env: CONTEXTD_TEST_UNSET_KEY_VARIABLE\n');
    const tokens = join(dir, 'tokens');
    writeFileSync(tokens, `acme:${TOKEN_ACME}\n`);
    await assert.rejects(startHttpServer({ dataDir: join(dir, 'data'), args: ['--config', config, '--auth-token-file', tokens] }),
      /model_gateway\.openai\.api_key_env.*CONTEXTD_TEST_UNSET_KEY_VARIABLE is not set/s);
    await assert.rejects(startHttpServer({ dataDir: join(dir, 'data2'), args: ['--config', config], env: { CONTEXTD_TEST_UNSET_KEY_VARIABLE: 'sk-x' } }),
      /needs tenant tokens/);
  } finally {
    cleanup(dir);
  }
});
