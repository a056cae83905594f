// Tenants and projects (issue 21, decision 0022) through the real binary and the MCP TypeScript
// SDK: two worktree directories given as the clients' roots are two projects, and two tenants
// (bearer tokens of one token file) are two tenants. Branches, the trail, its search and the
// ReasoningBank of one are "not found" from the other, in the words a missing id gets; a second
// session of the same root is the same project; an X-Contextd-Project header naming the path is
// the same project as the root.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Client, sdkTypes, startHttpServer, tempDataDir, cleanup, textOf } from './harness.mjs';

const sdkRoot = new URL('../../tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdkRoot));

const TOKEN_ACME = 'acme-token-0123456789abcdef';
const TOKEN_GLOBEX = 'globex-token-0123456789abcdef';

// A client of `tenant`'s token whose roots are `roots` (directories), or no roots capability
// when null; `headers` are sent with every request.
async function connect(url, { token, roots = null, headers = {}, name = 'tenants' }) {
  const capabilities = roots ? { roots: { listChanged: true } } : {};
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  let asked = 0;
  if (roots) {
    client.setRequestHandler(sdkTypes.ListRootsRequestSchema, async () => {
      asked += 1;
      return { roots: roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: dir })) };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } },
  });
  await client.connect(transport);
  return { client, transport, asked: () => asked };
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

// The text of an error result, with `id` replaced by ID: what another scope's id gets must be
// what a missing one gets.
function notFoundText(result, id) {
  assert.equal(result.isError, true, `expected an error: ${textOf(result)}`);
  return textOf(result).replaceAll(id, 'ID');
}

