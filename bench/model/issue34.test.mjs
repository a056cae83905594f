// Tests of bench/model's issue 34 parts (node --test bench/model/): the claude-code form's session
// boundary (the model's final answer, then the next task as its own user message), the config of
// the auto-fold-remove / -wait / -off variants, the issue 34 report, and (with a contextd binary)
// the three modes end to end against the caching double's thinking rules.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { loadO200k } from './caching_double.mjs';
import { runOf, conversationPlan, FINAL_THOUGHT, AUTO_FOLD_THINKING } from './conversation.mjs';
import { playConversation, configYaml, contextdOptions, AUTO_FOLD_DEFAULTS, AutoFoldMissing } from './run.mjs';
import { summarize34, markdown34 } from './issue34.mjs';

const root = new URL('../..', import.meta.url).pathname;
const BINARY = process.env.CONTEXTD_BINARY ??
  [`${root}build/release/src/cli/contextd`, `${root}build/debug/src/cli/contextd`].find((p) => existsSync(p));
const tokens = (() => { try { return loadO200k(); } catch { return null; } })();

// A recorded run of `n` greps with long outputs, ending with the submit command.
function trajectory(id, n = 6, lines = 120) {
  const steps = [];
  for (let i = 0; i < n; i++) {
    const command = i === n - 1 ? 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached' : `grep -n f${i} src/${id}.py`;
    steps.push({ role: 'assistant', tool_name: 'grep', args: { command }, content: `THOUGHT: look for f${i} in ${id}\n\n\`\`\`bash\n${command}\n\`\`\`` });
    steps.push({ role: 'tool', tool_name: 'grep', args: null, content: `${i}: def f${i}_${id}(): return ${i}\n`.repeat(lines) });
  }
  return { id, task: `Fix the bug in ${id}.`, steps, meta: { instance_id: id } };
}

const kinds = (turns) => turns.map((t) => (t.final ? 'final' : t.actions.map((a) => a.kind).join('+') || 'text'));

test('the session boundary: minimal form a user text after the results; claude-code form a final answer, then the task', { skip: !tokens && 'tools/npm/tokens is not installed' }, () => {
  const runs = [runOf(trajectory('t1', 3)), runOf(trajectory('t2', 3))];
  const text = conversationPlan(tokens.enc, runs, 'direct');
  assert.deepEqual(kinds(text.turns), ['bash', 'bash', 'bash', 'bash', 'bash', 'bash']);
  assert.equal(text.turns[2].nextTask, 'Fix the bug in t2.');
  const answer = conversationPlan(tokens.enc, runs, 'direct', { boundary: 'answer' });
  assert.deepEqual(kinds(answer.turns), ['bash', 'bash', 'bash', 'final', 'bash', 'bash', 'bash']);
  assert.equal(answer.turns[2].nextTask, undefined);
  assert.deepEqual(answer.turns[3], { final: true, thinking: FINAL_THOUGHT, text: 'Done: t1.', actions: [], nextTask: 'Fix the bug in t2.' });
  // A single run has no boundary.
  assert.deepEqual(kinds(conversationPlan(tokens.enc, runs.slice(0, 1), 'direct', { boundary: 'answer' }).turns), ['bash', 'bash', 'bash']);
  // Every variant gets the same boundary (branches too).
  assert.equal(kinds(conversationPlan(tokens.enc, runs, 'create-first-turn', { boundary: 'answer' }).turns).filter((k) => k === 'final').length, 1);
});

const lastUser = (messages) => messages.findLast((m) => m.role !== 'system');

test('claude-code form: a run ends with a thinking block and a text answer, the next task is a new user message; every request valid', { skip: !tokens && 'tools/npm/tokens is not installed' }, async () => {
  const runs = [runOf(trajectory('t1')), runOf(trajectory('t2'))];
  const memo = new Map();
  for (const [variant, trigger] of [['direct', 100000], ['clear-tool-uses', 3000]]) {
    const seen = [];
    const r = await playConversation({
      opts: { api: 'anthropic', form: 'claude-code', trigger }, enc: tokens.enc, count: tokens.count, memo, runs, variant,
      conversationId: 'c34', observe: (x) => seen.push(x),
    });
    assert.equal(r.requests, 13, variant);
    assert.deepEqual([r.refused, r.degraded, r.thinking_dropped, r.thinking_invalid_requests], [0, 0, 0, 0], variant);
    // Request 6 carries run 1's last results (a tool loop) and is answered by the final answer.
    const atEnd = seen[6];
    assert.ok(lastUser(atEnd.sent.messages).content.every((b) => b.type === 'tool_result'), variant);
    assert.deepEqual(atEnd.reply.map((b) => b.type), ['thinking', 'text']);
    assert.equal(atEnd.reply[1].text, 'Done: t1.');
    assert.notEqual(atEnd.reply[0].signature, 'E'.repeat(344), 'the double signed the final answer\'s thinking');
    // Request 7: the answer, then the task as its own user message (no tool_result in it).
    const next = seen[7].sent.messages;
    const at = next.findLastIndex((m) => m.role === 'assistant');
    assert.deepEqual(next[at].content.map((b) => b.type), ['thinking', 'text']);
    assert.deepEqual(next.slice(at + 1).map((m) => m.role), ['user']);
    assert.deepEqual(next[at + 1].content.map((b) => [b.type, b.text]), [['text', 'Fix the bug in t2.']]);
    if (variant === 'clear-tool-uses') assert.ok(r.cleared > 0, 'the trigger was passed');
  }
});

