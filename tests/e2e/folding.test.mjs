// End-to-end: the whole branch lifecycle through the official TypeScript SDK client, over HTTP and
// stdio, against the built binary with a real SQLite file (issue 3).
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { startHttpServer, connectHttp, connectStdio, cleanup, textOf, tempDataDir } from './harness.mjs';

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

function sc(result) {
  assert.ok(result.structuredContent, `structuredContent present: ${JSON.stringify(result)}`);
  return result.structuredContent;
}

test('http: create, nest, depth limit, return parent with active child, status tree, isolation', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url, 'agent-a');
    const a = await call(client, 'branch_create', { description: 'explore repo', prompt: 'find the parser', budget: 4000 });
    assert.ok(!a.isError, textOf(a));
    const A = sc(a);
    assert.match(A.branch_id, /^br_/);
    assert.equal(A.depth, 0, 'a branch under the session root is at depth 0');
    assert.equal(A.max_depth, 3);
    assert.equal(A.budget_allocated, 4000);
    assert.deepEqual(A.injected_context, []);
    assert.ok(textOf(a).includes(A.branch_id), 'the text carries the branch id');
    // Clients show the model either the text or the structured result: both carry the instruction.
    assert.match(A.instructions, /branch_return/);
    assert.ok(textOf(a).includes(A.instructions), textOf(a));
    assert.ok(!/later issue/.test(JSON.stringify(a)), JSON.stringify(a));

    const b = sc(await call(client, 'branch_create', { description: 'read parser', prompt: 'read parser.c', budget: 1000 }));
    assert.equal(b.depth, 1);
    assert.ok(b.parent_budget_remaining <= 3000, 'child budget reserved from the parent');
    const c = sc(await call(client, 'branch_create', { description: 'level 3', prompt: 'deeper', budget: 200 }));
    assert.equal(c.depth, 2, 'max_depth 3 allows depths 0, 1 and 2');
    const d = await call(client, 'branch_create', { description: 'level 4', prompt: 'too deep', budget: 50 });
    assert.equal(d.isError, true);
    assert.match(textOf(d), /max_depth \(3\) reached: parent br_\w+ is at depth 2/);

    // An error that quotes the agent's input is scrubbed like everything else.
    const leaky = await call(client, 'branch_return', { branch_id: 'ghp_abcdefghijklmnopqrstuvwxyz0123456789', message: 'x' });
    assert.equal(leaky.isError, true);
    assert.ok(!textOf(leaky).includes('ghp_abcdefghijklmnopqrstuvwxyz0123456789'), textOf(leaky));
    assert.match(textOf(leaky), /REDACTED/);

    const bad = await call(client, 'branch_create', { description: '', prompt: 'x' });
    assert.equal(bad.isError, true, 'schema violations are tool errors');

    // Status tree shows all three active.
    const tree = await call(client, 'branch_status', {});
    assert.ok(!tree.isError);
    for (const id of [A.branch_id, b.branch_id, c.branch_id]) assert.ok(textOf(tree).includes(id));
    // branch_status numbers depths as branch_create does, in its text and its structured result.
    assert.match(textOf(tree), new RegExp(`- ${A.branch_id} \\[active\\] depth 0 `));
    assert.match(textOf(tree), new RegExp(`- ${c.branch_id} \\[active\\] depth 2 `));
    const root = sc(tree).branches[0];
    assert.deepEqual([root.depth, root.children[0].depth, root.children[0].children[0].depth], [0, 1, 2]);

    // Another session cannot see or return these branches: "not found", like a branch that never existed.
    const { client: other } = await connectHttp(server.url, 'agent-b');
    const foreign = await call(other, 'branch_return', { branch_id: b.branch_id, message: 'steal' });
    const missing = await call(other, 'branch_return', { branch_id: 'br_00000000000000000000000000000000', message: 'x' });
    assert.equal(foreign.isError, true);
    assert.equal(missing.isError, true);
    assert.equal(textOf(foreign).replace(b.branch_id, 'ID'), textOf(missing).replace('br_00000000000000000000000000000000', 'ID'));

    // Returning the parent force-returns its active children first.
    const r = await call(client, 'branch_return', { branch_id: A.branch_id, message: 'parser is in src/parse.c; token_t defined in lex.h' });
    assert.ok(!r.isError, textOf(r));
    const rtext = textOf(r);
    assert.ok(rtext.includes('parser is in src/parse.c'), 'the summary is in the text');
    assert.match(rtext, /tokens/i);
    const after = await call(client, 'branch_status', { branch_id: c.branch_id });
    assert.match(textOf(after), /failed|force/i, 'the child was force-returned');
    const again = await call(client, 'branch_return', { branch_id: A.branch_id, message: 'twice' });
    assert.equal(again.isError, true, 'a completed branch cannot be returned again');
    await client.close();
    await other.close();
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('http: a return that takes the parent past 80% warns once, in the text and the structured result', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url, 'agent-warn');
    const parent = sc(await call(client, 'branch_create', { description: 'parent', prompt: 'find it', budget: 1000 }));
    // About 800 tokens of prompt, charged to the child and, when it returns, to the parent.
    const child = sc(await call(client, 'branch_create', { description: 'child', prompt: 'word '.repeat(800), budget: 900 }));
    const r = await call(client, 'branch_return', { branch_id: child.branch_id, message: 'done' });
    assert.ok(!r.isError, textOf(r));
    const warning = new RegExp(`budget \\d+% used: \\d+/1000 tokens in ${parent.branch_id}`, 'g');
    assert.equal((textOf(r).match(warning) ?? []).length, 1, textOf(r));
    const structured = sc(r).warnings ?? [];
    assert.equal(structured.length, 1, JSON.stringify(sc(r)));
    assert.match(structured[0], warning);
    await client.close();
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

