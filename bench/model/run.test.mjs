// Tests of bench/model's generator and driver (node --test bench/model/). The contextd variants run
// against the built contextd's real MCP tools, with a stand-in for its /v1/messages
// (reference_fold.mjs) until the model gateway lands; they are skipped without a binary.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { loadO200k } from './caching_double.mjs';
import { runOf, runTurns, conversationPlan, loadedMcpTools } from './conversation.mjs';
import { playConversation, startContextd, requestBody, summarize, TARGETS, configYaml, AutoFoldMissing, opensBranchView, ttlScenarios } from './run.mjs';
import { TARGETS_33, ttlRows, markdown33 } from './report.mjs';
import { chatMessages, blocksOfChat } from './chat_form.mjs';
import { chatMessageOf, validateChat } from './openai_caching_double.mjs';
import { fold, startReferenceGateway, isolatedView } from './reference_fold.mjs';

const root = new URL('../..', import.meta.url).pathname;
const BINARY = process.env.CONTEXTD_BINARY ??
  [`${root}build/release/src/cli/contextd`, `${root}build/debug/src/cli/contextd`].find((p) => existsSync(p));
const tokens = (() => { try { return loadO200k(); } catch { return null; } })();

// A small recorded run: explore, explore, edit, run, run, a format error, submit.
function trajectory(id, big = 2000) {
  const steps = [];
  const step = (command, observation, tool = command?.split(' ')[0] ?? 'format_error') => {
    steps.push({ role: 'assistant', tool_name: tool, args: command === null ? null : { command }, content: `THOUGHT: about to run ${command}\n\n\`\`\`bash\n${command}\n\`\`\`` });
    steps.push({ role: 'tool', tool_name: tool, args: null, content: observation });
  };
  step('ls src', 'a.py\nb.py');
  step('cat src/a.py', 'def f():\n    return 1\n'.repeat(big / 10));
  step("sed -i 's/1/2/' src/a.py", '');
  step('python -c "import a"', 'Traceback ... '.repeat(big / 4));
  step('python -m pytest -q', '3 passed');
  step(null, 'Please always provide EXACTLY ONE action', 'format_error');
  step('echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached', 'diff --git a/src/a.py');
  return { id, task: `Fix the bug in ${id}.`, steps, meta: { instance_id: id } };
}

test('the generator: one turn per step, folding turns per variant, long sessions chain tasks', { skip: !tokens && 'tools/npm/tokens is not installed' }, () => {
  const run = runOf(trajectory('t1'));
  assert.deepEqual(run.segments.map((s) => [s.start, s.end]), [[0, 2], [3, 5]]);
  assert.equal(runTurns(tokens.enc, run, 'direct').length, 7);
  const own = runTurns(tokens.enc, run, 'create-own-turn');
  assert.deepEqual(own.map((t) => t.actions.map((a) => a.kind).join('+') || 'text'),
    ['create', 'bash', 'bash', 'return', 'bash', 'create', 'bash', 'bash', 'return', 'text', 'bash']);
  const first = runTurns(tokens.enc, run, 'create-first-turn');
  assert.deepEqual(first.map((t) => t.actions.map((a) => a.kind).join('+') || 'text'),
    ['create+bash', 'bash', 'return', 'bash', 'create+bash', 'bash', 'return', 'text', 'bash']);
  // The summary is the agent's next message without its action, as bench/replay cuts it.
  assert.equal(first[2].actions[0].message, 'about to run sed -i \'s/1/2/\' src/a.py');
  assert.equal(first[7].userText, 'Please always provide EXACTLY ONE action');
  const plan = conversationPlan(tokens.enc, [run, runOf(trajectory('t2'))], 'direct');
  assert.equal(plan.task, 'Fix the bug in t1.');
  assert.equal(plan.turns.length, 14);
  assert.equal(plan.turns[6].nextTask, 'Fix the bug in t2.');
});

