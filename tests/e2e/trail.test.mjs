// End-to-end: the foldable trail (issue 6) through the official TypeScript SDK client against the
// built binary: branches become scopes, context_view folds returned ones into their summaries
// with token totals, trail_unfold / trail_search / trail:// resources read them back, and
// `contextd trail list|show|unfold|export` reads the SQLite file, also after kill -9.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startHttpServer, connectHttp, cleanup, textOf, BINARY } from './harness.mjs';

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

function cli(...args) {
  return execFileSync(BINARY, ['trail', ...args], { encoding: 'utf8' });
}

test('http: context_view folds returned branches; unfold, search, resources; trail CLI after kill -9', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url, 'agent');
    const tools = (await client.listTools()).tools.map((t) => t.name);
    for (const name of ['context_view', 'trail_unfold', 'trail_search']) assert.ok(tools.includes(name), name);

    const longPrompt = 'Read every file under src/parser and list each function with its callers. '.repeat(20);
    const a = (await call(client, 'branch_create', { description: 'explore the parser', prompt: longPrompt })).structuredContent;
    const nested = (await call(client, 'branch_create', { description: 'nested lexer look', prompt: 'look at lexer.c' })).structuredContent;
    assert.equal(nested.depth, 1);
    const summary = 'parse() lives in src/parser/parse.c; the lexer is fine';
    const ret = await call(client, 'branch_return', { branch_id: a.branch_id, message: summary });
    assert.ok(!ret.isError, textOf(ret));
    const b = (await call(client, 'branch_create', { description: 'debug flaky test', prompt: 'run the test 10 times' })).structuredContent;

    const view = await call(client, 'context_view', {});
    assert.ok(!view.isError, textOf(view));
    const v = view.structuredContent;
    const text = textOf(view);
    assert.ok(text.includes(`= branch ${a.branch_id} [folded:`), text);
    assert.ok(text.includes(summary), text);
    assert.ok(!text.includes('Read every file under src/parser'), 'the folded prompt is not in the view');
    assert.ok(!text.includes(nested.branch_id), 'a folded branch hides its children');
    assert.ok(text.includes(`+ branch ${b.branch_id} [open] debug flaky test`), text);
    assert.ok(text.includes('run the test 10 times'), 'an open branch shows its content');
    assert.ok(v.tokens_unfolded > v.tokens_folded, JSON.stringify(v));
    assert.ok(v.tokens_unfolded >= 300, `the long prompt is counted: ${JSON.stringify(v)}`);
    assert.equal(v.scopes_folded, 2);
    assert.equal(v.scopes_open, 1);

    // depth 0: branches at depth 0 open (b, under the session root), deeper ones as one line.
    const shallow = await call(client, 'context_view', { depth: 0 });
    assert.ok(textOf(shallow).includes('run the test 10 times'), textOf(shallow));
    assert.equal(shallow.structuredContent.tokens_folded, v.tokens_folded);

    const unfold = await call(client, 'trail_unfold', { scope_id: a.branch_id });
    assert.ok(!unfold.isError, textOf(unfold));
    const kinds = unfold.structuredContent.events.map((e) => e.kind);
    assert.deepEqual(kinds, ['branch_created', 'branch_returned']);
    assert.equal(unfold.structuredContent.events[1].payload, summary);
    assert.match(unfold.structuredContent.events[1].sha256, /^[0-9a-f]{64}$/);
    const forced = await call(client, 'trail_unfold', { scope_id: nested.branch_id });
    assert.deepEqual(forced.structuredContent.events.map((e) => e.kind), ['force_return']);
    const page = await call(client, 'trail_unfold', { scope_id: v.session_scope_id, offset: 1, limit: 1 });
    assert.equal(page.structuredContent.total, 2);
    assert.equal(page.structuredContent.events.length, 1);
    assert.equal(page.structuredContent.events[0].label, b.branch_id);
    const unknown = await call(client, 'trail_unfold', { scope_id: 'br_nope' });
    assert.equal(unknown.isError, true);

    const found = await call(client, 'trail_search', { query: 'parse.c' });
    assert.ok(!found.isError, textOf(found));
    assert.deepEqual(found.structuredContent.hits.map((h) => h.scope_id), [a.branch_id]);
    const syntax = await call(client, 'trail_search', { query: '"(' });
    assert.equal(syntax.isError, true);
    assert.match(textOf(syntax), /no word/);
    const ops = await call(client, 'trail_search', { query: 'flaky NEAR("' });
    assert.ok(!ops.isError, textOf(ops));
    assert.deepEqual(ops.structuredContent.hits.map((h) => h.scope_id), [b.branch_id]);

    // Another conversation of the same project reuses the trail.
    const { client: other } = await connectHttp(server.url, 'later');
    const reuse = await call(other, 'trail_unfold', { scope_id: a.branch_id });
    assert.ok(!reuse.isError, textOf(reuse));
    const res = await other.readResource({ uri: `trail://sessions/${v.session_scope_id}` });
    const body = JSON.parse(res.contents[0].text);
    assert.equal(body.scopes.length, 4);
    const scopeRes = JSON.parse((await other.readResource({ uri: `trail://scopes/${b.branch_id}` })).contents[0].text);
    assert.equal(scopeRes.scope.status, 'open');

    // Crash: the branch still active in the file is listed as such.
    await server.stop('SIGKILL');
    const list = cli('list', '--data-dir', server.dataDir);
    assert.ok(list.includes(`session ${v.session_scope_id}`), list);
    assert.match(list, new RegExp(`${a.branch_id}  depth 0  completed  \\d+/\\d+ tokens  scope folded  explore the parser`));
    assert.match(list, new RegExp(`${nested.branch_id}  depth 1  failed  .* scope folded`));
    assert.match(list, new RegExp(`${b.branch_id}  depth 0  active  \\d+/\\d+ tokens  scope open  debug flaky test`));
    const show = cli('show', v.session_scope_id, '--data-dir', server.dataDir);
    assert.ok(show.includes(summary), show);
    const unfolded = cli('unfold', a.branch_id, '--data-dir', server.dataDir);
    assert.ok(unfolded.includes('branch_returned'), unfolded);
    const exported = JSON.parse(cli('export', '--data-dir', server.dataDir));
    const session = exported.sessions.find((s) => s.session_scope_id === v.session_scope_id);
    assert.equal(session.scopes.length, 4);
    assert.equal(session.scopes.find((s) => s.scope_id === b.branch_id).branch.status, 'active');
    assert.throws(() => cli('show', 'ses_missing', '--data-dir', server.dataDir));

    // Restart: recovery force-returns the active branch and folds its scope.
    const again = await startHttpServer({ dataDir: server.dataDir });
    try {
      const after = cli('list', '--data-dir', server.dataDir);
      assert.match(after, new RegExp(`${b.branch_id}  depth 0  failed  .* scope folded`));
    } finally {
      await again.stop();
    }
  } finally {
    await server.stop();
    if (!process.env.KEEP) cleanup(server.dataDir);
  }
});

