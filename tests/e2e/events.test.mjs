// End-to-end: contextd publishes branch events to a real nats-server (Debian's nats-server, started
// here on a free loopback port with its store in a temporary directory, stopped at the end). Read
// with the NATS JavaScript client (tools/npm/events). Skipped, with a message, when nats-server or
// the client is missing. docs/events.md is the contract checked here.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startHttpServer, connectHttp, cleanup, textOf } from './harness.mjs';
import { nats, natsMissing, natsServer, until } from './nats_harness.mjs';

const skip = natsMissing || false;

function natsEnv(url, extra = {}) {
  return { CONTEXTD_EVENTS_NATS_URL: url, CONTEXTD_EVENTS_NATS_RECONNECT_WAIT_MS: '100',
    CONTEXTD_CONTEXT_FOLDING_BRANCH_CREATION_RATE_LIMIT: '100/minute', ...extra };
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.ok(!r.isError, `${name}: ${textOf(r)}`);
  return r.structuredContent;
}

const origin = (mcpUrl) => new URL(mcpUrl).origin;
async function health(server) {
  const r = await fetch(`${origin(server.url)}/healthz`);
  return { status: r.status, body: await r.json() };
}
async function metric(server, name) {
  const text = await (await fetch(`${origin(server.url)}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name + ' ') || l.startsWith(name + '{') && l.split(' ')[0] === name);
  return line ? Number(line.split(' ').at(-1)) : 0;
}

// Creates a parent, a child that returns, a grandchild left active, then returns the parent:
// created x3, folded x2, force_returned x1 (the grandchild). Returns the branch ids.
async function lifecycle(client) {
  const parent = await call(client, 'branch_create', { description: 'parent', prompt: 'find the parser', budget: 4000 });
  const child = await call(client, 'branch_create', { description: 'child', prompt: 'read parser.c', budget: 1000 });
  await call(client, 'branch_return', { branch_id: child.branch_id, message: 'parser is in src/parse.c; token ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8' });
  const grandchild = await call(client, 'branch_create', { description: 'left open', prompt: 'p', budget: 500 });
  await call(client, 'branch_return', { branch_id: parent.branch_id, message: 'done' });
  return { parent: parent.branch_id, child: child.branch_id, grandchild: grandchild.branch_id };
}

test('plain NATS: branch events on their subjects with the documented payloads', { skip }, async () => {
  const ns = await natsServer();
  await ns.start();
  const nc = await nats.connect({ servers: ns.url });
  const got = [];
  const sub = nc.subscribe('contextd.>');
  (async () => { for await (const m of sub) got.push({ subject: m.subject, id: m.headers?.get('Nats-Msg-Id'), json: JSON.parse(new TextDecoder().decode(m.data)) }); })();
  await nc.flush();
  const server = await startHttpServer({ env: natsEnv(ns.url) });
  try {
    await until('nats connected in /healthz', async () => (await health(server)).body.checks.nats.status === 'connected');
    const h = await health(server);
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    assert.equal(h.body.checks.database.status, 'ok');
    const { client } = await connectHttp(server.url, 'agent-events');
    const ids = await lifecycle(client);
    await until('6 branch events', () => got.filter((e) => e.json.type.startsWith('branch.')).length >= 6);
    const branch = got.filter((e) => e.json.type.startsWith('branch.'));
    const types = branch.map((e) => `${e.json.type}:${e.json.branch_id}`);
    assert.deepEqual(types, [
      `branch.created:${ids.parent}`, `branch.created:${ids.child}`, `branch.folded:${ids.child}`,
      `branch.created:${ids.grandchild}`, `branch.force_returned:${ids.grandchild}`, `branch.folded:${ids.parent}`,
    ]);
    for (const e of got) {
      const j = e.json;
      assert.equal(e.id, j.id, 'Nats-Msg-Id is the event id');
      assert.match(j.id, /^ev_[0-9a-f]{32}$/);
      assert.equal(j.v, 1);
      assert.equal(j.tenant, 'local');
      assert.ok(typeof j.time === 'string' && Date.parse(j.time) === j.time_ms, j.time);
      const session = j.session === null ? '%' : j.session.replace(/[^A-Za-z0-9_-]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
      assert.equal(e.subject, `contextd.local.${j.project}.${session}.${j.type}`);
    }
    assert.equal(new Set(got.map((e) => e.id)).size, got.length, 'ids are unique');
    const folded = branch.find((e) => e.json.type === 'branch.folded' && e.json.branch_id === ids.child).json;
    assert.equal(folded.status, 'completed');
    assert.equal(folded.parent_id, ids.parent);
    assert.equal(folded.depth, 1);
    assert.equal(folded.budget_allocated, 1000);
    assert.ok(folded.tokens_used > 0);
    assert.ok(!folded.summary.includes('ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8'), `summary scrubbed: ${folded.summary}`);
    assert.match(folded.summary, /src\/parse\.c/);
    const forced = branch.find((e) => e.json.type === 'branch.force_returned').json;
    assert.equal(forced.status, 'failed');
    assert.ok(forced.reason, 'force_returned carries its reason');
    const created = branch.find((e) => e.json.branch_id === ids.parent).json;
    assert.equal(created.parent_id, null);
    assert.equal(created.depth, 0);
    assert.equal(created.status, 'active');
    assert.equal(created.budget_allocated, 4000);
    await client.close();
    assert.ok(await metric(server, 'contextd_events_published_total') >= 6);
  } finally {
    await server.stop();
    await nc.close();
    await ns.close();
    cleanup(server.dataDir);
  }
});

test('JetStream: every event exactly once in the stream across a NATS restart', { skip }, async () => {
  const ns = await natsServer({ jetstream: true });
  await ns.start();
  const server = await startHttpServer({ env: natsEnv(ns.url, { CONTEXTD_EVENTS_NATS_JETSTREAM: 'true', CONTEXTD_EVENTS_NATS_STREAM: 'CONTEXTD' }) });
  try {
    const { client } = await connectHttp(server.url, 'agent-js');
    await lifecycle(client);
    await until('6 events acked', async () => await metric(server, 'contextd_events_published_total') >= 6);
    await ns.stop();  // an outage: the next events are retried with the same Nats-Msg-Id
    await lifecycle(client);
    await ns.start();
    await until('12 events acked', async () => await metric(server, 'contextd_events_published_total') >= 12, 30000);
    assert.equal(await metric(server, 'contextd_events_dropped_total{reason="retries_exhausted"}'), 0);
    const nc = await nats.connect({ servers: ns.url });
    try {
      const jsm = await nc.jetstreamManager();
      const info = await jsm.streams.info('CONTEXTD');
      const ids = [];
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const m = await jsm.streams.getMessage('CONTEXTD', { seq });
        ids.push(m.json().id);
        assert.equal(m.header.get('Nats-Msg-Id'), m.json().id);
      }
      const branchEvents = ids.length;
      assert.equal(new Set(ids).size, ids.length, 'no event twice in the stream');
      assert.equal(branchEvents, info.state.messages);
      assert.ok(branchEvents >= 12, `12 branch events stored, got ${branchEvents}`);
    } finally {
      await nc.close();
    }
    await client.close();
  } finally {
    await server.stop();
    await ns.close();
    cleanup(server.dataDir);
  }
});

test('NATS down at start: contextd serves, keeps the events in its outbox, /healthz says so, then publishes them', { skip }, async () => {
  const ns = await natsServer();
  const server = await startHttpServer({ env: natsEnv(ns.url) });
  try {
    let h = await health(server);
    assert.equal(h.status, 503);
    assert.equal(h.body.status, 'unavailable');
    assert.match(h.body.checks.nats.status, /^(connecting|reconnecting)$/);
    assert.equal(h.body.checks.database.status, 'ok');
    const { client } = await connectHttp(server.url, 'agent-down');
    const b = await call(client, 'branch_create', { description: 'while down', prompt: 'p', budget: 500 });
    await call(client, 'branch_return', { branch_id: b.branch_id, message: 'ok' });
    await ns.start();
    await until('healthz ready', async () => (await health(server)).status === 200);
    // Kept in the outbox while NATS was down (decision 0027), published once it is back.
    await until('the 2 kept events published', async () => await metric(server, 'contextd_events_published_total') >= 2);
    assert.equal(await metric(server, 'contextd_events_dropped_total{reason="disconnected"}'), 0);
    h = await health(server);
    assert.equal(h.body.checks.nats.status, 'connected');
    const nc = await nats.connect({ servers: ns.url });
    const sub = nc.subscribe('contextd.>', { max: 1 });
    await nc.flush();
    await call(client, 'branch_create', { description: 'after', prompt: 'p', budget: 500 });
    for await (const m of sub) assert.equal(JSON.parse(new TextDecoder().decode(m.data)).type, 'branch.created');
    await nc.close();
    await client.close();
  } finally {
    await server.stop();
    await ns.close();
    cleanup(server.dataDir);
  }
});