// Reads the SQLite file with the sqlite3 command-line shell (installed by scripts/install-deps.sh).
function sql(dataDir, query) {
  return execFileSync('sqlite3', [join(dataDir, 'contextd.db'), query], { encoding: 'utf8' }).trim();
}

test('http: kill -9 loses no acknowledged change; restart force-returns active branches', async () => {
  const dataDir = tempDataDir();
  let server = await startHttpServer({ dataDir });
  let live;
  let done;
  try {
    const { client } = await connectHttp(server.url);
    done = sc(await call(client, 'branch_create', { description: 'finished', prompt: 'p' })).branch_id;
    const ret = await call(client, 'branch_return', { branch_id: done, message: 'all done' });
    assert.ok(!ret.isError, textOf(ret));
    live = sc(await call(client, 'branch_create', { description: 'survives', prompt: 'p' })).branch_id;
  } finally {
    await server.stop('SIGKILL');
  }
  // Every acknowledged change is in the file although the process never shut down.
  assert.equal(sql(dataDir, `select status from branches where id='${done}'`), 'completed');
  assert.equal(sql(dataDir, `select summary from branches where id='${done}'`), 'all done');
  assert.equal(sql(dataDir, `select status from branches where id='${live}'`), 'active');

  server = await startHttpServer({ dataDir });
  try {
    assert.match(server.stderr(), /recovered 1 branch/);
    assert.equal(sql(dataDir, `select status || '|' || finish_reason from branches where id='${live}'`),
      'failed|server restarted');
    assert.notEqual(sql(dataDir, `select summary from branches where id='${live}'`), '', 'partial summary kept');
    assert.equal(sql(dataDir, `select status from branches where id='${done}'`), 'completed');
  } finally {
    await server.stop();
    cleanup(dataDir);
  }
});

test('http: session end (DELETE) force-returns the session\'s active branches', async () => {
  const server = await startHttpServer();
  try {
    const { client, transport } = await connectHttp(server.url);
    const id = sc(await call(client, 'branch_create', { description: 'open', prompt: 'p' })).branch_id;
    await transport.terminateSession();
    await client.close();
    let row = '';
    for (let i = 0; i < 50 && !row.startsWith('failed'); i++) {
      row = sql(server.dataDir, `select status || '|' || finish_reason from branches where id='${id}'`);
      if (!row.startsWith('failed')) await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(row, /^failed\|session ended/);
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('http: /metrics and /healthz', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url);
    const id = sc(await call(client, 'branch_create', { description: 'metered', prompt: 'count me' })).branch_id;
    await call(client, 'branch_return', { branch_id: id, message: 'done' });
    const base = server.url.replace(/\/mcp$/, '');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    assert.match(metrics, /contextd_branches_finished_total\{status="completed"\} 1/);
    assert.match(metrics, /contextd_tokens_charged_total \d+/);
    assert.match(metrics, /contextd_tool_call_seconds_count\{tool="branch_create"\} 1/);
    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    await client.close();
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('stdio: create and return over stdio', async () => {
  const { client, dataDir } = await connectStdio();
  try {
    const created = await call(client, 'branch_create', { description: 'stdio branch', prompt: 'do a thing', budget: 500 });
    assert.ok(!created.isError, textOf(created));
    const ret = await call(client, 'branch_return', { message: 'did the thing' });
    assert.ok(!ret.isError, textOf(ret));
    assert.ok(textOf(ret).includes('did the thing'));
  } finally {
    await client.close();
    cleanup(dataDir);
  }
});
