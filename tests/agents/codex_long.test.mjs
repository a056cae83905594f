// A long Codex session through contextd (issue 31): the pinned Codex CLI with contextd as its model
// gateway (Responses API, forwarded to the scripted double) and as its MCP server, for more than 40
// model requests: a parallel pair of shell calls, a branch with a nested branch inside it, a
// sibling branch with branch_status beside a shell call, a run of consecutive shell calls, a
// branch force-returned by its budget (a big shell output), one force-returned by its deadline,
// and Codex's own compaction (model_auto_compact_token_limit, forced by the usage the double
// reports) while a branch is open, which then returns. We assert on what the double received:
// every request accepted (the reasoning binding held), every branch folded from the request that
// carried its return (or its force-return) onward and byte for byte the same after, nothing folded
// skipped, the branch open across the compaction kept its tokens_used, and the last request a
// fraction of the session unfolded. Prints requests, folds, skips by reason, sizes.
//
// Run: CONTEXTD_BINARY=build/debug/src/cli/contextd node --test tests/agents/codex_long.test.mjs
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanup, tempDataDir, BINARY } from '../e2e/harness.mjs';
import { codexAvailable, CODEX_BINARY, describeRun } from './lib/codex.mjs';
import { summaryItem } from './lib/responses_double.mjs';
import { tokensUsedIn } from './lib/long_session.mjs';
import { runCodexSession, stepKit, scriptBuilders, checkFolds, sizes, metric, skippedByReason, approxTokens, viewOpeningText } from './lib/codex_session.mjs';

const skip = !codexAvailable() ? `the Codex CLI is not installed at ${CODEX_BINARY} (run scripts/install-deps.sh)`
  : !existsSync(BINARY) ? `contextd is not built at ${BINARY}` : false;

// A file of distinct lines, about `lines * 12` tokens, with a marker only it holds.
const fileText = (name, lines) => Array.from({ length: lines },
  (_, n) => `${name} line ${n}: def handler_${name}_${n}(request): return render("${name}_${n}.html")`).join('\n');
const branchId = (text) => text.match(/br_[0-9a-f]{32}|br_[0-9A-Za-z]+/)?.[0] ?? null;
const kLimit = 200000;

function session() {
  const steps = [];
  let kit;
  const { add, shell, create, enter, ret } = scriptBuilders(steps, () => kit, branchId);

  shell('ls', 'ls');
  add(({ body, index }) => ({ calls: [kit.shell(body, index, 'f1', 'cat f1.txt'), kit.shell(body, index, 'f2', 'cat f2.txt')] }));
  create('A', { description: 'survey the handlers', prompt: 'read f3..f6 and report the handler names', budget: 30000 });
  enter('A', 'a3', 'cat f3.txt');
  create('A1', { description: 'look at f4 and f5', prompt: 'read f4 and f5', budget: 20000 });
  enter('A1', 'a4', 'cat f4.txt');
  shell('a5', 'cat f5.txt');
  ret('A1', 'f4 and f5 define handler_f4_* and handler_f5_*');
  shell('a6', 'cat f6.txt');
  ret('A', 'f3..f6 define handler_f3_* to handler_f6_*');
  for (let k = 0; k < 8; k++) shell(`run${k}`, k % 2 ? `wc -l f${7 + (k % 3)}.txt` : `head -c 400 f${7 + (k % 3)}.txt`);
  create('B', { description: 'check f8', prompt: 'read f8', budget: 20000 });
  enter('B', 'b8', 'cat f8.txt');
  add(({ body, index }) => ({ calls: [kit.call(body, index, 'statusB', 'branch_status', {}), kit.shell(body, index, 'b9', 'cat f9.txt')] }));
  ret('B', 'f8 and f9 hold handler_f8_* and handler_f9_*');
  create('C', { description: 'skim the big file', prompt: 'skim big.txt', budget: 2000 });
  enter('C', 'big', 'cat big.txt');
  shell('afterC', 'echo after-C');
  create('D', { description: 'a quick look', prompt: 'look at f10', timeout_seconds: 1 });
  enter('D', 'sleep', 'sleep 2; head -c 200 f10.txt');
  shell('afterD', 'echo after-D');
  create('E', { description: 'a branch open across the compaction', prompt: 'read f10 and f11', budget: 30000 });
  enter('E', 'e10', 'cat f10.txt');
  // branch_status inside E, and a usage over Codex's auto-compact limit: Codex compacts before
  // its next request.
  add(({ body, index }) => ({ calls: [kit.call(body, index, 'statusE1', 'branch_status', {})],
    usage: { input_tokens: kLimit * 2, output_tokens: 10 } }));
  add(({ body, index, s }) => {
    if (!s.outputs.statusE1?.present) kit.take(body, 'statusE1', index);   // no compaction came
    return { calls: [kit.call(body, index, 'statusE2', 'branch_status', { branch_id: s.vars.EId })] };
  });
  add(({ body, index }) => {
    kit.take(body, 'statusE2', index);
    return { calls: [kit.shell(body, index, 'e11', 'cat f11.txt')] };
  });
  ret('E', 'f10 and f11 hold handler_f10_* and handler_f11_*');
  for (let k = 0; k < 5; k++) shell(`tail${k}`, `echo tail-${k}`);
  add(() => ({ text: 'All handlers are surveyed.' }));

  const summarise = (s, body, index) => `Progress: surveyed f1..f9. Branch ${s.vars.EId} is open (budget 30000): ` +
    'continue inside it with branch_status, cat f11.txt, then branch_return.';
  const branches = {
    A: { createKey: 'createA', innerKeys: ['a3', 'createA1', 'a4', 'a5', 'retA1', 'a6'], returnKey: 'retA' },
    A1: { createKey: 'createA1', innerKeys: ['a4', 'a5'], returnKey: 'retA1', parent: 'A' },
    B: { createKey: 'createB', innerKeys: ['b8', 'statusB', 'b9'], returnKey: 'retB' },
    C: { createKey: 'createC', innerKeys: ['big'], forced: true },
    D: { createKey: 'createD', innerKeys: ['sleep'], forced: true },
    E: { createKey: 'createE', innerKeys: ['e10', 'statusE1'], returnKey: 'retE', acrossCompaction: true },
  };
  return { steps, summarise, branches, setKit: (s) => { kit = stepKit(s); } };
}

