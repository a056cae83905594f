// A long Claude Code session through the model gateway (issue 31): the pinned Claude Code, fed
// over --input-format stream-json, runs 40+ model turns against the scripted double through
// contextd, with the harness's own additions switched on (mid-conversation `role: "system"`
// messages, the silent-turn nudge every 3 turns): a read before any branch, parallel tool calls,
// a branch with a nested branch and a subagent (the Agent tool) inside, a sibling branch during
// which the user types a second message, a branch force-returned by its budget (a big Read), one
// by its deadline, and a last sibling. What the double received is checked: every branch folds
// from the request that carried its return (or force-return) on, its work gone and its summary in
// place, the typed message kept; no fold skipped; the double's provider checks (thinking bound to
// its prefix, tool pairing, system-message placement) held on every request. The recorder in
// front of contextd keeps what Claude Code sent (unfolded), so the last request is compared with
// the same session unfolded.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAnthropicDouble, assertThinkingKept } from './lib/anthropic_double.mjs';
import { startClaudeStream, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { excerpt, openedBranchId, messageText, kViewOpening } from './lib/transcript.mjs';
import { startChain, foldMetrics, firstResultOf, foldFailures, report, saveCorpus, dumpSession, makeWorkspace, tailOfLongScript } from './lib/long_session.mjs';
import { BINARY, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const C = (tool) => `mcp__contextd__${tool}`;

const workspace = () => makeWorkspace('contextd-long-ws', ['a1', 'a2', 'a3', 'a4', 'a5', 'n1', 'n2', 's1', 'b1', 'b2', 'b3', 'b4', 'd1', 'e1'], { big: true });

const bash = (command) => ({ name: 'Bash', input: { command, description: command.slice(0, 40) } });
const read = (ws, file) => ({ name: 'Read', input: { file_path: join(ws, file) } });
// The branch just opened: in its isolated view (issue 33) its id opens the branch's first message.
const idOf = (body) => openedBranchId(body);

test('Claude Code, 40+ turns through the gateway: every branch folds, nothing skipped, the provider checks hold', { skip: missing ?? false, timeout: 420000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  const ids = {};
  let session = null;
  const typed = 'Also keep an eye on src/b3.txt, the user says.';
  const script = [
    { tools: [read(ws, 'notes.txt')] },
    { text: 'Looking around first.', tools: [bash('ls src'), read(ws, 'config.txt')] },
    // A: created in the same turn as its first read.
    { tools: [{ name: C('branch_create'), input: { description: 'survey a', prompt: 'Survey src/a*.txt', budget: 30000 } }, read(ws, 'src/a1.txt')] },
    (body) => { ids.A = idOf(body); return { tools: [bash('grep -c MARK src/a2.txt'), read(ws, 'src/a3.txt')] }; },
    { tools: [bash('cat src/a4.txt')] },
    { tools: [{ name: C('branch_create'), input: { description: 'nested look', prompt: 'Look at n1 and n2', budget: 20000 } }] },
    (body) => { ids.A1 = idOf(body); return { tools: [read(ws, 'src/n1.txt')] }; },
    { tools: [bash('cat src/n2.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A1: n1 and n2 hold 60 lines each' } }] },
    { tools: [{ name: 'Agent', input: { description: 'read s1', prompt: 'Read src/s1.txt and say what it holds', subagent_type: 'general-purpose', run_in_background: false } }] },
    { tools: [read(ws, 'src/a5.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A: the a files are fine; the port is 8080' } }] },
    // Consecutive calls at the top: Claude Code's nudges come every 3 turns.
    ...Array.from({ length: 6 }, (_, i) => ({ tools: [bash(`echo main step ${i}`)] })),
    // B: the user types a message while it runs.
    { tools: [{ name: C('branch_create'), input: { description: 'survey b', prompt: 'Survey src/b*.txt', budget: 30000 } }] },
    (body) => { ids.B = idOf(body); session.say(typed); return { tools: [bash('sleep 1; cat src/b1.txt')] }; },
    { tools: [read(ws, 'src/b2.txt')] },
    { tools: [read(ws, 'src/b3.txt'), bash('cat src/b4.txt')] },
    { tools: [bash('wc -l src/b1.txt src/b2.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_B: the b files are fine, b3 included' } }] },
    { tools: [bash('echo after b')] },
    ...tailOfLongScript({ C, read, bash, ws, ids, idOf, wrapUps: 9 }),
  ];
  const double = await startAnthropicDouble({
    script,
    // The subagent: Claude Code marks its requests in the billing line of the system prompt.
    matchSub: (body) => JSON.stringify(body.system ?? '').includes('cc_is_subagent=true'),
    subScript: [{ tools: [bash('cat src/s1.txt')] }, { text: 'SUBAGENT: s1 holds 60 lines' }],
  });
  let chain = null;
  try {
    chain = await startChain({ double, dataDir });
    session = startClaudeStream({
      prompt: 'Survey this repository and find the port.', modelUrl: chain.modelUrl, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { url: chain.mcpUrl }), allowedTools: ['Read', 'Bash', 'Agent', 'mcp__contextd'],
      timeoutMs: 360000,
      env: { CLAUDE_CODE_FORCE_MID_CONVERSATION_SYSTEM: '1', CLAUDE_CODE_SILENT_TURN_REMINDER: '1', CLAUDE_CODE_SILENT_TURN_REMINDER_TURNS: '3' },
    });
    const run = await session.done;
    dumpSession('claude-long', double, chain.recorder);
    const failWith = () => `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstderr: ${excerpt(run.stderr, 2000)}\n` +
      `double refused: ${JSON.stringify(double.refused, null, 1)}\nlast events: ${excerpt(JSON.stringify(run.events.slice(-3)), 2000)}`;
    assert.equal(run.code, 0, failWith());
    const modelBodies = double.mainRequests();
    const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
      Array.isArray(r.json?.tools) && r.json.tools.length > 0 && !JSON.stringify(r.json.system ?? '').includes('cc_is_subagent=true');
    const clientBodies = chain.recorder.requests.filter(isMain).map((r) => r.json);
    const metrics = await foldMetrics(chain.origin);
    const numbers = report({ label: 'Claude Code long session', clientBodies, modelBodies, metrics });
    const systemMessages = modelBodies.at(-1).messages.filter((m) => m.role === 'system').length;
    console.log(`--- ${systemMessages} role:"system" messages in the last request; ${double.subRequests().length} subagent requests; ids ${JSON.stringify(ids)}`);

    // The client ran the whole script and the double accepted every request.
    assert.deepEqual(double.refused, [], 'the provider checks held on every request');
    assertThinkingKept(double, 'no thinking block dropped, none missing from a tool loop');
    assert.ok(modelBodies.length >= 40, `${modelBodies.length} model turns`);
    assert.equal(clientBodies.length, modelBodies.length);
    assert.ok(systemMessages > 5, 'Claude Code sent its mid-conversation system messages');
    assert.ok(double.subRequests().length >= 2, 'the subagent ran against the double');
    assert.ok(JSON.stringify(clientBodies.at(-1)).includes(typed), 'the typed message reached the agent\'s transcript');

    // Which request carried each return (what Claude Code sent, unfolded).
    const ret = (summary) => firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith(summary));
    const at = {
      A1: ret('SUMMARY_A1'), A: ret('SUMMARY_A:'), B: ret('SUMMARY_B'), E: ret('SUMMARY_E'),
      C: firstResultOf(clientBodies, (name, input) => name === 'Read' && String(input.file_path).endsWith('big.txt')),
      D: firstResultOf(clientBodies, (name, input) => name === 'Bash' && String(input.command).startsWith('sleep 2')),
    };
    const returned = (id) => new RegExp(`\\[branch ${id} returned; \\d+ tokens folded away\\]`);
    const branches = [
      { name: 'A1 (nested)', from: at.A1, until: at.A, markers: ['MARK_N1', 'MARK_N2'], summary: 'SUMMARY_A1', stands: returned(ids.A1) },
      { name: 'A (with the subagent)', from: at.A, markers: ['MARK_A1', 'MARK_A3', 'MARK_A4', 'MARK_A5', 'SUMMARY_A1', 'SUBAGENT:'], summary: 'SUMMARY_A:', stands: returned(ids.A) },
      { name: 'B (user typed inside)', from: at.B, markers: ['MARK_B1', 'MARK_B2', 'MARK_B3', 'MARK_B4'], summary: 'SUMMARY_B', stands: returned(ids.B) },
      { name: 'C (budget)', from: at.C, markers: ['MARK_BIG line 500'], stands: new RegExp(`\\[branch ${ids.C} force-returned \\(budget`) },
      { name: 'D (deadline)', from: at.D, markers: ['MARK_D1'], stands: new RegExp(`\\[branch ${ids.D} force-returned \\(`) },
      { name: 'E', from: at.E, markers: ['MARK_E1'], summary: 'SUMMARY_E', stands: returned(ids.E) },
    ];
    console.log(`--- returns at client requests ${JSON.stringify(at)}`);
    // Sanity: the unfolded transcript still holds every branch's work.
    for (const b of branches) for (const m of b.markers.filter((x) => x.startsWith('MARK_'))) {
      assert.ok(JSON.stringify(clientBodies.at(-1)).includes(m), `the client's transcript holds ${m}`);
    }
    saveCorpus('claude-code', [
      { name: 'long-before-first-branch', body: modelBodies[1] },
      { name: 'long-client-return-a', body: clientBodies[at.A] },
      { name: 'long-client-typed-in-b', body: clientBodies[at.B] },
      { name: 'long-client-budget-c', body: clientBodies[at.C] },
      { name: 'long-model-last', body: modelBodies.at(-1) },
    ], [[ws, '/work/repo'], [dataDir, '/data']]);

    const failures = foldFailures(branches, modelBodies);
    // What the user typed stays, in order, on every request after it arrived, but in the isolated
    // views of the branches opened after B (issue 33: a view shows the conversation's opening and
    // the branch's own work, not the parent's history).
    const typedAt = firstResultOf(clientBodies, (name, input) => name === 'Bash' && String(input.command).startsWith('sleep 1'));
    const inLaterView = (body) => [ids.C, ids.D, ids.E].some((id) => body.messages.some((m) => m.role === 'user' &&
      messageText(m).startsWith(`${kViewOpening}${id}`)));
    for (let j = typedAt; j >= 0 && j < modelBodies.length; j++) {
      if (inLaterView(modelBodies[j])) continue;
      if (!JSON.stringify(modelBodies[j].messages).includes(typed)) failures.push(`request ${j} lost the message the user typed inside B`);
    }
    // Every branch ran in its isolated view (the default), and Claude Code's own messages (its
    // mid-conversation system messages, reminders) reached the model inside those views.
    const viewOf = (body) => body.messages.find((m) => m.role === 'user' && messageText(m).startsWith(kViewOpening));
    const inViews = modelBodies.filter(viewOf);
    const viewsWithSystem = inViews.filter((b) => b.messages.some((m) => m.role === 'system')).length;
    console.log(`--- ${inViews.length} of ${modelBodies.length} requests in a branch's isolated view, ` +
      `${viewsWithSystem} of them with Claude Code's system messages`);
    for (const [key, id] of Object.entries(ids)) {
      assert.ok(inViews.some((b) => messageText(viewOf(b)).startsWith(`${kViewOpening}${id}`)), `branch ${key} ran in its view`);
    }
    assert.ok(viewsWithSystem > 0, 'Claude Code\'s system messages reached the model inside a view');
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