test('the auto-fold variants\' config: thinking per variant, expected_requests only when given', () => {
  const settings = { ...AUTO_FOLD_DEFAULTS, trigger: 30000 };
  for (const [variant, mode] of Object.entries(AUTO_FOLD_THINKING)) {
    const o = contextdOptions(variant, settings);
    assert.equal(o.autoFold.thinking, mode);
    const yaml = configYaml('http://127.0.0.1:9', o);
    assert.match(yaml, new RegExp(`model_gateway:\\n {2}anthropic:\\n {4}base_url: http://127.0.0.1:9\\n {2}auto_fold:\\n {4}enabled: true\\n {4}trigger_tokens: 30000\\n` +
      ` {4}keep: 3\\n {4}min_result_tokens: 200\\n {4}clear_at_least: 20000\\n {4}thinking: ${mode}\\n$`));
    assert.doesNotMatch(yaml, /expected_requests/);
  }
  assert.deepEqual(Object.keys(AUTO_FOLD_THINKING), ['auto-fold-remove', 'auto-fold-wait', 'auto-fold-off']);
  // The issue 20 variant keeps contextd's default mode.
  assert.doesNotMatch(configYaml('http://127.0.0.1:9', contextdOptions('auto-fold', settings)), /thinking/);
  assert.match(configYaml('http://127.0.0.1:9', contextdOptions('auto-fold-wait', { ...settings, expectedRequests: 40 })),
    / {4}thinking: wait\n {4}expected_requests: 40\n$/);
  assert.match(configYaml('http://127.0.0.1:9', contextdOptions('auto-fold', { ...settings, expectedRequests: 0 })), / {4}expected_requests: 0\n$/);
  assert.equal(contextdOptions('direct', settings).autoFold, null);
  assert.equal(contextdOptions('contextd-nofold', settings).autoFold, null);
});

// A session row's variant numbers (the fields summarize34 reads).
const numbers = (cost, peak, extra = {}) => ({ requests: 10, input_sum: cost * 5, input_peak: peak, cost, refused: 0, ...extra });

