// Claude Code's own compaction through contextd (issue 31): the pinned Claude Code, fed over
// --input-format stream-json, runs through contextd's model gateway to the scripted double. A
// branch A is created, worked in and returned (contextd folds it); a branch B is created and worked
// in, and is still open when the user types `/compact`. Claude Code then sends an ordinary main
// request (same system and tools, the history, and a last user message "CRITICAL: Respond with
// TEXT ONLY ..."), which the double answers with a summary; its next request starts a new message
// list from that summary ("This session is being continued ..."). The user asks it to go on; it
// works in B again and returns it. What the double received is checked: every request accepted
// (the thinking signatures bound to their prefixes, the pairing); the compaction request carries
// A folded (A's work gone, its summary there), so what contextd folded stays folded in what the
// client's summary is made from; the requests after it start from the summary; B keeps its budget
// across the compaction (tokens_used over /api/v1 and in branch_status does not reset) and its
// return succeeds; that return, whose create turn the client compacted away, is counted once as a
// skip with reason `no_create`. Prints requests, folds, skips by reason, and the compaction
// request against the same request unfolded (what Claude Code sent, kept by the recorder).
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/compaction.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicDouble } from './lib/anthropic_double.mjs';
import { startClaudeStream, writeMcpConfig, claudeMissing } from './lib/claude.mjs';
import { lastResult, branchIdIn, excerpt, exchangesOf } from './lib/transcript.mjs';
import { startChain, foldMetrics, firstResultOf, foldFailures, tokensOf, dumpSession } from './lib/long_session.mjs';
import { BINARY, cleanup, tempDataDir } from '../e2e/harness.mjs';

const missing = claudeMissing() ?? (existsSync(BINARY) ? null : `contextd is not built at ${BINARY}`);
const C = (tool) => `mcp__contextd__${tool}`;
const fileOf = (marker, lines) => Array.from({ length: lines }, (_, i) => `${marker} line ${i}: some words about the code base`).join('\n') + '\n';

function workspace() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-compact-ws-')));
  mkdirSync(join(ws, 'src'));
  writeFileSync(join(ws, 'notes.txt'), fileOf('NOTES_TOP', 20));
  for (const f of ['a1', 'a2', 'b1', 'b2']) writeFileSync(join(ws, 'src', `${f}.txt`), fileOf(`MARK_${f.toUpperCase()}`, 60));
  return ws;
}

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
function statusTokens(text, id) {
  let status;
  try { status = JSON.parse(String(text).slice(text.indexOf('{'), text.lastIndexOf('}') + 1)); } catch { return NaN; }
  const find = (list) => {
    for (const b of list ?? []) {
      if (b.branch_id === id) return b;
      const hit = find(b.children);
      if (hit) return hit;
    }
    return null;
  };
  return find(status.branches)?.tokens_used ?? (status.branch_id === id ? status.tokens_used : NaN);
}

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