test('requests carry two breakpoints: the system prompt and the last block', () => {
  const body = requestBody([], [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }], false);
  assert.deepEqual(body.system.map((b) => !!b.cache_control), [false, true]);
  assert.deepEqual(body.messages[0].content.map((b) => !!b.cache_control), [false, true]);
});

test('the reference fold keeps the prefix and replaces a returned branch by its summary', () => {
  const use = (id, name, input = {}) => ({ type: 'tool_use', id, name, input });
  const res = (id, text) => ({ type: 'tool_result', tool_use_id: id, content: text });
  const messages = [
    { role: 'user', content: [{ type: 'text', text: 'task' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'look' }, use('c', 'mcp__contextd__branch_create'), use('b1', 'bash')] },
    { role: 'user', content: [res('c', '{"branch_id":"br_1"}'), res('b1', 'out1')] },
    { role: 'assistant', content: [use('r', 'mcp__contextd__branch_return', { message: 'found it' })] },
    { role: 'user', content: [{ ...res('r', '{}'), cache_control: { type: 'ephemeral' } }, { type: 'text', text: 'next task' }] },
  ];
  const folded = fold(messages);
  assert.deepEqual(folded.slice(0, 1), messages.slice(0, 1));
  assert.deepEqual(folded[1], { role: 'assistant', content: [{ type: 'text', text: 'look' }, use('c', 'mcp__contextd__branch_create')] });
  assert.equal(folded[2].content[0].content[0].text, 'Branch returned. Summary: found it');
  assert.deepEqual(folded[2].content[0].cache_control, { type: 'ephemeral' });
  assert.deepEqual(folded[2].content[1], { type: 'text', text: 'next task' });
  assert.equal(folded.length, 3);
});

test('the contextd variants against the real MCP tools and a stand-in gateway', { skip: (!BINARY && 'no contextd binary') || (!tokens && 'tools/npm/tokens is not installed'), timeout: 120000 }, async () => {
  const gateways = [];
  const startServer = async (binary, doubleUrl) => {
    const server = await startContextd(binary, doubleUrl, { gateway: false });
    const g = await startReferenceGateway(doubleUrl);
    gateways.push(g);
    return { ...server, origin: g.url, stop: async () => { await g.close(); await server.stop(); } };
  };
  const runs = [runOf(trajectory('t1', 6000)), runOf(trajectory('t2', 6000))];
  const memo = new Map();
  const play = (variant, stream = false) => playConversation({
    opts: { binary: BINARY, stream }, enc: tokens.enc, count: tokens.count, memo, runs, variant, conversationId: 'c1', startServer,
  });
  const direct = await play('direct');
  const nofold = await play('contextd-nofold');
  const own = await play('create-own-turn', true);
  const first = await play('create-first-turn');
  assert.equal(direct.requests, 14);
  assert.equal(nofold.requests, 14);
  assert.equal(own.requests, 22);
  assert.equal(first.requests, 18);
  assert.deepEqual([own.branches, first.branches, own.tool_errors], [4, 4, 0]);
  // contextd's always-loaded folding tools ride on every request: more input than direct.
  assert.ok(nofold.input_sum > direct.input_sum);
  assert.ok(own.input_peak < nofold.input_peak && first.input_peak < nofold.input_peak);
  // What the agent sent is unfolded; what the model got is folded.
  assert.ok(first.sent_peak > first.input_peak);
  // One session id per conversation, on every request.
  for (const g of gateways) {
    assert.equal(new Set(g.seen).size, 1);
    assert.match(g.seen[0], /^[0-9a-f-]{36}$/);
  }
  const rows = [{ id: 'c1', variants: { direct, 'contextd-nofold': nofold, 'create-own-turn': own, 'create-first-turn': first } }];
  const pooled = summarize(rows, Object.keys(rows[0].variants), TARGETS.single);
  assert.ok(pooled['create-first-turn'].tokens_fewer_pct > 0);
  assert.equal(typeof pooled['create-own-turn'].targets.cost_saved, 'boolean');
  assert.equal(pooled['contextd-nofold'].targets, undefined);
});

