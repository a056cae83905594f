// End-to-end: the ReasoningBank through the official TypeScript SDK client against the built
// binary and a real SQLite file (issue 18): record, search, injection into a new branch (charged
// to its budget), feedback taking an item below the injection threshold, distillation of a
// returned branch into a pending candidate, and bad input.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, textOf, tempDataDir, BINARY } from './harness.mjs';

function cli(...args) {
  const r = spawnSync(BINARY, ['memory', ...args], { encoding: 'utf8', timeout: 30000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

function sc(result) {
  assert.ok(!result.isError, textOf(result));
  assert.ok(result.structuredContent, JSON.stringify(result));
  return result.structuredContent;
}

test('memories are recorded, searched, injected within budget, rated and distilled', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url, 'agent-memory');
    const tools = (await client.listTools()).tools.map((t) => t.name);
    for (const name of ['memory_search', 'memory_record', 'memory_feedback', 'memory_outcome']) {
      assert.ok(tools.includes(name), `${name} listed: ${tools}`);
    }

    const recorded = sc(await call(client, 'memory_record', {
      title: 'Run the Django test runner, not pytest',
      description: 'When running Django model tests in this repository.',
      content: 'Use ./runtests.py with the app label; pytest misses the settings module. ' +
               'The key sk-ant-api03-' + 'A'.repeat(93) + 'AA is not needed.',
      tags: ['django', 'tests'],
    })).memory;
    assert.match(recorded.id, /^mem_/);
    assert.equal(recorded.status, 'active');
    assert.equal(recorded.confidence, 0.75);
    assert.ok(!recorded.content.includes('A'.repeat(93)), `scrubbed before stored: ${recorded.content}`);

    const found = sc(await call(client, 'memory_search', { query: 'how to run django model tests' }));
    assert.equal(found.memories[0].id, recorded.id);

    // A new branch with a similar task receives it, charged to its budget.
    const created = await call(client, 'branch_create', {
      description: 'Fix the failing Django model test',
      prompt: 'Run the model tests and find why test_save fails', budget: 4000,
    });
    const c = sc(created);
    assert.equal(c.injected_context.length, 1, JSON.stringify(c));
    const injected = c.injected_context[0];
    assert.equal(injected.id, recorded.id);
    assert.equal(injected.title, recorded.title);
    assert.ok(injected.tokens > 0 && injected.tokens <= 0.2 * 4000);
    assert.equal(c.injected_tokens, injected.tokens);
    // The model reads it in the text: id, title, content, tokens.
    const text = textOf(created);
    assert.ok(text.includes(recorded.id) && text.includes('[worked] Run the Django test runner'), text);
    assert.ok(text.includes(`(${injected.tokens} tokens)`), text);
    const status = sc(await call(client, 'branch_status', { branch_id: c.branch_id }));
    assert.equal(status.branches[0].tokens_used, c.prompt_tokens + c.injected_tokens);
    // The trail's branch_created event records what the branch received, memories included.
    const root = sc(await call(client, 'context_view', {})).session_scope_id;
    const createdEvents = sc(await call(client, 'trail_unfold', { scope_id: root })).events;
    const createdEvent = createdEvents.find((e) => e.kind === 'branch_created' && e.label === c.branch_id);
    assert.ok(createdEvent, JSON.stringify(createdEvents));
    assert.ok(JSON.stringify(createdEvent).includes(`memory ${recorded.id} (${injected.tokens} tokens)`),
      JSON.stringify(createdEvent));

    // Returning with extract_memory distils the branch into a pending candidate.
    const returned = sc(await call(client, 'branch_return', {
      message: 'test_save failed because the fixture lacked a pk; fixed in tests/fixtures.json.',
      extract_memory: true,
    }));
    assert.equal(returned.memory_queued, true);
    const distilled = sc(await call(client, 'memory_search', { query: 'failing Django model test_save' }));
    const candidate = distilled.memories.find((m) => m.id !== recorded.id);
    assert.ok(candidate, JSON.stringify(distilled));
    assert.equal(candidate.status, 'pending');
    assert.equal(candidate.source_branch_id, c.branch_id);
    assert.match(candidate.content, /fixture lacked a pk/);

    // Negative feedback takes the recorded item below 0.7: still searchable, no longer injected.
    const rated = sc(await call(client, 'memory_feedback', { memory_id: recorded.id, helpful: false })).memory;
    assert.equal(rated.confidence, 0.6);
    const second = sc(await call(client, 'branch_create', {
      description: 'Another Django model test', prompt: 'run the model tests again', budget: 4000,
    }));
    assert.ok(!second.injected_context.some((m) => m.id === recorded.id), JSON.stringify(second));
    // An outcome confirms the candidate.
    const confirmed = sc(await call(client, 'memory_outcome', { memory_id: candidate.id, succeeded: true })).memory;
    assert.equal(confirmed.status, 'active');
    await call(client, 'branch_return', { message: 'done' });

    // inject_memories: false injects nothing.
    const plain = sc(await call(client, 'branch_create', {
      description: 'Fix the failing Django model test', prompt: 'again', inject_memories: false,
    }));
    assert.deepEqual(plain.injected_context, []);
    await call(client, 'branch_return', { message: 'done' });

    // Bad input: a clear tool error naming the field; unknown ids are not found.
    const empty = await call(client, 'memory_record', { title: '', description: 'd', content: 'c' });
    assert.equal(empty.isError, true);
    assert.match(textOf(empty), /title/);
    const blank = await call(client, 'memory_record', { title: '   ', description: 'd', content: 'c' });
    assert.equal(blank.isError, true);
    assert.match(textOf(blank), /title must be 1-200 characters and not blank/);
    const missing = await call(client, 'memory_feedback', { memory_id: 'mem_nope', helpful: true });
    assert.equal(missing.isError, true);
    assert.match(textOf(missing), /memory mem_nope not found/);
  } finally {
    await server.stop();
  }

  // The CLI: list, export, import into another data dir (a team sharing a bank), show, retire.
  const other = tempDataDir();
  try {
    const listed = cli('list', '--data-dir', server.dataDir);
    assert.equal(listed.code, 0, listed.err);
    assert.equal(listed.out.trim().split('\n').length, 2, listed.out);
    const exported = cli('export', '--data-dir', server.dataDir);
    assert.equal(exported.code, 0, exported.err);
    const lines = exported.out.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines.length, 2);
    const file = join(other, 'bank.jsonl');
    writeFileSync(file, exported.out + '{"id": "mem_x", "title": 3}\nnot json\n' +
      'x'.repeat(2 * 1024 * 1024) + '\n');
    const imported = cli('import', file, '--data-dir', other);
    assert.equal(imported.code, 1, 'refused lines make the exit code 1');
    assert.match(imported.out, /imported 2, refused 3/);
    assert.match(imported.err, /line 3: tenant: missing/);
    assert.match(imported.err, /line 4: not JSON/);
    assert.match(imported.err, /line 5: line longer than 1048576 bytes/);
    const again = cli('import', file, '--data-dir', other);
    assert.match(again.err, /line 1: memory mem_\w+ already exists/);
    const found = cli('search', 'django model tests', '--data-dir', other);
    assert.equal(found.code, 0, found.err);
    assert.ok(found.out.includes(lines[0].id) || found.out.includes(lines[1].id), found.out);
    const retired = cli('retire', lines[0].id, '--reason', 'obsolete', '--data-dir', other);
    assert.equal(retired.code, 0, retired.err);
    const shown = JSON.parse(cli('show', lines[0].id, '--json', '--data-dir', other).out);
    assert.equal(shown.status, 'retired');
    assert.deepEqual(shown.history.map((h) => h.action), ['imported', 'retired']);
    assert.equal(cli('show', 'mem_nope', '--data-dir', other).code, 2);
  } finally {
    cleanup(other);
    cleanup(server.dataDir);
  }
});

