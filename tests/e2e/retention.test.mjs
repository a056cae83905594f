// End-to-end: `contextd trail prune` (decision 0031) on a real data dir written by the built
// binary: --dry-run counts and deletes nothing, a real run deletes the idle sessions' trail (their
// scopes, events and blobs) and gives the pages back, a second run finds nothing, bad input is
// refused, and a server started on the pruned file keeps working.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, textOf, BINARY } from './harness.mjs';

function trail(...args) {
  return execFileSync(BINARY, ['trail', ...args], { encoding: 'utf8' });
}

test('trail prune: dry run, sweep, nothing left to sweep, server keeps working', async () => {
  const server = await startHttpServer();
  const dataDir = server.dataDir;
  try {
    const { client } = await connectHttp(server.url, 'agent');
    const big = 'every function and its callers, listed at length. '.repeat(180);
    for (let i = 0; i < 5; i++) {
      const created = await client.callTool({ name: 'branch_create', arguments: { description: `explore ${i}`, prompt: `${i} ${big}` } });
      assert.ok(!created.isError, textOf(created));
      const b = created.structuredContent;
      const r = await client.callTool({ name: 'branch_return', arguments: { branch_id: b.branch_id, message: `found ${i}` } });
      assert.ok(!r.isError, textOf(r));
    }
    await server.stop();

    const db = join(dataDir, 'contextd.db');
    const listed = trail('list', '--data-dir', dataDir);
    assert.ok(listed.includes('explore 4'), listed);

    // The default window (30 days) keeps a session active a moment ago.
    const kept = trail('prune', '--data-dir', dataDir);
    assert.match(kept, /swept 0 idle session\(s\)/);

    const dry = trail('prune', '--dry-run', '--older-than', '0m', '--data-dir', dataDir);
    assert.match(dry, /^would have swept 1 idle session\(s\) \(6 scopes, 10 events/, dry);
    assert.ok(trail('list', '--data-dir', dataDir).includes('explore 4'), 'a dry run deletes nothing');

    const sizeBefore = statSync(db).size;
    const swept = trail('prune', '--older-than', '0m', '--data-dir', dataDir);
    assert.match(swept, /^swept 1 idle session\(s\) \(6 scopes, 10 events, \d+ blobs of \d+ bytes\)/, swept);
    const pages = Number(/(\d+) pages vacuumed/.exec(swept)[1]);
    assert.ok(pages > 10, swept);
    assert.ok(!trail('list', '--data-dir', dataDir).includes('explore'), 'the session is gone');
    assert.ok(statSync(db).size < sizeBefore, `${statSync(db).size} < ${sizeBefore}`);

    const again = trail('prune', '--older-than', '0m', '--data-dir', dataDir);
    assert.match(again, /swept 0 idle session\(s\) \(0 scopes, 0 events, 0 blobs/);

    assert.throws(() => trail('prune', '--older-than', 'soon', '--data-dir', dataDir), /expected a duration/);
    assert.throws(() => trail('prune', '--data-dir', join(dataDir, 'missing')), /no contextd database/);

    // A server on the pruned file starts and records new branches.
    const next = await startHttpServer({ dataDir });
    try {
      const { client: c2 } = await connectHttp(next.url, 'agent');
      const b = (await c2.callTool({ name: 'branch_create', arguments: { description: 'after prune', prompt: 'go' } })).structuredContent;
      assert.ok(b.branch_id);
      const view = await c2.callTool({ name: 'context_view', arguments: {} });
      assert.ok(textOf(view).includes('after prune'), textOf(view));
    } finally {
      await next.stop();
    }
    assert.ok(trail('list', '--data-dir', dataDir).includes('after prune'));
  } finally {
    await server.stop();
    if (!process.env.KEEP) cleanup(dataDir);
  }
});