test('the tools Claude Code loads from contextd are the always-loaded ones, named mcp__contextd__*', () => {
  const tools = loadedMcpTools([
    { name: 'branch_create', description: 'd', inputSchema: { type: 'object' }, _meta: { 'anthropic/alwaysLoad': true } },
    { name: 'trail_unfold', description: 'u', inputSchema: { type: 'object' } },
  ]);
  assert.deepEqual(tools, [{ name: 'mcp__contextd__branch_create', description: 'd', input_schema: { type: 'object' } }]);
});

test('the Chat form of a history: system, assistant tool_calls, tool messages, then user text; round trip', () => {
  const use = { type: 'tool_use', id: 'call_1', name: 'bash', input: { command: 'ls -l' } };
  const history = [
    { role: 'user', content: [{ type: 'text', text: 'task' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'look' }, use] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content: 'a.py' }, { type: 'text', text: 'next task' }] },
  ];
  const chat = chatMessages([{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }], history);
  assert.deepEqual(chat, [
    { role: 'system', content: 'one\n\ntwo' },
    { role: 'user', content: 'task' },
    { role: 'assistant', content: 'look', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -l"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: 'a.py' },
    { role: 'user', content: 'next task' },
  ]);
  assert.equal(validateChat({ messages: chat }), null);
  assert.deepEqual(blocksOfChat(chatMessageOf(history[1].content)), history[1].content);
});

test('auto-fold settings go into model_gateway.auto_fold; the Chat upstream into model_gateway.openai', () => {
  const yaml = configYaml('http://127.0.0.1:9/v1', { api: 'chat', autoFold: { trigger: 30000, keep: 3, minResult: 200, clearAtLeast: 20000 } });
  assert.match(yaml, /model_gateway:\n {2}openai:\n {4}base_url: http:\/\/127.0.0.1:9\/v1\n {2}auto_fold:\n {4}enabled: true\n {4}trigger_tokens: 30000\n {4}keep: 3\n {4}min_result_tokens: 200\n {4}clear_at_least: 20000\n/);
  assert.doesNotMatch(configYaml('http://127.0.0.1:9'), /auto_fold/);
});

test('direct and clear-tool-uses in both forms: every request valid, clearing over the trigger only', { skip: !tokens && 'tools/npm/tokens is not installed' }, async () => {
  const runs = [runOf(trajectory('t1', 6000))];
  for (const api of ['anthropic', 'chat']) {
    const memo = new Map();
    const play = (variant, trigger) => playConversation({
      opts: { api, trigger }, enc: tokens.enc, count: tokens.count, memo, runs, variant, conversationId: `c-${api}`,
    });
    const direct = await play('direct', 2000);
    const clear = await play('clear-tool-uses', 2000);
    const untouched = await play('clear-tool-uses', 1e9);
    assert.equal(direct.refused + clear.refused + untouched.refused, 0, api);
    assert.equal(clear.requests, direct.requests, api);
    assert.ok(clear.cleared > 0 && clear.input_peak < direct.input_peak, `${api}: ${clear.cleared} ${clear.input_peak}`);
    assert.deepEqual([untouched.cleared, untouched.input_sum, untouched.cost], [0, direct.input_sum, direct.cost], api);
  }
});

