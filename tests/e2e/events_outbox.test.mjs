// End-to-end: the transactional outbox (decision 0027) under kill -9. contextd (SQLite) publishes
// to a real `nats-server -js` while clients run branch pairs; it is killed with SIGKILL mid-run
// and restarted on the same data directory. Afterwards a JetStream reader checks, against the
// database (read with the sqlite3 CLI), that every branch has exactly one branch.created, every
// completed branch exactly one branch.folded, every other ended branch one force_returned, and
// that no event is in the stream twice or for a change the database does not have. Skipped
// with a message when nats-server, the nats client or sqlite3 is missing; failed instead under
// CONTEXTD_REQUIRE_NATS=1.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, tempDataDir } from './harness.mjs';
import { nats, natsMissing, natsServer, until as untilMs } from './nats_harness.mjs';

const SQLITE3 = ['/usr/bin/sqlite3', '/usr/local/bin/sqlite3'].find((p) => existsSync(p));
const missing = natsMissing || (!SQLITE3 ? 'the sqlite3 CLI is not installed' : '');
if (missing && process.env.CONTEXTD_REQUIRE_NATS === '1') {
  test('NATS is required (CONTEXTD_REQUIRE_NATS=1)', () => assert.fail(missing));
}
const skip = missing || false;
// Draining after a kill waits for leases and reconnects: a longer default than the harness's.
const until = (what, fn, ms = 30000) => untilMs(what, fn, ms);

// A started `nats-server -js` owned by the test.
async function jetStreamServer() {
  const server = await natsServer({ jetstream: true });
  await server.start();
  return server;
}

async function metric(server, name) {
  const text = await (await fetch(`${new URL(server.url).origin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.split(' ')[0] === name);
  return line ? Number(line.split(' ').at(-1)) : NaN;
}

function sql(dataDir, query) {
  const out = execFileSync(SQLITE3, ['-readonly', '-separator', '|', join(dataDir, 'contextd.db'), query], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.length > 0).map((l) => l.split('|'));
}

// Every message in the stream, in stream order: { id, type, branch_id }.
async function streamEvents(url, stream) {
  const nc = await nats.connect({ servers: url });
  try {
    const jsm = await nc.jetstreamManager();
    const info = await jsm.streams.info(stream);
    const out = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      const j = m.json();
      assert.equal(m.header.get('Nats-Msg-Id'), j.id);
      out.push({ id: j.id, type: j.type, branch_id: j.branch_id });
    }
    return out;
  } finally {
    await nc.close();
  }
}

// Branch pairs until `stop()` says so; a call cut off by the kill ends the loop.
async function pairs(url, name, stop, acked = { n: 0 }) {
  let done = 0;
  try {
    const { client } = await connectHttp(url, name);
    while (!stop()) {
      const b = await client.callTool({ name: 'branch_create', arguments: { description: 'load', prompt: 'p', budget: 500 } });
      if (stop()) break;
      await client.callTool({ name: 'branch_return', arguments: { branch_id: b.structuredContent.branch_id, message: 'done' } });
      done += 1;
      acked.n += 1;
    }
    await client.close().catch(() => {});
  } catch { /* the server was killed under us */ }
  return done;
}

test('kill -9 under load: every committed branch has its events in JetStream exactly once', { skip, timeout: 120000 }, async () => {
  const ns = await jetStreamServer();
  const dataDir = tempDataDir();
  const env = { CONTEXTD_EVENTS_NATS_URL: ns.url, CONTEXTD_EVENTS_NATS_JETSTREAM: 'true',
    CONTEXTD_EVENTS_NATS_STREAM: 'OUTBOX', CONTEXTD_EVENTS_NATS_RECONNECT_WAIT_MS: '100',
    CONTEXTD_CONTEXT_FOLDING_BRANCH_CREATION_RATE_LIMIT: '100000/minute' };
  let server = await startHttpServer({ dataDir, env });
  try {
    let killed = false;
    const load = [0, 1, 2, 3].map((i) => pairs(server.url, `load-${i}`, () => killed));
    // Kill once some pairs are done and events are flowing (mid-run: clients are still calling).
    await until('events published', async () => (await metric(server, 'contextd_events_published_total')) >= 200);
    server.proc.kill('SIGKILL');
    killed = true;
    await server.exited;
    const completedBefore = (await Promise.all(load)).reduce((a, b) => a + b, 0);
    assert.ok(completedBefore > 0);
    const leftByKill = Number(sql(dataDir, 'SELECT COUNT(*) FROM event_outbox')[0][0]);

    // The restart publishes what the killed run left in the outbox, and its recovery's events.
    server = await startHttpServer({ dataDir, env });
    await until('the outbox to drain', () => sql(dataDir, 'SELECT COUNT(*) FROM event_outbox')[0][0] === '0');

    // Again with NATS down, so that the kill certainly leaves events in the outbox: they wait
    // there, and the next start publishes them.
    await ns.stop();
    killed = false;
    const acked = { n: 0 };
    const load2 = [0, 1].map((i) => pairs(server.url, `outage-${i}`, () => killed, acked));
    await until('pairs acknowledged during the outage', () => acked.n >= 20);
    server.proc.kill('SIGKILL');
    killed = true;
    await server.exited;
    await Promise.all(load2);
    const leftByOutage = Number(sql(dataDir, 'SELECT COUNT(*) FROM event_outbox')[0][0]);
    assert.ok(leftByOutage >= 2 * acked.n, `${leftByOutage} events kept for ${acked.n} pairs`);
    await ns.start();
    server = await startHttpServer({ dataDir, env });
    await until('the outbox to drain', () => sql(dataDir, 'SELECT COUNT(*) FROM event_outbox')[0][0] === '0');
    await server.stop();

    const branches = sql(dataDir, 'SELECT id, status FROM branches');
    assert.ok(branches.length >= completedBefore + acked.n, `${branches.length} branches, ${completedBefore} pairs acknowledged`);
    const events = await streamEvents(ns.url, 'OUTBOX');
    const ids = new Set(events.map((e) => e.id));
    const duplicates = events.length - ids.size;
    const byKey = new Map();
    for (const e of events) byKey.set(`${e.type}:${e.branch_id}`, (byKey.get(`${e.type}:${e.branch_id}`) ?? 0) + 1);
    const known = new Set(branches.map(([id]) => id));
    const phantom = events.filter((e) => e.branch_id && !known.has(e.branch_id));
    let missing = 0;
    let twice = 0;
    for (const [id, status] of branches) {
      const expect = [`branch.created:${id}`];
      if (status === 'completed') expect.push(`branch.folded:${id}`);
      else if (status !== 'active' && status !== 'created') expect.push(`branch.force_returned:${id}`);
      for (const k of expect) {
        const n = byKey.get(k) ?? 0;
        if (n === 0) missing += 1;
        if (n > 1) twice += n - 1;
      }
    }
    console.log(`# kill -9: ${branches.length} branches in the database, ${completedBefore} pairs ` +
      `acknowledged before the first kill (${leftByKill} events left in the outbox by it; ` +
      `${leftByOutage} by the second, during a NATS outage), ${events.length} events in the stream, missing ${missing}, ` +
      `duplicate ids ${duplicates}, same event twice ${twice}, phantom ${phantom.length}`);
    assert.equal(missing, 0, 'every committed change has its event');
    assert.equal(duplicates, 0, 'no event id twice in the stream');
    assert.equal(twice, 0, 'no event twice under different ids');
    assert.equal(phantom.length, 0, 'no event for a change the database does not have');
  } finally {
    await server.stop();
    await ns.close();
    cleanup(dataDir);
  }
});