test('memory_outcome without memory_id credits what the task was given, once', async () => {
  const server = await startHttpServer();
  try {
    const { client } = await connectHttp(server.url, 'agent-credit');
    const item = sc(await call(client, 'memory_record', {
      title: 'Bisect flaky integration tests by seed',
      description: 'When an integration test fails only sometimes.',
      content: 'Run the suite with a fixed random seed and bisect the seeds that fail.',
    })).memory;
    // At the root nothing was injected yet: a clear error, nothing credited.
    const none = await call(client, 'memory_outcome', { succeeded: true });
    assert.equal(none.isError, true);
    assert.match(textOf(none), /name memory_id/);
    const branch = sc(await call(client, 'branch_create', {
      description: 'Find why the integration test is flaky',
      prompt: 'The integration suite fails sometimes; bisect by random seed', budget: 4000,
    }));
    assert.deepEqual(branch.injected_context.map((m) => m.id), [item.id]);
    const credited = sc(await call(client, 'memory_outcome', { succeeded: true })).memories;
    assert.deepEqual(credited.map((m) => [m.id, m.success_count]), [[item.id, 1]]);
    // Credited once: a second report has nothing left to credit.
    const again = await call(client, 'memory_outcome', { succeeded: false });
    assert.equal(again.isError, true);
    await call(client, 'branch_return', { message: 'bisected: seed 7 fails' });
    const shown = JSON.parse(cli('show', item.id, '--json', '--data-dir', server.dataDir).out);
    assert.equal(shown.success_count, 1);
    assert.equal(shown.failure_count, 0);
    // memory show lists the injection into the branch and the outcome that followed it.
    assert.equal(shown.injections.length, 1, JSON.stringify(shown.injections));
    assert.deepEqual(shown.injections[0].into, { kind: 'branch', id: branch.branch_id });
    assert.deepEqual(shown.injections[0].followed_by.map((e) => [e.action, e.matched_by]),
      [['outcome', 'actor']], JSON.stringify(shown.injections));
  } finally {
    await server.stop();
    cleanup(server.dataDir);
  }
});