test('contextd in Chat form: branches folded by the real gateway; auto-fold run or reported missing', { skip: (!BINARY && 'no contextd binary') || (!tokens && 'tools/npm/tokens is not installed'), timeout: 120000 }, async () => {
  const runs = [runOf(trajectory('t1', 6000)), runOf(trajectory('t2', 6000))];
  const memo = new Map();
  const opts = { binary: BINARY, api: 'chat', trigger: 3000, keep: 1, minResult: 50, clearAtLeast: 100 };
  const play = (variant) => playConversation({ opts, enc: tokens.enc, count: tokens.count, memo, runs, variant, conversationId: 'chat1' });
  let first;
  try {
    first = await play('create-first-turn');
  } catch (e) {
    if (/no such model gateway route|refused the config key model_gateway/.test(e.message)) return;  // a build before Chat
    throw e;
  }
  assert.equal(first.refused, 0);
  assert.equal(first.branches, 4);
  assert.ok(first.input_peak < first.sent_peak, `${first.input_peak} vs ${first.sent_peak}`);
  try {
    const auto = await play('auto-fold');
    assert.equal(auto.refused, 0);
    assert.ok(auto.input_peak < auto.sent_peak, `auto-fold folded nothing: ${auto.input_peak} vs ${auto.sent_peak}`);
  } catch (e) {
    assert.ok(e instanceof AutoFoldMissing, e.message);
  }
});

test('issue 33: the inherited variant plays create-first-turn\'s turns with branch_view: inherited in its config', { skip: !tokens && 'tools/npm/tokens is not installed' }, () => {
  const run = runOf(trajectory('t1'));
  assert.deepEqual(runTurns(tokens.enc, run, 'create-first-turn-inherited'), runTurns(tokens.enc, run, 'create-first-turn'));
  assert.match(configYaml('http://127.0.0.1:9', { branchView: 'inherited' }), /^context_folding:\n(?: {2}\S.*\n)* {2}branch_view: inherited\n/);
  assert.doesNotMatch(configYaml('http://127.0.0.1:9'), /branch_view/);
  assert.equal(opensBranchView({ messages: [{ role: 'user', content: 'task' }, { role: 'user', content: '[contextd] Branch br_1 ...' }] }), true);
  assert.equal(opensBranchView({ messages: [{ role: 'user', content: [{ type: 'text', text: '[contextd] Branch br_1' }] }] }), true);
  assert.equal(opensBranchView({ messages: [{ role: 'user', content: 'task [contextd] Branch' }] }), false);
  assert.deepEqual(ttlScenarios({ cacheTtl: 0, stepSeconds: [15] }), []);
  assert.deepEqual(ttlScenarios({ cacheTtl: 300, stepSeconds: [15, 30], outputTps: 50, cacheRefresh: 'prefix' }).map((x) => x.name), ['ttl300-step15', 'ttl300-step30']);
});

test('the reference isolated view: the opening, one [contextd] Branch message, the branch\'s turns', () => {
  const use = (id, name, input = {}) => ({ type: 'tool_use', id, name, input });
  const res = (id, text) => ({ type: 'tool_result', tool_use_id: id, content: [{ type: 'text', text }] });
  const opening = { role: 'user', content: [{ type: 'text', text: 'task' }] };
  const parent = [opening, { role: 'assistant', content: [use('p1', 'bash')] }, { role: 'user', content: [res('p1', 'parent output')] }];
  const create = { role: 'assistant', content: [use('c', 'mcp__contextd__branch_create', { description: 'd', prompt: 'p' }), use('b1', 'bash')] };
  const created = { role: 'user', content: [res('c', '{"branch_id":"br_1"}'), { ...res('b1', 'out1'), cache_control: { type: 'ephemeral' } }] };
  const view = isolatedView([...parent, create, created]);
  assert.equal(view.length, 2);
  assert.deepEqual(view[0], opening);
  assert.match(view[1].content[0].text, /^\[contextd\] Branch br_1\ndescription: d\nprompt: p\nbranch_create result: .*\nresult: out1$/);
  assert.ok(view[1].content[0].cache_control);
  const step = [{ role: 'assistant', content: [use('b2', 'bash')] }, { role: 'user', content: [res('b2', 'out2')] }];
  assert.deepEqual(isolatedView([...parent, create, created, ...step]).slice(2), step);
  const returned = [...parent, create, created, { role: 'assistant', content: [use('r', 'mcp__contextd__branch_return', { message: 'm' })] },
    { role: 'user', content: [res('r', '{}')] }];
  assert.equal(isolatedView(returned), null);
  assert.equal(isolatedView(parent), null);
});

