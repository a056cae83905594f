// Claude Code's own compaction through contextd (issue 31): the pinned Claude Code, fed over
// --input-format stream-json, runs through contextd's model gateway to the scripted double. A
// branch A is created, worked in and returned (contextd folds it); a branch B is created and is
// open when Claude Code compacts: by `/compact` typed while it is idle, or by auto-compact (a
// usage past the threshold reported by the double, CLAUDE_CODE_AUTO_COMPACT_WINDOW) inside B or on
// the very turn that creates B. The compaction request is an ordinary main request (same system
// and tools, the history, a last user message "CRITICAL: Respond with TEXT ONLY ..."), answered
// with a summary; the next request starts a new message list from it ("This session is being
// continued ...") followed by the last turn before the compaction, kept verbatim. Then B is worked
// in and returned. What the double received is checked: the compaction request carries A folded
// (what Claude Code summarises is the folded history); B's budget carries on across the compaction
// (tokens_used over /api/v1 and in branch_status) and its return succeeds; when B's create went
// with the compaction, contextd leaves the later requests as sent and counts B's return once as
// skipped (`no_create`); when the create is the kept turn, B folds from its return on. Every
// request is accepted but one: Claude Code's own first request after a compaction replays the
// kept turn's thinking block behind the new summary (refused with or without contextd), which is
// checked to be as Claude Code sent it. Prints requests, folds, skips by reason, and the
// compaction request against the same unfolded (what Claude Code sent, kept by the recorder).
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/compaction.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';
import { startClaudeStream, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { lastResult, branchIdIn, excerpt, exchangesOf } from './lib/transcript.mjs';
import { startChain, foldMetrics, firstResultOf, foldFailures, tokensOf, dumpSession, makeWorkspace, tokensUsedIn } from './lib/long_session.mjs';
import { BINARY, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const C = (tool) => `mcp__contextd__${tool}`;
const workspace = () => makeWorkspace('contextd-compact-ws', ['a1', 'a2', 'b1', 'b2']);

const bash = (command) => ({ name: 'Bash', input: { command, description: command.slice(0, 40) } });
const read = (ws, file) => ({ name: 'Read', input: { file_path: join(ws, file) } });
const idOf = (body) => branchIdIn(lastResult([body], 'branch_create').result);

// The text of the last user message of a request.
function lastUserText(body) {
  const m = [...(body.messages ?? [])].reverse().find((x) => x.role === 'user');
  if (!m) return '';
  return typeof m.content === 'string' ? m.content : m.content.map((b) => b.text ?? '').join('\n');
}
const kCompactPrompt = 'CRITICAL: Respond with TEXT ONLY';
const isCompaction = (body) => lastUserText(body).includes(kCompactPrompt);
const kContinued = 'This session is being continued';

// tokens_used of branch `id` in a branch_status result (its structuredContent as JSON, which
// Claude Code follows with its own reminders).

// The branch scope `id` as /api/v1 shows it ({status, tokens_used, ...}), or null.
async function branchScope(origin, id) {
  const sessions = await (await fetch(`${origin}/api/v1/sessions?limit=500`)).json();
  for (const s of sessions.sessions ?? sessions) {
    const scopes = await (await fetch(`${origin}/api/v1/sessions/${encodeURIComponent(s.root_id)}/scopes`)).json();
    const hit = (scopes.scopes ?? scopes).find?.((x) => x.id === id || x.branch?.branch_id === id);
    if (hit) return hit;
  }
  return null;
}

// One session through the chain. `mode`:
//   'command'      B open, Claude Code idle; the user types /compact, then "Go on" (the last turn
//                  before the compaction, kept verbatim after the summary, is the model's text)
//   'auto'         auto-compact inside B, mid tool loop: the double reports a usage past the
//                  threshold on the turn that calls branch_status in B (kept verbatim after the
//                  summary with its result: B's create turn is not)
//   'auto-create'  auto-compact on the turn that creates B: that turn and its result are the ones
//                  kept verbatim, so B's create survives the compaction
// Resolves with what the checks need; the caller stops nothing (done here).
async function runSession(mode) {
  const ws = workspace();
  const dataDir = tempDataDir();
  const ids = {};
  const api = {};
  let chain = null;
  const big = { input_tokens: 190000 };
  const snapshot = () => { api.before = branchScope(chain.origin, ids.B); };
  const steps = [
    { tools: [read(ws, 'notes.txt')] },
    { tools: [{ name: C('branch_create'), input: { description: 'survey a', prompt: 'Survey src/a*.txt', budget: 30000 } }] },
    (body) => { ids.A = idOf(body); return { tools: [read(ws, 'src/a1.txt'), bash('cat src/a2.txt')] }; },
    { tools: [bash('echo ECHO_A_WORK; wc -l src/a1.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A: the a files are fine' } }] },
    { tools: [bash('echo between branches')] },
    { tools: [{ name: C('branch_create'), input: { description: 'survey b', prompt: 'Survey src/b*.txt', budget: 30000 } }],
      ...(mode === 'auto-create' ? { usage: big } : {}) },
    (body) => { ids.B = idOf(body); return { tools: [read(ws, 'src/b1.txt')] }; },
    () => {
      if (mode === 'auto') snapshot();
      return { tools: [{ name: C('branch_status'), input: {} }], ...(mode === 'auto' ? { usage: big } : {}) };
    },
    ...(mode === 'command' ? [() => { snapshot(); return { text: `Pausing: branch ${ids.B} is still open.` }; }] : []),
    // After the compaction (and, for /compact, the user's "go on").
    { tools: [{ name: C('branch_status'), input: {} }] },
    { tools: [bash('cat src/b2.txt')] },
    () => {
      api.after = branchScope(chain.origin, ids.B);
      return { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_B: the b files are fine' } }] };
    },
    { tools: [bash('echo after b')] },
    { text: 'All done.' },
  ];
  let step = 0;
  const compactions = [];
  // Claude Code's compaction request is an ordinary main request: it is answered with a summary
  // wherever it comes, without using up a step.
  const dispatch = (body, double) => {
    if (isCompaction(body)) {
      compactions.push(double.requests.length - 1);
      return { text: `<analysis>The user surveyed the repository.</analysis>\n<summary>SUMMARY_COMPACT: branch A returned (SUMMARY_A); ` +
        `branch ${ids.B} is open (budget 30000): continue inside it, read src/b2.txt, then branch_return.</summary>` };
    }
    let turn = steps[step++];
    if (typeof turn === 'function') turn = turn(body, double);
    return turn ?? { text: 'Done.' };
  };
  const double = await startAnthropicDouble({ script: Array.from({ length: 40 }, () => dispatch) });
  try {
    // The compaction and the fold as the parent's history shows them (`branch_view: inherited`,
    // contextd before issue 33): a compaction inside an isolated branch view is
    // branch_view.test.mjs's.
    chain = await startChain({ double, dataDir, folding: ['  branch_view: inherited'] });
    const session = startClaudeStream({
      prompt: 'Survey this repository.', modelUrl: chain.modelUrl, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { url: chain.mcpUrl }), allowedTools: ['Read', 'Bash', 'mcp__contextd'],
      timeoutMs: 60000, followUps: mode === 'command' ? ['/compact', 'Go on with the survey.'] : [],
      // Claude Code takes the double's model for one with a far larger window: auto-compact
      // needs the usual one.
      env: mode === 'command' ? {} : { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '200000' },
    });
    const run = await session.done;
    dumpSession(`claude-compact-${mode}`, double, chain.recorder);
    const failWith = () => `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstderr: ${excerpt(run.stderr, 2000)}\n` +
      `double refused: ${JSON.stringify(double.refused, null, 1)}\nlast events: ${excerpt(JSON.stringify(run.events.slice(-3)), 2000)}`;
    assert.equal(run.code, 0, failWith());
    const modelBodies = double.mainRequests();
    const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
      Array.isArray(r.json?.tools) && r.json.tools.length > 0;
    const sent = chain.recorder.requests.filter(isMain).map((r) => r.json);
    const clientRaw = new Set(sent.map((b) => JSON.stringify(b)));
    // What Claude Code sent, less the requests the double refused (it plays no turn for those).
    const refusedBodies = double.refused.map((r) => JSON.parse(double.requests[r.index].raw));
    const refusedRaw = new Set(refusedBodies.map((b) => JSON.stringify(b)));
    const clientBodies = sent.filter((b) => !refusedRaw.has(JSON.stringify(b)));
    const at = {
      A: firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith('SUMMARY_A')),
      compaction: clientBodies.findIndex(isCompaction),
      B: firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith('SUMMARY_B')),
    };
    const result = {
      mode, ids, at, modelBodies, clientBodies, refusedBodies, refused: double.refused, compactions,
      stepsLeft: steps.length - step, same: (body) => clientRaw.has(JSON.stringify(body)),
      metrics: await foldMetrics(chain.origin),
      before: await api.before, after: await api.after, final: await branchScope(chain.origin, ids.B),
    };
    for (const [i, b] of modelBodies.entries()) {
      console.log(`--- ${mode} #${i}: ${b.messages.length} messages, ${tokensOf(b)} tokens (${tokensOf(clientBodies[i] ?? {})} as sent)` +
        `${result.same(b) ? '' : ', rewritten'}${i === at.compaction ? ', the compaction request' : ''}`);
    }
    console.log(`--- Claude Code, compaction by ${mode}: ${modelBodies.length} model requests (and ${double.refused.length} refused), ` +
      `${result.metrics.folds} folds, skipped ${JSON.stringify(result.metrics.skipped)}; compaction request #${at.compaction}: ` +
      `${tokensOf(modelBodies[at.compaction] ?? {})} tokens vs ${tokensOf(clientBodies[at.compaction] ?? {})} unfolded; ` +
      `returns at ${JSON.stringify(at)}; B tokens_used ${result.before?.branch?.tokens_used} before the compaction, ` +
      `${result.after?.branch?.tokens_used} after, ${result.final?.branch?.tokens_used} at its return`);
    return result;
  } finally {
    await double.close();
    await chain?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
}

