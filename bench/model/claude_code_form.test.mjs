// Tests of bench/model's claude-code form (node --test bench/model/): the pinned capture's shape,
// Claude Code's tool order and nudge cadence as capture_claude_code.mjs observed them, and a
// conversation played in that form against the caching double.
import test from 'node:test';
import assert from 'node:assert/strict';
import { loadO200k, validate, requestBlocks } from './caching_double.mjs';
import { runOf } from './conversation.mjs';
import { playConversation } from './run.mjs';
import {
  claudeCodePrefix, claudeCodeTools, environmentText, openingMessages, SilentTurns, claudeCodeRequestBody, SILENT_TURN_REMINDER,
} from './claude_code_form.mjs';

const tokens = (() => { try { return loadO200k(); } catch { return null; } })();

test('the pinned capture: Claude Code 2.1.332, no temp paths, breakpoints on two system blocks', () => {
  const p = claudeCodePrefix();
  assert.equal(p.claude_code_version, '2.1.332');
  const text = JSON.stringify(p);
  assert.doesNotMatch(text, /\/tmp\/|contextd-cc-|sk-ant-|device_id/);
  assert.deepEqual(p.system.map((b) => !!b.cache_control), [false, true, true]);
  assert.ok(p.tools.some((t) => t.name === 'Bash'));
  assert.deepEqual(p.request.context_management, { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] });
  assert.equal(p.request.thinking.type, 'adaptive');
  assert.match(p.environment, /Primary working directory: \/testbed/);
});

test('MCP tools sort in among the built-ins, DeferredToolPlaceholder stays before the last (as captured)', () => {
  const p = claudeCodePrefix();
  assert.deepEqual(claudeCodeTools(p).map((t) => t.name), p.tools.map((t) => t.name));
  const mcp = ['branch_create', 'branch_return', 'branch_status'].map((n) => ({ name: `mcp__contextd__${n}`, input_schema: { type: 'object' } }));
  assert.deepEqual(claudeCodeTools(p, mcp).map((t) => t.name).slice(-5),
    ['Write', 'mcp__contextd__branch_create', 'mcp__contextd__branch_return', 'DeferredToolPlaceholder', 'mcp__contextd__branch_status']);
});

test('the environment message takes contextd\'s instructions and deferred tools', () => {
  const text = environmentText(claudeCodePrefix(), { instructions: 'contextd folds context.', deferred: ['mcp__contextd__context_view'] });
  assert.match(text, /# MCP Server Instructions\n\nThe following MCP servers have provided instructions for how to use their tools and resources:\n\n## contextd\ncontextd folds context.\n\nThe following skills/);
  assert.match(text, /WebSearch\nmcp__contextd__context_view\n/);
});

// The shape of the last request's messages as capture_claude_code.mjs --cadence printed it
// (a: silent assistant turn, A: one with text, u: user, s: system).
function cadence(turns, textEvery) {
  const silent = new SilentTurns();
  let shape = 'us';
  for (let i = 0; i < turns; i++) {
    const spoke = textEvery && i % textEvery === textEvery - 1;
    shape += (spoke ? 'A' : 'a') + 'u';
    if (silent.next(spoke ? [{ type: 'text', text: 'Step done.' }] : [{ type: 'thinking', thinking: 'x' }], false)) shape += 's';
  }
  return [...shape].flatMap((c, i) => (c === 's' ? [i] : []));
}

test('the silent-turn nudge: every 5 silent turns, at most 3 until the agent speaks (measured on 2.1.332)', () => {
  assert.deepEqual(cadence(40, 0), [1, 12, 23, 34]);
  assert.deepEqual(cadence(40, 8), [1, 12, 29, 46, 63, 80]);
  const s = new SilentTurns();
  for (let i = 0; i < 4; i++) assert.equal(s.next([], false), false);
  assert.equal(s.next([], true), false, 'a user text starts a new stretch');
  for (let i = 0; i < 4; i++) assert.equal(s.next([], false), false);
  assert.equal(s.next([], false), true);
});

test('a request in claude-code form: system messages, thinking, the last block marked, valid for the double', () => {
  const p = claudeCodePrefix();
  const messages = openingMessages(p, 'Fix it.');
  messages.push({ role: 'assistant', content: [{ type: 'thinking', thinking: 'x', signature: 'E' }, { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'ls' } }] });
  messages.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.py' }] });
  messages.push({ role: 'system', content: SILENT_TURN_REMINDER });
  const body = claudeCodeRequestBody(p, claudeCodeTools(p), messages);
  assert.equal(validate(body), null);
  assert.deepEqual(body.messages.map((m) => m.role), ['user', 'system', 'assistant', 'user', 'system']);
  assert.equal(typeof body.messages[1].content, 'string');
  assert.deepEqual(body.messages[4].content, [{ type: 'text', text: SILENT_TURN_REMINDER, cache_control: { type: 'ephemeral' } }]);
  assert.equal(requestBlocks(body).filter((b) => b.breakpoint).length, 3);
  assert.equal(body.thinking.type, 'adaptive');
});