test('issue 33 end to end with a stand-in gateway: views, lost context, a cold parent prefix after a long branch', { skip: (!BINARY && 'no contextd binary') || (!tokens && 'tools/npm/tokens is not installed'), timeout: 120000 }, async () => {
  const startServer = async (binary, doubleUrl, { branchView }) => {
    const server = await startContextd(binary, doubleUrl, { gateway: false });
    const g = await startReferenceGateway(doubleUrl, { view: branchView ?? 'isolated' });
    return { ...server, origin: g.url, stop: async () => { await g.close(); await server.stop(); } };
  };
  const runs = [runOf(trajectory('t1', 6000)), runOf(trajectory('t2', 6000))];
  const memo = new Map();
  // Each request takes 100 s: a branch of 2-3 requests outlives a 250 s lifetime.
  const opts = { binary: BINARY, cacheTtl: 250, stepSeconds: [100], outputTps: 1e9 };
  const play = (variant) => playConversation({ opts, enc: tokens.enc, count: tokens.count, memo, runs, variant, conversationId: 'c33', startServer });
  const direct = await play('direct');
  const isolated = await play('create-first-turn');
  const inherited = await play('create-first-turn-inherited');
  assert.equal(isolated.refused + inherited.refused, 0);
  assert.equal(isolated.in_branch_requests, 8);
  assert.equal(isolated.view_requests, isolated.in_branch_requests);
  assert.equal(inherited.view_requests, 0);
  assert.ok(isolated.input_sum < inherited.input_sum, `${isolated.input_sum} vs ${inherited.input_sum}`);
  // The branch's steps: the isolated view dropped the parent's transcript, the inherited did not.
  assert.equal(isolated.lost.steps, 4);
  assert.ok(isolated.lost.lost > 0 && inherited.lost.lost === 0, `${isolated.lost.lost} / ${inherited.lost.lost}`);
  // The parent's prefix outlived the branch only where the branch's requests carried it.
  const [name] = Object.keys(isolated.ttl);
  assert.equal(name, 'ttl250-step100');
  assert.deepEqual([isolated.ttl[name].post_return, isolated.ttl[name].branches_over_ttl], [4, 4]);
  // (The folded parents here are mostly under the 1,024-token minimum: one of the four is cached at all.)
  assert.ok(isolated.ttl[name].post_return_cold >= 1 && isolated.ttl[name].post_return_cold_cost > 0, JSON.stringify(isolated.ttl[name]));
  assert.equal(inherited.ttl[name].post_return_cold, 0);
  assert.equal(direct.ttl[name].extra_cost, 0);
  const rows = [{ id: 'c33', variants: { direct, 'create-first-turn-inherited': inherited, 'create-first-turn': isolated } }];
  const variants = Object.keys(rows[0].variants);
  const pooled = summarize(rows, variants, TARGETS.single, { targets33: TARGETS_33.single });
  assert.deepEqual(Object.keys(pooled['create-first-turn'].targets_33), ['cost_saved', 'no_run_costlier', 'tokens_fewer', 'median_peak_vs_inherited']);
  assert.equal(pooled['create-first-turn-inherited'].targets_33, undefined);
  const ttlPooled = summarize(ttlRows(rows, name), variants, TARGETS.single, { targets33: TARGETS_33.single });
  assert.equal(ttlPooled['create-first-turn'].cost, isolated.ttl[name].cost);
  const md = markdown33('single', rows, pooled, variants, TARGETS_33.single, { [name]: ttlPooled });
  assert.match(md, /\| create-first-turn \| isolated \(default\) \| 8 \| 8 \| [\d,]+ \| [\d,]+ \|/);
  assert.match(md, /Context a branch loses/);
});
