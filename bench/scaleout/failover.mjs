#!/usr/bin/env node
// Session failover load for bench/scaleout (issue 21): MCP sessions doing durable branch pairs
// (branch_create, then branch_return) over Streamable HTTP against several contextd instances
// that share one PostgreSQL. Session i initializes on instance i % N; when a request fails at the
// connection (the instance was killed), the session moves to the next instance and sends the
// same request again with the same Mcp-Session-Id: the session must continue there.
//
//   node bench/scaleout/failover.mjs --urls http://127.0.0.1:A/mcp,http://127.0.0.1:B/mcp \
//     --sessions 12 --duration 8 --out result.json
//
// Writes JSON: every branch whose branch_return was acknowledged (`completed`), the creates
// acknowledged but not returned when the run ended (`open`), per-session failovers, and errors.
// A retried request may have taken effect before its connection died (its reply was lost):
// a retried branch_create can leave one extra branch (counted in `retried_creates`); a retried
// branch_return of a branch that the dead instance already returned answers an error, counted in
// `retried_returns_already_done` and treated as acknowledged by the caller (the check in the
// database says whether the return was durable).
import { writeFileSync } from 'node:fs';

function parseArgs(argv) {
  const a = { urls: [], sessions: 12, duration: 8, out: '' };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[++i];
    if (k === '--urls') a.urls = v.split(',');
    else if (k === '--sessions') a.sessions = Number(v);
    else if (k === '--duration') a.duration = Number(v);
    else if (k === '--out') a.out = v;
    else throw new Error(`unknown flag ${k}`);
  }
  if (a.urls.length === 0 || !a.out) throw new Error('--urls and --out are required');
  return a;
}

// One JSON-RPC answer from a POST: JSON, or the SSE stream's message with our id.
async function readAnswer(res, id) {
  const type = res.headers.get('content-type') || '';
  const text = await res.text();
  if (type.startsWith('application/json')) return JSON.parse(text);
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (!data) continue;
    const msg = JSON.parse(data);
    if (msg.id === id) return msg;
  }
  throw new Error(`no answer to request ${id} in the stream`);
}

class ConnectionError extends Error {}

class Session {
  constructor(index, urls, stats) {
    this.urls = urls;
    this.at = index % urls.length;
    this.stats = stats;
    this.sid = '';
    this.nextId = 1;
    this.failovers = 0;
    this.pairsAfterFailover = 0;
  }

  async post(body, { retry = true } = {}) {
    for (let attempt = 0; attempt < this.urls.length; attempt++) {
      const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      };
      if (this.sid) headers['mcp-session-id'] = this.sid;
      let res;
      try {
        res = await fetch(this.urls[this.at], {
          method: 'POST',
          headers,
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
        if (body.id === undefined) {
          await res.arrayBuffer();
          return { res, msg: null, retried: attempt > 0 };
        }
        const msg = await readAnswer(res, body.id);
        return { res, msg, retried: attempt > 0 };
      } catch (e) {
        if (!retry) throw e;
        // The instance went away (refused, reset, or a stream cut mid-answer): the next one.
        this.stats.connection_errors++;
        this.at = (this.at + 1) % this.urls.length;
        this.failovers++;
        if (attempt + 1 === this.urls.length) throw new ConnectionError(String(e?.cause ?? e));
      }
    }
    throw new ConnectionError('no instance answered');
  }

  async initialize() {
    const { res, msg } = await this.post(
      {
        jsonrpc: '2.0',
        id: this.nextId++,
        method: 'initialize',
        params: {
          protocolVersion: '2025-06-18',
          capabilities: {},
          clientInfo: { name: 'failover-bench', version: '1' },
        },
      },
      { retry: false },
    );
    if (msg.error) throw new Error(`initialize: ${JSON.stringify(msg.error)}`);
    this.sid = res.headers.get('mcp-session-id');
    await this.post({ jsonrpc: '2.0', method: 'notifications/initialized' }, { retry: false });
    this.failovers = 0;
  }

  async call(name, args) {
    const before = this.failovers;
    const { res, msg, retried } = await this.post({
      jsonrpc: '2.0',
      id: this.nextId++,
      method: 'tools/call',
      params: { name, arguments: args },
    });
    if (res.status === 404) throw new Error(`${name}: session not found after failover (404)`);
    if (!msg) throw new Error(`${name}: HTTP ${res.status} without an answer`);
    if (msg.error) throw new Error(`${name}: ${JSON.stringify(msg.error)}`);
    const text = (msg.result?.content ?? []).map((c) => c.text ?? '').join('');
    return { result: msg.result, text, retried: retried || this.failovers !== before };
  }
}

async function runSession(session, stopAt, out) {
  await session.initialize();
  while (Date.now() < stopAt) {
    const created = await session.call('branch_create', {
      description: 'failover bench',
      prompt: 'explore the parser',
      budget: 1000,
    });
    if (created.result.isError) throw new Error(`branch_create: ${created.text}`);
    const id = created.result.structuredContent?.branch_id ?? /br_[0-9a-f]+/.exec(created.text)?.[0];
    if (!id) throw new Error(`branch_create: no branch id in ${created.text}`);
    if (created.retried) out.retried_creates++;
    out.open.add(id);
    const returned = await session.call('branch_return', {
      branch_id: id,
      message: 'the parser is in src/parse.c',
    });
    if (returned.result.isError) {
      // Only a retry may find its branch already returned (by the instance that died).
      if (!returned.retried) throw new Error(`branch_return: ${returned.text}`);
      out.retried_returns_already_done++;
    }
    out.open.delete(id);
    out.completed.push(id);
    if (session.failovers > 0) session.pairsAfterFailover++;
  }
}

const args = parseArgs(process.argv);
const stats = { connection_errors: 0 };
const out = {
  completed: [],
  open: new Set(),
  retried_creates: 0,
  retried_returns_already_done: 0,
  errors: [],
};
const stopAt = Date.now() + args.duration * 1000;
const sessions = Array.from({ length: args.sessions }, (_, i) => new Session(i, args.urls, stats));
await Promise.all(
  sessions.map((s) =>
    runSession(s, stopAt, out).catch((e) => {
      out.errors.push(String(e?.message ?? e));
    }),
  ),
);
const moved = sessions.filter((s) => s.failovers > 0);
const result = {
  sessions: args.sessions,
  duration_s: args.duration,
  completed_pairs: out.completed.length,
  completed: out.completed,
  open: [...out.open],
  sessions_failed_over: moved.length,
  sessions_continued_after_failover: moved.filter((s) => s.pairsAfterFailover > 0).length,
  pairs_after_failover: moved.reduce((n, s) => n + s.pairsAfterFailover, 0),
  connection_errors: stats.connection_errors,
  retried_creates: out.retried_creates,
  retried_returns_already_done: out.retried_returns_already_done,
  errors: out.errors,
};
writeFileSync(args.out, JSON.stringify(result));
const { completed, open, ...summary } = result;
console.log(JSON.stringify(summary));
process.exit(out.errors.length === 0 ? 0 : 1);
