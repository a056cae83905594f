// End-to-end: the ReasoningBank with its optional model endpoints (issue 18) — an OpenAI-compatible
// embeddings double (deterministic vectors: a hashed bag of word "concepts", so synonyms land
// together) and a chat double that distils branches — against the built binary; then the same
// server with the distiller unreachable, which must fall back to the structural distiller.
import test from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, textOf, tempDataDir } from './harness.mjs';

// Words the embedding double treats as one concept: BM25 cannot match them, vectors can.
const CONCEPTS = { flaky: 'unstable', intermittent: 'unstable', unstable: 'unstable',
  sporadically: 'unstable', retry: 'retry', rerun: 'retry', again: 'retry' };
const DIM = 64;

function embed(text) {
  const v = new Array(DIM).fill(0);
  for (const raw of text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean)) {
    const w = CONCEPTS[raw] ?? raw;
    let h = 2166136261;
    for (const ch of w) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
    v[h % DIM] += 1;
  }
  return v;
}

function startDouble() {
  const seen = { embeddings: 0, chats: [] };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const request = JSON.parse(body || '{}');
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/embeddings') {
        seen.embeddings += 1;
        const inputs = Array.isArray(request.input) ? request.input : [request.input];
        res.end(JSON.stringify({ object: 'list', model: request.model,
          data: inputs.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })) }));
      } else if (req.url === '/v1/chat/completions') {
        seen.chats.push(request);
        const answer = { memories: [{ title: 'Bisect the failing commit range',
          description: 'When a regression appeared between two releases.',
          content: 'Run git bisect with the failing test as the check; it names the commit in minutes.',
          tags: ['git'] }] };
        res.end(JSON.stringify({ id: 'c1', object: 'chat.completion', model: request.model,
          choices: [{ index: 0, finish_reason: 'stop',
            message: { role: 'assistant', content: '```json\n' + JSON.stringify(answer) + '\n```' } }] }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () =>
    resolve({ server, seen, url: `http://127.0.0.1:${server.address().port}` })));
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

function sc(result) {
  assert.ok(!result.isError, textOf(result));
  return result.structuredContent;
}

function configFile(dir, embeddingsUrl, distillerUrl) {
  const file = join(dir, 'contextd.yaml');
  writeFileSync(file, [
    'memory:',
    '  embeddings:',
    `    base_url: ${embeddingsUrl}`,
    '    model: hashed-bow',
    '  distiller:',
    `    base_url: ${distillerUrl}`,
    '    model: scripted',
    '    timeout_ms: 2000',
    '',
  ].join('\n'));
  return file;
}

test('embeddings rank synonyms BM25 cannot see; a model distils returned branches', async () => {
  const double = await startDouble();
  const dataDir = tempDataDir();
  const server = await startHttpServer({
    dataDir, args: ['--config', configFile(dataDir, double.url, double.url)] });
  try {
    const { client } = await connectHttp(server.url, 'agent-endpoints');
    const recorded = sc(await call(client, 'memory_record', {
      title: 'Unstable network tests', description: 'When network tests fail now and then.',
      content: 'Rerun them once before debugging; the CI proxy drops connections.',
    })).memory;
    // No word of the task below appears in the memory (or its task): only the vectors match.
    const created = sc(await call(client, 'branch_create', {
      description: 'flaky intermittent failures', prompt: 'they fail sporadically', budget: 4000 }));
    assert.deepEqual(created.injected_context.map((m) => m.id), [recorded.id]);
    assert.ok(double.seen.embeddings >= 2, 'items and queries were embedded');

    const returned = sc(await call(client, 'branch_return', {
      message: 'The regression came from commit abc; bisect found it.', extract_memory: true }));
    assert.equal(returned.memory_queued, true);
    const found = sc(await call(client, 'memory_search', { query: 'bisect failing commit regression' }));
    const distilled = found.memories.find((m) => m.title === 'Bisect the failing commit range');
    assert.ok(distilled, JSON.stringify(found));
    assert.equal(distilled.status, 'pending');
    assert.equal(double.seen.chats.length, 1);
    const prompt = JSON.stringify(double.seen.chats[0].messages);
    assert.ok(prompt.includes('flaky intermittent failures'), 'the trace reached the model');
  } finally {
    await server.stop();
    double.server.close();
    cleanup(dataDir);
  }
});

test('an unreachable distiller falls back to the structural one and is counted', async () => {
  const double = await startDouble();
  // A closed port: connection refused at once.
  const closed = await new Promise((resolve) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => { const port = s.address().port; s.close(() => resolve(`http://127.0.0.1:${port}`)); });
  });
  const dataDir = tempDataDir();
  const server = await startHttpServer({
    dataDir, args: ['--config', configFile(dataDir, double.url, closed)] });
  try {
    const { client } = await connectHttp(server.url, 'agent-fallback');
    sc(await call(client, 'branch_create', { description: 'Find the config loader', prompt: 'grep for it' }));
    sc(await call(client, 'branch_return', { message: 'It is in src/config.cc.', extract_memory: true }));
    const found = sc(await call(client, 'memory_search', { query: 'config loader' }));
    assert.equal(found.memories.length, 1, JSON.stringify(found));
    assert.match(found.memories[0].content, /src\/config\.cc/);
    const metrics = await (await fetch(server.url.replace(/\/mcp$/, '/metrics'))).text();
    assert.match(metrics, /contextd_memory_fallbacks_total\{part="distiller"\} 1/);
  } finally {
    await server.stop();
    double.server.close();
    cleanup(dataDir);
  }
});