// The checks every mode shares: the whole script ran through one compaction; the one refusal is
// Claude Code's own; the compaction request carries A folded; B kept its budget and returned.
function checkCommon(r) {
  const { at, ids, modelBodies, clientBodies } = r;
  assert.equal(r.stepsLeft, 0, 'the whole script ran');
  assert.equal(r.compactions.length, 1, 'one compaction request');
  assert.equal(clientBodies.length, modelBodies.length);
  assert.ok(at.A > 0 && at.A < at.compaction && at.compaction < at.B, `A returned before the compaction, B after: ${JSON.stringify(at)}`);

  // The double accepted every request but one, which Claude Code gets refused with or without
  // contextd in the way: after a compaction it keeps its last assistant turn verbatim behind the
  // summary, thinking block and all, so that block arrives behind a prefix it was not made on; it
  // then resends without thinking blocks. That request reached the double as Claude Code sent it
  // (pinned here: a later Claude Code that stops doing it makes this fail).
  assert.equal(r.refused.length, 1, `refused: ${JSON.stringify(r.refused)}`);
  assert.ok(r.same(r.refusedBodies[0]), `the refused request was rewritten by contextd: ${r.refused[0].message}`);
  assert.ok(JSON.stringify(r.refusedBodies[0].messages[0]).includes(kContinued), 'the refused request is the first after the compaction');
  assert.match(r.refused[0].message, /^messages\.1\.content\.0: .*bound to a different conversation/);

  // The compaction request carries A folded: what Claude Code summarises is the folded history.
  const compacted = modelBodies[at.compaction];
  const returnedA = new RegExp(`\\[branch ${ids.A} returned; \\d+ tokens folded away\\]`);
  const failures = foldFailures([
    { name: 'A, up to the compaction', from: at.A, markers: ['MARK_A1', 'MARK_A2', 'ECHO_A_WORK'], summary: 'SUMMARY_A', stands: returnedA },
  ], modelBodies.slice(0, at.compaction + 1));
  // After it, A's work is gone with the history; Claude Code re-attaches the files it read (A's
  // included) as reminders, but nothing else of A comes back.
  failures.push(...foldFailures([{ name: 'A, after the compaction', from: 0, markers: ['ECHO_A_WORK'] }], modelBodies.slice(at.compaction + 1)));
  assert.deepEqual(failures, []);
  assert.ok(JSON.stringify(clientBodies[at.compaction].messages).includes('MARK_A1'), 'Claude Code sent the compaction request unfolded');
  assert.ok(tokensOf(compacted) < tokensOf(clientBodies[at.compaction]), 'the compaction request is smaller than sent');
  for (let i = at.compaction + 1; i < modelBodies.length; i++) {
    const first = JSON.stringify(modelBodies[i].messages[0]);
    assert.ok(first.includes(kContinued) && first.includes('SUMMARY_COMPACT'), `request ${i} starts from the summary`);
  }

  // B's return succeeded, its tokens_used carried on across the compaction.
  assert.ok(r.after?.branch?.tokens_used > 0, `B tokens_used after the compaction: ${JSON.stringify(r.after)}`);
  assert.equal(r.final?.branch?.finish_reason, 'returned');
  assert.equal(r.final.summary, 'SUMMARY_B: the b files are fine');
  const returnB = exchangesOf(clientBodies[at.B], 'branch_return').at(-1);
  assert.ok(returnB && !returnB.isError && returnB.result.includes(ids.B), `B's return: ${excerpt(returnB?.result)}`);
}