test('two worktrees are two projects and two tokens two tenants: the other\'s scope is not found', { timeout: 60000 }, async () => {
  const dir = tempDataDir();
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `acme:${TOKEN_ACME}\nglobex:${TOKEN_GLOBEX}\n`);
  const wtA = join(dir, 'repo-a');
  const wtB = join(dir, 'repo-b');
  mkdirSync(wtA);
  mkdirSync(wtB);
  symlinkSync(wtA, join(dir, 'link-to-a'));
  const server = await startHttpServer({ dataDir: join(dir, 'data'), args: ['--auth-token-file', tokens] });
  const clients = [];
  const open = async (opts) => { const c = await connect(server.url, opts); clients.push(c); return c; };
  try {
    const a = await open({ token: TOKEN_ACME, roots: [wtA, wtB], name: 'acme-a' });
    const created = await call(a.client, 'branch_create', { description: 'explore the parser of repo-a', prompt: 'read parse.c' });
    assert.ok(!created.isError, textOf(created));
    const branch = created.structuredContent.branch_id;
    const returned = await call(a.client, 'branch_return', { branch_id: branch, message: 'parse.c tokenizes with a table-driven lexer' });
    assert.ok(!returned.isError, textOf(returned));
    const memory = (await call(a.client, 'memory_record', {
      title: 'Lexer tables of repo-a', description: 'When changing the lexer of repo-a.',
      content: 'Regenerate the lexer tables with make tables before building.',
    })).structuredContent.memory;
    assert.ok(a.asked() >= 1, 'roots/list was asked');
    assert.equal((await call(a.client, 'branch_status', { branch_id: branch })).isError, undefined);
    const search = await call(a.client, 'trail_search', { query: 'lexer' });
    assert.ok(textOf(search).includes(branch), textOf(search));

    // What a missing id gets, for each tool.
    const missing = 'br_0000000000000000';
    const missingMemory = 'mem_00000000000000000000000000000000';
    const expectStatus = notFoundText(await call(a.client, 'branch_status', { branch_id: missing }), missing);
    const expectUnfold = notFoundText(await call(a.client, 'trail_unfold', { scope_id: missing }), missing);
    const expectFeedback = notFoundText(await call(a.client, 'memory_feedback', { memory_id: missingMemory, helpful: true }), missingMemory);

    // Same tenant, the other worktree: another project.
    const b = await open({ token: TOKEN_ACME, roots: [wtB], name: 'acme-b' });
    // A session's project is fixed at its first call: branch_status is that call here.
    assert.equal(notFoundText(await call(b.client, 'branch_status', { branch_id: branch }), branch), expectStatus);
    assert.equal(notFoundText(await call(b.client, 'trail_unfold', { scope_id: branch }), branch), expectUnfold);
    assert.equal(notFoundText(await call(b.client, 'memory_feedback', { memory_id: memory.id, helpful: true }), memory.id), expectFeedback);
    assert.ok(!textOf(await call(b.client, 'trail_search', { query: 'lexer' })).includes(branch));
    const bMemories = (await call(b.client, 'memory_search', { query: 'lexer tables' })).structuredContent.memories;
    assert.ok(!bMemories.some((m) => m.id === memory.id), JSON.stringify(bMemories));
    assert.ok(b.asked() >= 1);

    // Same tenant, same worktree (through a symlink), another session: the same project.
    const a2 = await open({ token: TOKEN_ACME, roots: [join(dir, 'link-to-a')], name: 'acme-a2' });
    const unfolded = await call(a2.client, 'trail_unfold', { scope_id: branch });
    assert.ok(!unfolded.isError, textOf(unfolded));
    const a2Memories = (await call(a2.client, 'memory_search', { query: 'lexer tables' })).structuredContent.memories;
    assert.ok(a2Memories.some((m) => m.id === memory.id), JSON.stringify(a2Memories));
    // A branch belongs to its session: another session of the project cannot act on it.
    assert.equal(notFoundText(await call(a2.client, 'branch_status', { branch_id: branch }), branch), expectStatus);

    // No roots, the path in X-Contextd-Project: the same project as the root.
    const h = await open({ token: TOKEN_ACME, headers: { 'X-Contextd-Project': wtA }, name: 'acme-header' });
    assert.ok(!(await call(h.client, 'trail_unfold', { scope_id: branch })).isError);
    // No roots and no header: the default project.
    const d = await open({ token: TOKEN_ACME, name: 'acme-default' });
    assert.equal(notFoundText(await call(d.client, 'trail_unfold', { scope_id: branch }), branch), expectUnfold);

    // Another tenant, the same worktree: another tenant's scope is not found either.
    const g = await open({ token: TOKEN_GLOBEX, roots: [wtA], name: 'globex-a' });
    assert.equal(notFoundText(await call(g.client, 'trail_unfold', { scope_id: branch }), branch), expectUnfold);
    assert.equal(notFoundText(await call(g.client, 'memory_feedback', { memory_id: memory.id, helpful: false }), memory.id), expectFeedback);
    assert.ok(!textOf(await call(g.client, 'trail_search', { query: 'lexer' })).includes(branch));
    const gMemories = (await call(g.client, 'memory_search', { query: 'lexer tables' })).structuredContent.memories;
    assert.ok(!gMemories.some((m) => m.id === memory.id), JSON.stringify(gMemories));

    // The log names each session's project: "p_" and 16 hex digits, with the path.
    assert.match(server.stderr(), new RegExp(`project p_[0-9a-f]{16} ${wtA.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  } finally {
    for (const c of clients) await c.client.close().catch(() => {});
    await server.stop();
    cleanup(dir);
  }
});

test('a client that does not answer roots/list: its first call waits at most roots_wait, then runs in the header\'s project', { timeout: 30000 }, async () => {
  const dir = tempDataDir();
  const tokens = join(dir, 'tokens');
  writeFileSync(tokens, `acme:${TOKEN_ACME}\n`);
  const server = await startHttpServer({ dataDir: join(dir, 'data'), args: ['--auth-token-file', tokens] });
  const client = new Client({ name: 'silent-roots', version: '1.0.0' }, { capabilities: { roots: {} } });
  // Declares roots, never answers.
  client.setRequestHandler(sdkTypes.ListRootsRequestSchema, () => new Promise(() => {}));
  const transport = new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN_ACME}`, 'X-Contextd-Project': 'team-board' } },
  });
  try {
    await client.connect(transport);
    const started = Date.now();
    const created = await call(client, 'branch_create', { description: 'x', prompt: 'y' });
    assert.ok(!created.isError, textOf(created));
    assert.ok(Date.now() - started < 10000);
    assert.match(server.stderr(), /project team-board team-board/);
  } finally {
    await client.close().catch(() => {});
    await server.stop();
    cleanup(dir);
  }
});

test('an invalid X-Contextd-Project is refused at initialize with 400', { timeout: 30000 }, async () => {
  const dir = tempDataDir();
  const server = await startHttpServer({ dataDir: join(dir, 'data') });
  try {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'X-Contextd-Project': 'no spaces allowed' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /X-Contextd-Project/);
  } finally {
    await server.stop();
    cleanup(dir);
  }
});