test('memory.extract_memory distils every returned branch and those that ran out of time', async () => {
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, 'memory:\n  extract_memory: true\n');
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  try {
    const { client } = await connectHttp(server.url, 'agent-extract-all');
    // Returned without asking: distilled by default.
    const a = sc(await call(client, 'branch_create', { description: 'Locate the retry policy', prompt: 'find it' }));
    assert.equal(sc(await call(client, 'branch_return', { message: 'Retry policy lives in net/retry.py.' })).memory_queued, true);
    // A child ended because its parent returned: not a lesson about its own task.
    const parent = sc(await call(client, 'branch_create', { description: 'Audit logging setup', prompt: 'audit' }));
    sc(await call(client, 'branch_create', { description: 'Inspect the zebra handler', prompt: 'inspect' }));
    sc(await call(client, 'branch_return', { branch_id: parent.branch_id, message: 'Logging is configured in log.cfg.' }));
    // Out of time: an [avoid] item.
    const late = sc(await call(client, 'branch_create', { description: 'Scan the walrus archive', prompt: 'scan it all', timeout_seconds: 1 }));
    let found = [];
    for (let i = 0; i < 100 && found.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      found = sc(await call(client, 'memory_search', { query: 'walrus archive' })).memories;
    }
    assert.equal(found.length, 1, 'the timed-out branch was distilled');
    assert.equal(found[0].outcome, 'failure');
    assert.equal(found[0].source_branch_id, late.branch_id);
    assert.match(found[0].content, /timeout|deadline|time/i);
    const retry = sc(await call(client, 'memory_search', { query: 'retry policy' })).memories;
    assert.ok(retry.some((m) => m.source_branch_id === a.branch_id), JSON.stringify(retry));
    const zebra = sc(await call(client, 'memory_search', { query: 'zebra handler' })).memories;
    assert.deepEqual(zebra, [], 'a branch its parent ended is not distilled');
  } finally {
    await server.stop();
    cleanup(dataDir);
  }
});