// B's create turn went with the compaction: contextd leaves every later request as sent (A is no
// longer in them, B has nothing to fold into) and counts B's return once as no_create; B's
// tokens_used, over /api/v1 and in branch_status, did not reset.
function checkCreateGone(r) {
  const { at, ids, modelBodies } = r;
  assert.ok(JSON.stringify(modelBodies[at.compaction].messages).includes('MARK_B1'), 'B, still open, is whole in the compaction request');
  for (let i = at.compaction + 1; i < modelBodies.length; i++) {
    assert.ok(r.same(modelBodies[i]), `request ${i} reached the double as Claude Code sent it`);
    assert.equal(exchangesOf(modelBodies[i], 'branch_create').length, 0, `request ${i} holds no branch_create`);
  }
  assert.equal(r.before?.branch?.status, 'active');
  assert.ok(r.before.branch.tokens_used > 0);
  assert.ok(r.after.branch.tokens_used >= r.before.branch.tokens_used, 'tokens_used did not reset across the compaction');
  // What branch_status told the model, call by call (the first made before the compaction).
  const seen = new Map();
  for (const b of modelBodies) for (const e of exchangesOf(b, 'branch_status')) if (e.result !== null) seen.set(e.id, tokensUsedIn(e.result, ids.B));
  const statuses = [...seen.values()];
  console.log(`--- ${r.mode}: branch_status showed B at ${statuses.join(', ')} tokens`);
  assert.ok(statuses.length >= 2 && statuses[0] > 0 && statuses.every((t, k) => k === 0 || t >= statuses[k - 1]),
    `branch_status did not reset across the compaction: ${statuses.join(', ')}`);
  assert.equal(r.metrics.folds, 1, `${r.metrics.folds} folds`);
  assert.deepEqual(r.metrics.skipped, { no_create: 1 }, `skipped: ${JSON.stringify(r.metrics.skipped)}`);
}

