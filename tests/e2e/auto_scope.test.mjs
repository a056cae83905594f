// End-to-end: auto-scopes (issue 6, trail.auto_scope_upstreams) through the official TypeScript
// SDK client against the built binary fronting the real @modelcontextprotocol/server-filesystem:
// consecutive fs calls at the session root fold into one auto-scope when the agent calls a
// contextd tool; context_view shows its structural summary, trail_unfold / trail_search / the
// trail CLI read it back; an auto-scope left open by kill -9 is folded at the next start. With
// the option off, root-level calls stay in the root as before.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startHttpServer, connectHttp, cleanup, textOf, tempDataDir, BINARY } from './harness.mjs';

const FS_SERVER = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url).pathname;

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

function cli(...args) {
  return execFileSync(BINARY, ['trail', ...args], { encoding: 'utf8' });
}

// A data dir with a config fronting the filesystem server over a fresh files dir.
function setup(extraYaml = []) {
  assert.ok(existsSync(FS_SERVER), 'run npm ci in tools/npm/upstreams');
  const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-auto-files-')));
  writeFileSync(join(files, 'notes.txt'), 'the parser lives in src/parser\n');
  writeFileSync(join(files, 'big.txt'), Array.from({ length: 800 }, (_, i) => `line ${i} of a large file`).join('\n'));
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`, ...extraYaml, ''].join('\n'));
  return { files, dataDir, config };
}

// The same run of root-level fs calls in both tests: a listing, two reads, one failing read.
async function fsCalls(client, files) {
  assert.ok(!(await call(client, 'fs__list_directory', { path: files })).isError);
  assert.ok(!(await call(client, 'fs__read_text_file', { path: join(files, 'notes.txt') })).isError);
  const big = await call(client, 'fs__read_text_file', { path: join(files, 'big.txt') });
  assert.ok(textOf(big).includes('line 799 of a large file'), 'the agent still gets the full result');
  const missing = await call(client, 'fs__read_text_file', { path: join(files, 'missing.txt') });
  assert.equal(missing.isError, true, textOf(missing));
}

test('auto-scopes on: root fs calls fold into one auto-scope at the next contextd tool; recovery after kill -9', async () => {
  const { files, dataDir, config } = setup(['trail:', '  auto_scope_upstreams: true']);
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  let again = null;
  try {
    const { client } = await connectHttp(server.url, 'agent');
    await fsCalls(client, files);
    const status = await call(client, 'branch_status', {});
    assert.ok(!status.isError, textOf(status));

    const view = await call(client, 'context_view', {});
    assert.ok(!view.isError, textOf(view));
    const v = view.structuredContent;
    const text = textOf(view);
    assert.equal(v.auto_scopes_folded, 1, text);
    assert.equal(v.auto_scopes_open, 0, text);
    const line = text.split('\n').find((l) => l.startsWith('= auto '));
    assert.ok(line, text);
    const id = line.match(/^= auto (auto_[0-9a-f]+) \[folded: (\d+) tokens -> (\d+)\] upstream fs :: (.*)$/);
    assert.ok(id, line);
    const [, scopeId, folded, summaryTokens, summary] = id;
    assert.ok(Number(folded) > 5000, `the big read is what folded away: ${line}`);
    assert.ok(Number(summaryTokens) <= 200, line);
    assert.match(summary, /^fs: 4 calls \(3 ok, 1 error\), \d+ tokens; /);
    assert.ok(summary.includes('list_directory x1'), summary);
    assert.ok(summary.includes('read_text_file x3'), summary);
    assert.ok(summary.includes('big.txt'), `arguments in short: ${summary}`);
    assert.match(summary, /errors: read_text_file: .*missing\.txt/);
    assert.ok(!text.includes('line 799 of a large file'), 'the folded results are not in the view');
    assert.ok(!text.includes('- tool_call fs__'), 'no upstream call is left in the root');
    assert.ok(v.tokens_unfolded - v.tokens_folded > 5000, JSON.stringify(v));
    assert.ok(text.includes('1 auto-scope(s) folded, 0 open'), text);

    const unfold = await call(client, 'trail_unfold', { scope_id: scopeId, limit: 20 });
    assert.ok(!unfold.isError, textOf(unfold));
    assert.equal(unfold.structuredContent.scope.kind, 'auto');
    assert.equal(unfold.structuredContent.scope.summary, summary);
    const events = unfold.structuredContent.events;
    assert.deepEqual(events.map((e) => e.kind), Array(4).fill(['tool_call', 'tool_result']).flat());
    assert.ok(events[5].payload.includes('line 799 of a large file'));
    assert.equal(events[7].is_error, true);

    const found = await call(client, 'trail_search', { query: 'list_directory' });
    assert.ok(!found.isError, textOf(found));
    assert.deepEqual(found.structuredContent.hits.map((h) => h.scope_id), [scopeId]);

    // A session that ends (DELETE) folds its auto-scope without any contextd tool call.
    const other = await connectHttp(server.url, 'short-lived');
    assert.ok(!(await call(other.client, 'fs__list_directory', { path: files })).isError);
    await other.transport.terminateSession();
    await other.client.close();
    // The DELETE is answered before the engine has closed the session: wait (bounded) for it.
    let ended = '';
    for (let i = 0; i < 100; ++i) {
      ended = cli('list', '--data-dir', dataDir);
      if (!ended.includes('scope open')) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(ended, /scope folded  upstream fs :: fs: 1 call \(1 ok, 0 errors\), \d+ tokens; list_directory x1 /);
    assert.ok(!ended.includes('scope open'), ended);

    // Another run of fs calls opens a new auto-scope; the process dies before anything folds it.
    assert.ok(!(await call(client, 'fs__read_text_file', { path: join(files, 'notes.txt') })).isError);
    await server.stop('SIGKILL');
    const list = cli('list', '--data-dir', dataDir);
    assert.match(list, new RegExp(`session ${v.session_scope_id} .* 0 branch\\(es\\), 2 auto-scope\\(s\\)`));
    assert.ok(list.includes(`${scopeId}  auto  `) && list.includes(`scope folded  upstream fs :: ${summary}`), list);
    assert.match(list, /auto_[0-9a-f]+  auto  \d+ tokens  scope open  upstream fs\n/);
    const show = cli('show', v.session_scope_id, '--data-dir', dataDir);
    assert.ok(show.includes(`= auto ${scopeId} [folded:`), show);

    // Restart: the auto-scope left open is folded, nothing stays open.
    again = await startHttpServer({ dataDir, args: ['--config', config] });
    const after = cli('list', '--data-dir', dataDir);
    assert.ok(!after.includes('scope open'), after);
    assert.match(after, /scope folded  upstream fs :: fs: 1 call \(1 ok, 0 errors\), \d+ tokens; read_text_file x1 \(path=.*notes\.txt\)/);
  } finally {
    if (again) await again.stop();
    await server.stop();
    if (!process.env.KEEP) cleanup(dataDir);
    cleanup(files);
  }
});

test('auto-scopes off (the default): root fs calls stay in the root, the view is unchanged', async () => {
  const { files, dataDir, config } = setup();
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url, 'agent');
    await fsCalls(client, files);
    assert.ok(!(await call(client, 'branch_status', {})).isError);
    const view = await call(client, 'context_view', {});
    const v = view.structuredContent;
    const text = textOf(view);
    assert.equal(v.auto_scopes_folded, 0);
    assert.equal(v.auto_scopes_open, 0);
    assert.ok(!/^[=+] auto /m.test(text) && !text.includes('auto-scope'), text);
    assert.ok(text.includes('- tool_call fs__list_directory'), text);
    assert.ok(text.includes('line 799 of a large file'), 'root-level results are shown in full');
    assert.equal(v.tokens_unfolded, v.tokens_folded);
    const root = await call(client, 'trail_unfold', { scope_id: v.session_scope_id, limit: 20 });
    assert.equal(root.structuredContent.total, 8);
  } finally {
    await server.stop();
    if (!process.env.KEEP) cleanup(dataDir);
    cleanup(files);
  }
});

test('auto-scopes: a bad value of the key stops the server with an error naming it', async () => {
  const dataDir = tempDataDir();
  try {
    assert.throws(
      () => execFileSync(BINARY, ['serve', '--transport', 'stdio', '--data-dir', dataDir],
        { env: { ...process.env, CONTEXTD_TRAIL_AUTO_SCOPE_UPSTREAMS: 'sometimes' }, input: '', stdio: 'pipe' }),
      (e) => /trail\.auto_scope_upstreams/.test(String(e.stderr)),
    );
  } finally {
    cleanup(dataDir);
  }
});