test('a long Codex session through contextd: every branch folds, none skipped, a compaction with a branch open', { skip, timeout: 400000 }, async () => {
  const dataDir = tempDataDir();
  const workspace = mkdtempSync(join(tmpdir(), 'contextd-codex-long-ws-'));
  // Files read inside branches are big (≈3.6k tokens); the top level only reads small ones.
  for (let k = 1; k <= 11; k++) writeFileSync(join(workspace, `f${k}.txt`), `${fileText(`f${k}`, k <= 2 ? 20 : 300)}\n`);
  writeFileSync(join(workspace, 'big.txt'), `${fileText('big', 900)}\n`);
  const plan = session();
  let result;
  try {
    // The state is created inside runCodexSession; the kit needs it before the first step.
    const steps = [(ctx) => { plan.setKit(ctx.s); ctx.s.branches = plan.branches; return null; }, ...plan.steps];
    result = await runCodexSession({ dataDir, steps, summarise: plan.summarise, workspace, autoCompactLimit: kLimit,
      // Six branches in a few seconds: over the default 5/minute.
      contextdYaml: ['context_folding:', '  branch_creation_rate_limit: 60/minute'],
      prompt: 'Survey the handlers in f1..f11 using contextd branches.' });
  } finally {
    cleanup(workspace);
  }
  const { run, double, state: s, metrics } = result;
  try {
    if (process.env.CONTEXTD_AGENT_DUMP_DIR) {
      writeFileSync(join(process.env.CONTEXTD_AGENT_DUMP_DIR, 'codex-long-requests.json'),
        JSON.stringify(double.requests.map(({ rawBody, ...r }) => r), null, 1));
    }
    const dump = () => `${describeRun(run)}\n--- session ---\n${s.log.join('\n')}\n--- double problems ---\n` +
      `${JSON.stringify(double.problems).slice(0, 3000)}\n--- contextd ---\n${result.server.stderr().slice(-3000)}`;
    assert.ok(!run.timedOut && run.code === 0, dump());
    assert.equal(s.step, plan.steps.length + 1, `the session ran to its end\n${dump()}`);
    assert.deepEqual(run.proxyAttempts, []);

    // Every request was accepted: no reasoning item replayed behind a changed prefix, no 400.
    assert.deepEqual(double.problems, [], dump());
    assert.deepEqual(double.dropped, [], `no reasoning item dropped behind a changed prefix\n${dump()}`);
    assert.ok(double.turns.every((t) => !t.error), dump());
    const responses = double.responseRequests();
    assert.ok(responses.length >= 40, `at least 40 model requests, got ${responses.length}`);
    assert.equal(s.compactions.length, 1, `Codex compacted once\n${dump()}`);

    const { rows, problems } = checkFolds(double, s);
    const size = sizes(double, s, rows);
    // Codex's compaction replaces its history, folds and all; the request that compacts holds the
    // whole session until then, which is what the folds are measured on. The session unfolded is
    // that plus what came after the summary (unfolded: a lower bound, see sizes()).
    const atCompaction = sizes(double, s, rows, s.compactions[0]);
    const resumed = approxTokens(responses[s.compactions[0] + 1].json.input);
    const unfoldedSession = atCompaction.unfolded + (size.unfolded - resumed);
    const folds = metric(metrics, 'contextd_model_folds_total', { api: 'openai_responses' });
    const skipped = skippedByReason(metrics);
    console.log(`[codex long] ${size.requests} requests (${s.searches} tool searches, compaction at request ` +
      `${s.compactions}), folds ${folds}, skipped ${JSON.stringify(skipped)}; the compaction request ≈` +
      `${atCompaction.last} tokens vs ≥${atCompaction.unfolded} unfolded (ratio ` +
      `${(atCompaction.last / atCompaction.unfolded).toFixed(3)}); last request ≈${size.last} tokens vs the session ` +
      `unfolded ≥${unfoldedSession} (ratio ${(size.last / unfoldedSession).toFixed(3)}); largest ≈${size.largest} ` +
      `tokens (request ${size.largestAt})`);
    for (const r of rows) {
      console.log(`[codex long]   ${r.key} ${r.branch}: folded from request ${r.first} (return at ${r.expected ?? 'force'}): ` +
        `${(r.text ?? '').split('\n')[0]}`);
    }
    assert.deepEqual(problems, [], `folds as the contract says\n${dump()}`);
    // The one branch left whole is E: Codex's compaction dropped its create turn while it was open,
    // so its return has nothing to fold into (decision 0033: counted once as no_create).
    assert.deepEqual(skipped, { no_create: 1 }, 'no fold skipped but E\'s, returned after the compaction');
    assert.ok(folds >= 5, `contextd counted ${folds} folds`);

    // The branch open across the compaction: the compaction request is a summary request (no
    // tools), which contextd sends as the parent's view with E folded as it stands (issue 33: a
    // summary of E's isolated view alone would lose the parent's work), so it holds E's create,
    // the parent's work and none of E's; the request after it starts from Codex's summary (no
    // branch_create of E), and E kept what it had used.
    const compaction = responses[s.compactions[0]].json;
    assert.equal(viewOpeningText(compaction), null, 'the compaction request is not E\'s isolated view');
    assert.ok(compaction.input.some((it) => it.call_id === s.calls.createE.call_id), 'the compaction request holds E\'s create');
    assert.ok(JSON.stringify(compaction.input).includes('is open; its work so far is left out of this summary request'),
      'E stands folded as it is in the compaction request');
    assert.ok(!compaction.input.some((it) => it.call_id === s.calls.e10.call_id), 'E\'s own work is not in the compaction request');
    assert.ok(compaction.input.some((it) => it.call_id === s.calls.afterD.call_id), 'the parent\'s work is in the compaction request');
    const after = responses[s.compactions[0] + 1].json;
    assert.ok(summaryItem(after), 'the request after the compaction starts from the summary');
    assert.ok(!after.input.some((it) => it.call_id === s.calls.createE.call_id), 'the summary drops E\'s branch_create');
    const later = tokensUsedIn(s.outputs.statusE2.text, s.vars.EId);
    console.log(`[codex long] E tokens_used ${later} after the compaction`);
    assert.ok(Number.isFinite(later) && later > 0, `E keeps its budget across the compaction: ${s.outputs.statusE2.text.slice(0, 400)}`);

    // E's return after the compaction: its create turn is gone, so there is nothing to fold it
    // into; what it read after the summary stays (today neither folded nor counted as skipped).
    const lastBody = responses.at(-1).json;
    const eLeft = ['e11', 'statusE2'].filter((k) => lastBody.input.some((it) => it.call_id === s.calls[k]?.call_id));
    console.log(`[codex long] E returned after the compaction; its calls still in the last request: ${eLeft.join(', ') || 'none'}`);

    // Folding alone (before Codex's compaction) keeps the history a fraction of its unfolded size.
    assert.ok(atCompaction.last < atCompaction.unfolded / 2,
      `compaction request ≈${atCompaction.last} tokens, unfolded ≈${atCompaction.unfolded}`);
    assert.ok(size.last < unfoldedSession / 2, `last ≈${size.last} tokens, session unfolded ≈${unfoldedSession}`);
  } finally {
    await result.stop();
    cleanup(dataDir);
  }
});
