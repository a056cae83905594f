// End-to-end: the ReasoningBank through the official TypeScript SDK client against the built
// binary and a real SQLite file (issue 18): record, search, injection into a new branch (charged
// to its budget), feedback taking an item below the injection threshold, distillation of a
// returned branch into a pending candidate, and bad input.
import test from 'node:test';
import assert from 'node:assert/strict';
import { startHttpServer, connectHttp, cleanup, textOf } from './harness.mjs';

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
    cleanup(server.dataDir);
  }
});