// A recorded run of 12 commands with no format error: its turns are all silent in this form.
function trajectory(id) {
  const steps = [];
  for (let i = 0; i < 12; i++) {
    const command = `grep -n f${i} src/a.py`;
    steps.push({ role: 'assistant', tool_name: 'grep', args: { command }, content: `THOUGHT: look for f${i}\n\n\`\`\`bash\n${command}\n\`\`\`` });
    steps.push({ role: 'tool', tool_name: 'grep', args: null, content: `${i}: def f${i}():\n`.repeat(200) });
  }
  return { id, task: `Fix the bug in ${id}.`, steps, meta: { instance_id: id } };
}

test('a conversation in claude-code form is accepted by the caching double, nudges and all', { skip: !tokens && 'tools/npm/tokens is not installed' }, async () => {
  const opts = { api: 'anthropic', form: 'claude-code' };
  const runs = [runOf(trajectory('t1'))];
  const cc = await playConversation({ opts, enc: tokens.enc, count: tokens.count, memo: new Map(), runs, variant: 'direct', conversationId: 'c1' });
  const minimal = await playConversation({ opts: { api: 'anthropic' }, enc: tokens.enc, count: tokens.count, memo: new Map(), runs, variant: 'direct', conversationId: 'c1' });
  assert.equal(cc.refused, 0);
  assert.equal(cc.requests, 12);
  assert.equal(cc.system_messages, 2, 'after the 5th and the 10th silent turn');
  // The captured prefix is about 10k o200k tokens more than the minimal form's, on every request.
  assert.ok(cc.per_request[0][0] - minimal.per_request[0][0] > 9000, `${cc.per_request[0][0]} vs ${minimal.per_request[0][0]}`);
  // It is cached: from the second request on, the prefix is read.
  assert.ok(cc.per_request[1][1] > 9000);
});

test('compare_forms puts both forms\' pooled numbers side by side', async () => {
  const { compare } = await import('./compare_forms.mjs');
  const pooled = (cost) => ({ direct: { requests: 2, input_sum: 100, input_peak: 60, cost, branches: 0, folds: 0, refused: 0 } });
  const md = compare({ variants: ['direct'], single: { pooled: pooled(10), rows: [{}] } },
    { variants: ['direct'], single: { pooled: { direct: { ...pooled(20).direct, system_messages: 3 } }, rows: [{}] } });
  assert.match(md, /### Single runs \(1\)/);
  assert.match(md, /\| direct \| 2 \| 100 \| 60 \| 10 \|.*\| 2 \| 100 \| 60 \| 20 \|/);
  assert.match(md, /\| direct \| 0 \/ 0 \| 0 \/ 0 \| 3 \| 0 \/ 0 \|/);
});