test('Claude Code /compact through the gateway: a folded branch stays folded, an open one keeps its budget', { skip: missing ?? false, timeout: 120000 }, async () => {
  const ws = workspace();
  const dataDir = tempDataDir();
  const ids = {};
  const api = {};
  let chain = null;
  const steps = [
    { tools: [read(ws, 'notes.txt')] },
    { tools: [{ name: C('branch_create'), input: { description: 'survey a', prompt: 'Survey src/a*.txt', budget: 30000 } }] },
    (body) => { ids.A = idOf(body); return { tools: [read(ws, 'src/a1.txt'), bash('cat src/a2.txt')] }; },
    { tools: [bash('echo ECHO_A_WORK; wc -l src/a1.txt')] },
    { tools: [{ name: C('branch_return'), input: { message: 'SUMMARY_A: the a files are fine' } }] },
    { tools: [bash('echo between branches')] },
    { tools: [{ name: C('branch_create'), input: { description: 'survey b', prompt: 'Survey src/b*.txt', budget: 30000 } }] },
    (body) => { ids.B = idOf(body); return { tools: [read(ws, 'src/b1.txt')] }; },
    { tools: [{ name: C('branch_status'), input: {} }] },
    () => {
      api.before = branchScope(chain.origin, ids.B);
      return { text: `Pausing: branch ${ids.B} is still open.` };
    },
    // After /compact and the user's "go on" (the summary below tells the model where it was).
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
    chain = await startChain({ double, dataDir });
    const session = startClaudeStream({
      prompt: 'Survey this repository.', modelUrl: chain.modelUrl, cwd: ws,
      mcpConfig: writeMcpConfig(ws, { url: chain.mcpUrl }), allowedTools: ['Read', 'Bash', 'mcp__contextd'],
      timeoutMs: 90000, followUps: ['/compact', 'Go on with the survey.'],
    });
    const run = await session.done;
    dumpSession('claude-compact', double, chain.recorder);
    const failWith = () => `claude exited ${run.code} (${run.signal ?? 'no signal'})\nstderr: ${excerpt(run.stderr, 2000)}\n` +
      `double refused: ${JSON.stringify(double.refused, null, 1)}\nlast events: ${excerpt(JSON.stringify(run.events.slice(-3)), 2000)}`;
    assert.equal(run.code, 0, failWith());
    const modelBodies = double.mainRequests();
    const isMain = (r) => r.method === 'POST' && r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
      Array.isArray(r.json?.tools) && r.json.tools.length > 0;
    const sent = chain.recorder.requests.filter(isMain).map((r) => r.json);
    const metrics = await foldMetrics(chain.origin);
    const clientRaw = new Set(sent.map((b) => JSON.stringify(b)));
    const same = (body) => clientRaw.has(JSON.stringify(body));
    // What Claude Code sent, less the requests the double refused (it plays no turn for those).
    const refusedRaw = new Set(double.refused.map((r) => JSON.stringify(JSON.parse(double.requests[r.index].raw))));
    const clientBodies = sent.filter((b) => !refusedRaw.has(JSON.stringify(b)));
    const at = {
      A: firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith('SUMMARY_A')),
      compaction: clientBodies.findIndex(isCompaction),
      B: firstResultOf(clientBodies, (name, input) => name.endsWith('branch_return') && String(input.message).startsWith('SUMMARY_B')),
    };
    for (const [i, b] of modelBodies.entries()) {
      console.log(`--- #${i}: ${b.messages.length} messages, ${tokensOf(b)} tokens (${tokensOf(clientBodies[i] ?? {})} as sent)` +
        `${same(b) ? '' : ', rewritten'}${i === at.compaction ? ', the compaction request' : ''}`);
    }
    const compacted = modelBodies[at.compaction];
    const compactedAsSent = clientBodies[at.compaction];
    console.log(`--- Claude Code /compact: ${modelBodies.length} model requests, ${metrics.folds} folds, skipped ${JSON.stringify(metrics.skipped)}; ` +
      `compaction request #${at.compaction}: ${tokensOf(compacted ?? {})} tokens vs ${tokensOf(compactedAsSent ?? {})} unfolded; ` +
      `returns at ${JSON.stringify(at)}; refused ${JSON.stringify(double.refused)}`);
    assert.equal(step, steps.length, 'the whole script ran');
    assert.equal(compactions.length, 1, 'one compaction request');
    assert.equal(clientBodies.length, modelBodies.length);
    assert.ok(at.A > 0 && at.A < at.compaction && at.compaction < at.B, `A returned before the compaction, B after: ${JSON.stringify(at)}`);

    // The double accepted every request but one, which Claude Code gets refused with or without
    // contextd in the way: after the compaction it keeps its last assistant turn verbatim behind
    // the summary, thinking block and all, so that block arrives behind a prefix it was not made
    // on; it then resends without thinking blocks. That request reached the double as Claude Code
    // sent it (pinned here: a later Claude Code that stops doing it makes this fail).
    const refusedBodies = double.refused.map((r) => JSON.parse(double.requests[r.index].raw));
    assert.equal(double.refused.length, 1, `refused: ${JSON.stringify(double.refused)}`);
    for (const [k, r] of double.refused.entries()) {
      assert.ok(same(refusedBodies[k]), `refused request ${r.index} was rewritten by contextd: ${r.message}`);
      assert.ok(JSON.stringify(refusedBodies[k].messages[0]).includes(kContinued), `refused request ${r.index} is not the first after the compaction`);
      assert.match(r.message, /^messages\.1\.content\.0: .*bound to a different conversation/);
    }

    // The compaction request carries A folded: what Claude Code summarises is the folded history.
    const returnedA = new RegExp(`\\[branch ${ids.A} returned; \\d+ tokens folded away\\]`);
    const failures = foldFailures([
      { name: 'A, up to the compaction', from: at.A, markers: ['MARK_A1', 'MARK_A2', 'ECHO_A_WORK'], summary: 'SUMMARY_A', stands: returnedA },
    ], modelBodies.slice(0, at.compaction + 1));
    // After it, A's work is gone with the history; Claude Code re-attaches the files it read (A's
    // included) as reminders, but nothing else of A comes back.
    failures.push(...foldFailures([{ name: 'A, after the compaction', from: 0, markers: ['ECHO_A_WORK'] }], modelBodies.slice(at.compaction + 1)));
    assert.deepEqual(failures, []);
    assert.ok(JSON.stringify(compactedAsSent.messages).includes('MARK_A1'), 'Claude Code sent the compaction request unfolded');
    assert.ok(JSON.stringify(compacted.messages).includes('MARK_B1'), 'B, still open, is whole in the compaction request');
    assert.ok(tokensOf(compacted) < tokensOf(compactedAsSent), 'the compaction request is smaller than sent');

    // The requests after it start from the summary, and contextd leaves them as sent: A is no
    // longer in them and B's create turn was compacted away, so there is nothing to fold.
    for (let i = at.compaction + 1; i < modelBodies.length; i++) {
      const b = modelBodies[i];
      const first = JSON.stringify(b.messages[0]);
      assert.ok(first.includes(kContinued) && first.includes('SUMMARY_COMPACT'), `request ${i} starts from the summary`);
      assert.ok(same(b), `request ${i} reached the double as Claude Code sent it`);
      assert.equal(exchangesOf(b, 'branch_create').length, 0, `request ${i} holds no branch_create`);
    }

    // B kept its budget across the compaction, and its return succeeded.
    const before = await api.before;
    const after = await api.after;
    const final = await branchScope(chain.origin, ids.B);
    console.log(`--- B tokens_used ${before?.branch?.tokens_used} before the compaction, ${after?.branch?.tokens_used} after, ` +
      `${final?.branch?.tokens_used} at its return (${final?.status}, ${final?.branch?.finish_reason})`);
    assert.equal(before?.branch?.status, 'active');
    assert.ok(before.branch.tokens_used > 0);
    assert.ok(after?.branch?.tokens_used > before.branch.tokens_used, 'tokens_used did not reset across the compaction');
    assert.equal(final?.branch?.finish_reason, 'returned');
    assert.equal(final.summary, 'SUMMARY_B: the b files are fine');
    const statuses = exchangesOf(modelBodies.at(-1), 'branch_status').map((e) => statusTokens(e.result, ids.B));
    const statusBefore = statusTokens(exchangesOf(modelBodies[at.compaction], 'branch_status').at(-1)?.result, ids.B);
    console.log(`--- branch_status showed B at ${statusBefore} tokens before the compaction, ${statuses.join(', ')} after`);
    assert.ok(statusBefore > 0 && statuses.length === 1 && statuses[0] >= statusBefore, 'branch_status after the compaction did not reset');
    const returnB = exchangesOf(modelBodies[at.B], 'branch_return').at(-1);
    assert.ok(returnB && !returnB.isError && returnB.result.includes(ids.B), `B's return: ${excerpt(returnB?.result)}`);

    // One fold (A); B's return, its create turn compacted away, is reported once as no_create.
    assert.equal(metrics.folds, 1, `${metrics.folds} folds`);
    assert.deepEqual(metrics.skipped, { no_create: 1 }, `skipped: ${JSON.stringify(metrics.skipped)}`);
  } finally {
    await double.close();
    await chain?.stop();
    cleanup(dataDir);
    cleanup(ws);
  }
});