test('gateway + trail: upstream calls are recorded scrubbed in their branch scope and fold away', async () => {
  const { mkdtempSync, realpathSync, writeFileSync, readFileSync, existsSync, readdirSync } = await import('node:fs');
  const { join } = await import('node:path');
  const { tmpdir } = await import('node:os');
  const { tempDataDir } = await import('./harness.mjs');
  const FS_SERVER = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url).pathname;
  assert.ok(existsSync(FS_SERVER), 'run npm install in tools/npm/upstreams');
  const SECRET = 'ghp_' + 'Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'.slice(0, 36);
  const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-trail-files-')));
  writeFileSync(join(files, 'secret.txt'), `config\napi_token_for_ci ${SECRET}\nend\n`);
  writeFileSync(join(files, 'big.txt'), Array.from({ length: 800 }, (_, i) => `line ${i} of a large file`).join('\n'));
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`, ''].join('\n'));
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url);
    const root = await call(client, 'fs__list_directory', { path: files });
    assert.ok(!root.isError, textOf(root));
    const br = (await call(client, 'branch_create', { description: 'read the files', prompt: 'read both files', budget: 20000 })).structuredContent;
    const secret = await call(client, 'fs__read_text_file', { path: join(files, 'secret.txt') });
    assert.ok(!textOf(secret).includes(SECRET));
    const big = await call(client, 'fs__read_text_file', { path: join(files, 'big.txt') });
    assert.ok(!big.isError, textOf(big));
    const summary = 'secret.txt holds a CI token; big.txt has 800 lines';
    assert.ok(!(await call(client, 'branch_return', { message: summary })).isError);

    const view = await call(client, 'context_view', {});
    const v = view.structuredContent;
    const text = textOf(view);
    assert.ok(text.includes('- tool_call fs__list_directory'), text);
    assert.ok(text.includes('secret.txt'), 'the root-level listing is in the view');
    assert.ok(text.includes(`= branch ${br.branch_id} [folded:`) && text.includes(summary), text);
    assert.ok(!text.includes('line 799 of a large file'), 'the big read is folded away');
    assert.ok(v.tokens_unfolded - v.tokens_folded > 5000, JSON.stringify(v));

    const unfold = await call(client, 'trail_unfold', { scope_id: br.branch_id, limit: 10 });
    const events = unfold.structuredContent.events;
    assert.deepEqual(events.map((e) => e.kind), ['tool_call', 'tool_result', 'tool_call', 'tool_result', 'branch_returned']);
    assert.equal(events[0].label, 'fs__read_text_file');
    assert.match(events[1].payload, /\[REDACTED:github-pat/);
    assert.ok(events[3].payload.includes('line 799 of a large file'));
    assert.ok(events[3].tokens > 5000, `the result's token count is stored: ${events[3].tokens}`);

    await server.stop();
    for (const f of readdirSync(dataDir).filter((n) => n.startsWith('contextd.db'))) {
      assert.ok(!readFileSync(join(dataDir, f)).includes(SECRET), `${f} holds no secret`);
    }
  } finally {
    await server.stop();
    if (!process.env.KEEP) cleanup(dataDir);
    cleanup(files);
  }
});