test('the issue 34 report: the sessions that pass the trigger, against direct and clear-tool-uses, targets checked', () => {
  const rows = [
    { id: 's01: a + b', variants: { direct: numbers(1000, 150000), 'clear-tool-uses': numbers(2000, 99000),
      'auto-fold-remove': numbers(600, 110000, { auto_fold_outcomes: { folded: 2, tool_loop: 30 }, auto_folds: 40, thinking_removed: 12, thinking_removed_tokens: 900 }),
      'auto-fold-off': numbers(1010, 150500, { auto_fold_outcomes: { thinking: 20 } }) } },
    { id: 's02: c + d', variants: { direct: numbers(500, 80000), 'clear-tool-uses': numbers(500, 80000),
      'auto-fold-remove': numbers(500, 80000, { auto_fold_outcomes: { below_trigger: 9 } }),
      'auto-fold-off': numbers(505, 80400, { degraded: 1, thinking_invalid_requests: 1 }) } },
  ];
  const variants = ['direct', 'clear-tool-uses', 'auto-fold-remove', 'auto-fold-off'];
  const s = summarize34(rows, variants, { trigger: 100000 });
  assert.deepEqual(s.over_trigger, ['s01: a + b']);
  const remove = s.variants['auto-fold-remove'];
  assert.equal(remove.thinking, 'remove');
  assert.equal(remove.over.cost_saved_pct, 40);
  assert.equal(remove.over.cost_saved_vs_clear_pct, 70);
  assert.ok(Math.abs(remove.all.cost_saved_pct - 100 * (1 - 1100 / 1500)) < 1e-9);
  assert.deepEqual(remove.counters.outcomes, { folded: 2, tool_loop: 30, below_trigger: 9 });
  assert.deepEqual(remove.targets, { cost_saved_over_trigger: true, no_session_costlier: true, no_request_refused: true, no_request_degraded: true });
  const off = s.variants['auto-fold-off'];
  assert.deepEqual(off.targets, { cost_saved_over_trigger: false, no_session_costlier: false, no_request_refused: true, no_request_degraded: false });
  assert.equal(off.all.sessions_costlier, 2);
  assert.equal(s.variants['clear-tool-uses'].targets, undefined);
  const md = markdown34(rows, s);
  assert.match(md, /### Issue 34: auto-fold under thinking/);
  assert.match(md, /1 of 2 sessions pass the trigger/);
  assert.match(md, /\| auto-fold-remove \| remove \| 20 \| 5,500 \| 110,000 \| 1,100 \| 26\.7% \|/);
  assert.match(md, /\| auto-fold-remove \| remove \| 2 \| 30 \| 0 \| 0 \| 0 \| 9 \| 0 \| 40 \| 12 \/ 900 \| 0 \| 0 \| 0 \| cost_saved_over_trigger PASS/);
  assert.match(md, /\| auto-fold-off \| off \|.*no_request_degraded \*\*FAIL\*\* \|/);
  assert.match(md, /\| s01 \| yes \| 1,000 \/ 150,000 \|/);
  // Without direct there is nothing to compare; without an auto-fold variant no section.
  assert.equal(summarize34(rows, ['clear-tool-uses']), null);
  assert.equal(markdown34(rows, summarize34(rows, ['direct', 'clear-tool-uses'])), '');
});

test('issue 34 end to end: auto-fold remove folds at the new user turn and removes the thinking after it; wait and off fold nothing; every request valid', { skip: (!BINARY && 'no contextd binary') || (!tokens && 'tools/npm/tokens is not installed'), timeout: 180000 }, async (t) => {
  const runs = [runOf(trajectory('t1', 8, 200)), runOf(trajectory('t2', 8, 200))];
  const memo = new Map();
  // Low settings so that the 2-run session passes the trigger and a step has enough to fold.
  const opts = { binary: BINARY, api: 'anthropic', form: 'claude-code', trigger: 8000, keep: 2, minResult: 200, clearAtLeast: 3000 };
  const play = (variant, observe = null) => playConversation({ opts, enc: tokens.enc, count: tokens.count, memo, runs, variant, conversationId: 'e34', observe });
  const seen = [];
  let remove;
  try {
    remove = await play('auto-fold-remove', (x) => seen.push(x));
  } catch (e) {
    if (e instanceof AutoFoldMissing) { t.skip(`a build before issue 34: ${e.message.split('\n')[0]}`); return; }
    throw e;
  }
  const direct = await play('direct');
  const wait = await play('auto-fold-wait');
  const off = await play('auto-fold-off');
  for (const [name, r] of Object.entries({ remove, wait, off })) {
    assert.equal(r.requests, 17, name);
    assert.deepEqual([r.refused, r.degraded, r.thinking_dropped, r.thinking_invalid_requests, r.fallbacks], [0, 0, 0, 0, 0], name);
  }
  // Inside run 1 every request is a tool loop: remove waits; at run 2's task it folds.
  assert.ok(remove.auto_fold_outcomes.tool_loop > 0, JSON.stringify(remove.auto_fold_outcomes));
  assert.ok(remove.auto_fold_outcomes.folded >= 1, JSON.stringify(remove.auto_fold_outcomes));
  assert.ok(remove.auto_folds > 0 && remove.thinking_removed > 0 && remove.thinking_removed_tokens > 0,
    JSON.stringify({ auto_folds: remove.auto_folds, thinking_removed: remove.thinking_removed }));
  const first = seen.findIndex((x) => JSON.stringify(x.forwarded?.messages ?? []).includes('[contextd: '));
  assert.ok(first >= 0, 'a forwarded request carries a handle');
  assert.deepEqual(lastUser(seen[first].sent.messages).content.map((b) => b.type), ['text'], 'the first fold is at a new user turn');
  assert.ok(remove.input_peak < direct.input_peak, `${remove.input_peak} vs ${direct.input_peak}`);
  for (const [name, r] of Object.entries({ wait, off })) {
    assert.equal(r.auto_fold_outcomes.folded ?? 0, 0, name);
    assert.equal(r.thinking_removed, 0, name);
  }
});