test('Claude Code /compact with a branch open: the folded branch stays folded, the open one keeps its budget, its return is counted no_create', { skip: missing ?? false, timeout: 90000 }, async () => {
  const r = await runSession('command');
  checkCommon(r);
  checkCreateGone(r);
});

test('Claude Code auto-compact inside a branch: the same, mid tool loop', { skip: missing ?? false, timeout: 90000 }, async () => {
  const r = await runSession('auto');
  checkCommon(r);
  checkCreateGone(r);
});

test('Claude Code auto-compact on the turn that creates a branch: the create survives, the branch folds after the compaction', { skip: missing ?? false, timeout: 90000 }, async (t) => {
  const r = await runSession('auto-create');
  checkCommon(r);
  const { at, ids, modelBodies } = r;
  const returnedB = new RegExp(`\\[branch ${ids.B} returned; \\d+ tokens folded away\\]`);
  assert.deepEqual(foldFailures([{ name: 'B, after the compaction', from: at.B, markers: ['MARK_B1', 'MARK_B2'], summary: 'SUMMARY_B', stands: returnedB }], modelBodies), []);
  assert.equal(r.metrics.folds, 2, `${r.metrics.folds} folds`);
  assert.deepEqual(r.metrics.skipped, {}, `skipped: ${JSON.stringify(r.metrics.skipped)}`);
  // After the compaction Claude Code re-attaches its session context (environment, MCP server
  // instructions, deferred tools, skills, the files it had read) inside the kept turn's tool
  // result, here B's create: the fold carries them on after B's summary (decision 0033).
  await t.test('the context Claude Code re-attached after the compaction outlives B\'s fold', () => {
    const kept = ['# Environment', '# MCP Server Instructions', 'deferred tools are now available'];
    const sentLast = JSON.stringify(r.clientBodies.at(-1).messages);
    const gotLast = JSON.stringify(modelBodies.at(-1).messages);
    for (const k of kept) assert.ok(sentLast.includes(k), `Claude Code re-attached ${k}`);
    assert.deepEqual(kept.filter((k) => !gotLast.includes(k)), [], 'lost with B\'s fold');
  });
});
