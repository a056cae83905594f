// A long OpenCode session through the model gateway (issue 31): the pinned OpenCode
// (`opencode run`, offline, lib/opencode.mjs) runs 40+ model turns against the scripted double
// through contextd, with contextd as its remote MCP server, whose tools it names
// `contextd_branch_create` (one underscore) and whose requests carry `x-session-id`: a read before
// any branch, parallel tool calls, a branch with a nested branch and a subagent (OpenCode's `task`
// tool) inside, a sibling, a branch force-returned by its budget (a big read), one by its deadline,
// and a last sibling. Checked as in claude_code_long.test.mjs. `opencode run` takes one prompt, so
// no user message arrives mid-branch here (Claude Code's session covers that).
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { runOpenCode, opencodeMissing } from './lib/opencode.mjs';
import { toolExchanges, branchIdIn, excerpt, openedBranchId } from './lib/transcript.mjs';
import { startChain, foldMetrics, firstResultOf, foldFailures, report, saveCorpus, dumpSession, makeWorkspace, tailOfLongScript } from './lib/long_session.mjs';
import { BINARY, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = opencodeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const C = (tool) => `contextd_${tool}`;

const workspace = () => makeWorkspace('contextd-oclong-ws', ['a1', 'a2', 'a3', 'a4', 'a5', 'n1', 'n2', 's1', 'b1', 'b2', 'b3', 'd1', 'e1'], { big: true });

const bash = (command) => ({ name: 'bash', input: { command, description: command.slice(0, 40) } });
const read = (ws, file) => ({ name: 'read', input: { filePath: join(ws, file) } });
// The id in the newest branch_create result of the request (in the branch's isolated view, issue
// 33, in the message that opens it).
const idOf = (body) => openedBranchId(body, (b) => {
  const created = toolExchanges(b).filter((e) => e.name.endsWith('branch_create') && e.result !== null);
  return branchIdIn(created.at(-1)?.result);
});

test('OpenCode, 40+ turns through the gateway: contextd_* tools fold every branch, nothing skipped, the provider checks hold', { skip: missing ?? false, timeout: 420000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  const ids = {};
  const script = [
    { tools: [read(ws, 'notes.txt')] },
    { text: 'Looking around first.', tools: [bash('ls src'), read(ws, 'config.txt')] },
    { tools: [{ name: C('branch_create'), input: { description: 'survey a', prompt: 'Survey src/a*.txt', budget: 30000 } }, read(ws, 'src/a1.txt')] },
    (body) => { ids.A = idOf(body); return { tools: [bash('grep -c MARK src/a2.txt'), read(ws, 'src/a3.txt')] }; },
    { tools: [bash('cat src/a4.txt')] },
    { tools: [{ name: C('branch_create'), input: { description: 'nested look', prompt: 'Look at n1 and n2', budget: 20000 } }] },
    (body) => { ids.A1 = idOf(body); return { tools: [read(ws, 'src/n1.txt')] }; },
    { tools: [bash('cat src/n2.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A1: n1 and n2 hold 60 lines each' } }] },
    { tools: [{ name: 'task', input: { description: 'read s1', prompt: 'Read src/s1.txt and say what it holds', subagent_type: 'general' } }] },
    { tools: [read(ws, 'src/a5.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A: the a files are fine; the port is 8080' } }] },
    ...Array.from({ length: 6 }, (_, i) => ({ tools: [bash(`echo main step ${i}`)] })),
    { tools: [{ name: C('branch_create'), input: { description: 'survey b', prompt: 'Survey src/b*.txt', budget: 30000 } }] },
    (body) => { ids.B = idOf(body); return { tools: [bash('cat src/b1.txt')] }; },
    { tools: [read(ws, 'src/b2.txt'), read(ws, 'src/b3.txt')] },
    { tools: [bash('wc -l src/b1.txt src/b2.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_B: the b files are fine' } }] },
    { tools: [bash('echo after b')] },
    ...tailOfLongScript({ C, read, bash, ws, ids, idOf, wrapUps: 10 }),
  ];
  const double = await startAnthropicDouble({
    script,
    // OpenCode's subagent has no `task` tool of its own.
    matchSub: (body) => !body.tools.some((t) => t.name === 'task'),
    subScript: [{ tools: [bash('cat src/s1.txt')] }, { text: 'SUBAGENT: s1 holds 60 lines' }],
  });
  let chain = null;
  try {
    chain = await startChain({ double, dataDir });
    const run = await runOpenCode({ prompt: 'Survey this repository and find the port.', modelUrl: chain.modelUrl, mcpUrl: chain.mcpUrl, cwd: ws, timeoutMs: 360000 });
    dumpSession('opencode-long', double, chain.recorder);
    const failWith = () => `opencode exited ${run.code} (${run.signal ?? 'no signal'})\nstdout: ${excerpt(run.stdout, 1500)}\nstderr: ${excerpt(run.stderr, 2000)}\n` +
      `double refused: ${JSON.stringify(double.refused, null, 1)}`;
    assert.equal(run.code, 0, failWith());
    const modelBodies = double.mainRequests();
    const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && Array.isArray(r.json?.tools) && r.json.tools.some((t) => t.name === 'task');
    const clientBodies = chain.recorder.requests.filter(isMain).map((r) => r.json);
    const metrics = await foldMetrics(chain.origin);
    const numbers = report({ label: 'OpenCode long session', clientBodies, modelBodies, metrics });
    const sessions = new Set(chain.recorder.requests.map((r) => r.headers['x-session-id']));
    console.log(`--- ${double.subRequests().length} subagent requests; x-session-id values ${[...sessions].join(', ')}; ids ${JSON.stringify(ids)}`);

    assert.deepEqual(double.refused, [], 'the provider checks held on every request');
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    assert.ok(modelBodies.length >= 40, `${modelBodies.length} model turns\n${failWith()}`);
    assert.equal(clientBodies.length, modelBodies.length);
    assert.ok(double.subRequests().length >= 2, 'the subagent ran against the double');
    assert.ok(chain.recorder.requests.every((r) => /^ses_/.test(r.headers['x-session-id'] ?? '')), 'every model request carries x-session-id');
    assert.ok(clientBodies[0].tools.some((t) => t.name === 'contextd_branch_create'), 'OpenCode names the tool contextd_branch_create');

    const ret = (summary) => firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith(summary));
    const at = {
      A1: ret('SUMMARY_A1'), A: ret('SUMMARY_A:'), B: ret('SUMMARY_B'), E: ret('SUMMARY_E'),
      C: firstResultOf(clientBodies, (name, input) => name === 'read' && String(input.filePath).endsWith('big.txt')),
      D: firstResultOf(clientBodies, (name, input) => name === 'bash' && String(input.command).startsWith('sleep 2')),
    };
    const returned = (id) => new RegExp(`\\[branch ${id} returned; \\d+ tokens folded away\\]`);
    const branches = [
      { name: 'A1 (nested)', from: at.A1, until: at.A, markers: ['MARK_N1', 'MARK_N2'], summary: 'SUMMARY_A1', stands: returned(ids.A1) },
      { name: 'A (with the subagent)', from: at.A, markers: ['MARK_A1', 'MARK_A3', 'MARK_A4', 'MARK_A5', 'SUMMARY_A1', 'SUBAGENT:'], summary: 'SUMMARY_A:', stands: returned(ids.A) },
      { name: 'B', from: at.B, markers: ['MARK_B1', 'MARK_B2', 'MARK_B3'], summary: 'SUMMARY_B', stands: returned(ids.B) },
      { name: 'C (budget)', from: at.C, markers: ['MARK_BIG line 500'], stands: new RegExp(`\\[branch ${ids.C} force-returned \\(budget`) },
      { name: 'D (deadline)', from: at.D, markers: ['MARK_D1'], stands: new RegExp(`\\[branch ${ids.D} force-returned \\(`) },
      { name: 'E', from: at.E, markers: ['MARK_E1'], summary: 'SUMMARY_E', stands: returned(ids.E) },
    ];
    console.log(`--- returns at client requests ${JSON.stringify(at)}`);
    saveCorpus('opencode', [
      { name: 'long-before-first-branch', body: modelBodies[1] },
      { name: 'long-client-return-a', body: clientBodies[at.A] },
      { name: 'long-client-budget-c', body: clientBodies[at.C] },
      { name: 'long-model-last', body: modelBodies.at(-1) },
    ], [[ws, '/work/repo'], [dataDir, '/data']]);

    const failures = foldFailures(branches, modelBodies);
    assert.deepEqual(metrics.skipped, {}, `no fold skipped: ${JSON.stringify(metrics.skipped)}`);
    assert.deepEqual(failures.slice(0, 20), [], `${failures.length} fold failures`);
    assert.ok(metrics.folds >= 6, `${metrics.folds} folds`);
    assert.ok(numbers.conversationRatio < 0.4,
      `the last request's conversation is ${(numbers.conversationRatio * 100).toFixed(1)}% of the unfolded session's`);
  } finally {
    await double.close();
    await chain?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});
