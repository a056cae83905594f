// bench/model's driver: plays recorded trajectories as agent conversations against a caching
// double, directly and through contextd's model gateway, and reports what the model was sent and
// what it would cost with the provider's prompt caching. See README.md.
//
//   node bench/model/run.mjs --workloads DIR --out DIR [--binary PATH] [--variants a,b,...]
//        [--api anthropic|chat] [--limit N] [--only SUBSTRING] [--session-runs 3] [--stream]
//        [--kinds single,session] [--form minimal|claude-code]
//        [--trigger N] [--keep K] [--min-result M] [--clear-at-least C] [--expected-requests N]
//        [--cache-ttl S] [--step-seconds A[,B...]] [--output-tps R] [--cache-refresh prefix|entry]
//
// `--api anthropic` (default): Claude Code's Messages requests to a double billing like Anthropic's
// prompt cache (caching_double.mjs). `--api chat`: the same conversations as Chat Completions
// requests to a double billing like OpenAI's automatic prefix caching (openai_caching_double.mjs).
// `--form claude-code` (Anthropic only): the requests as the pinned Claude Code sends them
// (claude_code_form.mjs); `minimal` (default): a small system prompt and one bash tool.
// Per conversation and variant: a fresh double and, for the contextd variants, a fresh
// `contextd serve --transport http` whose model_gateway upstream is that double. Every request
// carries the whole history; the double answers with the next recorded step.
//
// Cache lifetime (`--cache-ttl S`, 0 = none): a replay clock gives each request a time (each
// request takes `--step-seconds` plus its output tokens / `--output-tps`), and the double bills
// every request a second time in a cache whose entries expire S seconds after their last use (one
// such cache per --step-seconds value): one run gives the numbers with and without expiry.
// Branching variants also report the context a branch loses (lost_context.mjs).
import { spawnContextd, connectMcp as connectMcpAt } from './contextd_process.mjs';
import { mkdirSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { randomUUID, createHash } from 'node:crypto';

import { join, resolve } from 'node:path';
import { readTrajectories } from '../replay/trajectory.mjs';
import { startCachingDouble, loadO200k, requestBlocks, messageFromSse } from './caching_double.mjs';
import { startOpenAICachingDouble, chatSegments, OPENAI_MAX_AGE_SECONDS } from './openai_caching_double.mjs';
import { CLEAR_DEFAULTS } from './clear_tool_uses.mjs';
import { chatRequestBody, blocksOfChat } from './chat_form.mjs';
import { summarize, markdown, markdown33, TARGETS, TARGETS_33, ttlRows, ttlNames } from './report.mjs';
import { lostItems, requestText } from './lost_context.mjs';
import {
  VARIANTS, DEFAULT_VARIANTS, THROUGH_CONTEXTD, BRANCHING, AUTO_FOLD, AUTO_FOLD_THINKING, BRANCH_VIEW, SYSTEM, BASH_TOOL, loadedMcpTools,
  runOf, conversationPlan, MCP_SERVER,
} from './conversation.mjs';
import { summarize34, markdown34, TARGETS_34 } from './issue34.mjs';
import {
  FORMS, claudeCodePrefix, claudeCodeTools, openingMessages, reasoningBlocks, SilentTurns, claudeCodeRequestBody, SILENT_TURN_REMINDER,
} from './claude_code_form.mjs';

export { summarize, TARGETS, TARGETS_33 };

const MODEL = 'claude-sonnet-4-5';
export const SESSION_HEADER = 'x-claude-code-session-id';
export const AUTO_FOLD_HEADER = 'x-contextd-auto-fold';
const CC = Object.freeze({ type: 'ephemeral' });

// contextd's auto-fold settings (model_gateway.auto_fold) as its defaults; --trigger also sets
// the clear-tool-uses simulation's trigger (its other settings stay Anthropic's defaults).
// `expectedRequests` (--expected-requests) is written only when given: contextd estimates it.
export const AUTO_FOLD_DEFAULTS = Object.freeze({ trigger: 100000, keep: 3, minResult: 200, clearAtLeast: 20000 });
// The replay clock: each request takes `stepSeconds` (the command's run and the request's time
// to its first token) plus its output tokens at `outputTps` tokens per second. The cache lifetime
// `cacheTtl` is 0 (none) unless asked for.
export const CLOCK_DEFAULTS = Object.freeze({ cacheTtl: 0, stepSeconds: [15], outputTps: 50, cacheRefresh: 'prefix' });
// The text that opens contextd's isolated branch view (issue 33).
export const BRANCH_VIEW_MARK = '[contextd] Branch';

function parseArgs(argv) {
  const opts = {
    limit: Infinity, only: '', variants: [...DEFAULT_VARIANTS], sessionRuns: 3, stream: false, api: 'anthropic', form: 'minimal',
    kinds: ['single', 'session'],
    ...AUTO_FOLD_DEFAULTS, ...CLOCK_DEFAULTS,
  };
  const numeric = {
    limit: 'limit', 'session-runs': 'sessionRuns', trigger: 'trigger', keep: 'keep', 'min-result': 'minResult', 'clear-at-least': 'clearAtLeast',
    'cache-ttl': 'cacheTtl', 'output-tps': 'outputTps', 'expected-requests': 'expectedRequests',
  };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'stream') { opts.stream = true; continue; }
    const value = argv[++i];
    if (value === undefined) throw new UsageError(`--${key} needs a value`);
    if (numeric[key]) {
      opts[numeric[key]] = Number(value);
      if (!Number.isFinite(opts[numeric[key]]) || opts[numeric[key]] < 0) throw new UsageError(`--${key}: not a number: ${value}`);
    } else if (key === 'variants') opts.variants = value.split(',').map((v) => v.trim()).filter(Boolean);
    else if (key === 'kinds') opts.kinds = value.split(',').map((v) => v.trim()).filter(Boolean);
    else if (key === 'step-seconds') {
      opts.stepSeconds = value.split(',').map(Number);
      if (!opts.stepSeconds.length || opts.stepSeconds.some((x) => !Number.isFinite(x) || x < 0)) throw new UsageError(`--step-seconds: numbers, not ${value}`);
    } else if (key === 'cache-refresh') opts.cacheRefresh = value;
    else if (['binary', 'workloads', 'out', 'only', 'api', 'form'].includes(key)) opts[key] = value;
    else throw new UsageError(`unknown option --${key}`);
  }
  for (const v of opts.variants) if (!VARIANTS.includes(v)) throw new UsageError(`unknown variant ${v} (known: ${VARIANTS.join(', ')})`);
  for (const k of opts.kinds) if (!['single', 'session'].includes(k)) throw new UsageError(`--kinds: single and/or session, not ${k}`);
  if (!['anthropic', 'chat'].includes(opts.api)) throw new UsageError(`--api: anthropic or chat, not ${opts.api}`);
  if (!FORMS.includes(opts.form)) throw new UsageError(`--form: ${FORMS.join(' or ')}, not ${opts.form}`);
  if (!['prefix', 'entry'].includes(opts.cacheRefresh)) throw new UsageError(`--cache-refresh: prefix or entry, not ${opts.cacheRefresh}`);
  if (!(opts.outputTps > 0)) throw new UsageError('--output-tps must be > 0');
  if (opts.api === 'chat' && opts.form !== 'minimal') throw new UsageError('--form claude-code is for --api anthropic');
  if (opts.api === 'chat' && opts.stream) throw new UsageError('--stream is for --api anthropic (the Chat double answers JSON)');
  for (const k of ['workloads', 'out']) if (!opts[k]) throw new UsageError(`--${k} is required`);
  if (opts.variants.some((v) => THROUGH_CONTEXTD.has(v)) && !(opts.binary && existsSync(opts.binary))) {
    throw new UsageError(`the contextd variants need a contextd binary (--binary; got ${opts.binary ?? 'none'}); ` +
      'run `--variants direct,clear-tool-uses` for the peers without contextd');
  }
  return opts;
}

export class GatewayMissing extends Error {}
// The binary refused model_gateway.auto_fold: it has no auto-fold (the variant is reported as such).
export class AutoFoldMissing extends Error {}
// The binary refused context_folding.branch_view: it predates issue 33 (reported as such).
export class BranchViewMissing extends Error {}
class UsageError extends Error {}

// What the driver writes into contextd's config: folding as bench/replay, the gateway's upstreams
// (`doubleUrl` is the double's origin, or for `api: 'chat'` its OpenAI base URL ending in /v1)
// and, with `autoFold` ({trigger, keep, minResult, clearAtLeast, thinking?, expectedRequests?}),
// auto-fold on (`thinking` and `expected_requests` only when set: unset, contextd's defaults);
// `branchView` ('isolated' or 'inherited') sets context_folding.branch_view (unset: the default).
export function configYaml(doubleUrl, { gateway = true, api = 'anthropic', autoFold = null, branchView = null } = {}) {
  const lines = [
    'context_folding:',
    '  default_budget: 32768',
    '  max_budget: 32768',
    // A replay opens branches far faster than an agent does; the default 5/minute would refuse them.
    '  branch_creation_rate_limit: 100000/minute',
  ];
  if (branchView) lines.push(`  branch_view: ${branchView}`);
  if (gateway) {
    lines.push('model_gateway:');
    if (api === 'chat') lines.push('  openai:', `    base_url: ${doubleUrl}`);
    else lines.push('  anthropic:', `    base_url: ${doubleUrl}`);
    if (autoFold) {
      lines.push('  auto_fold:', '    enabled: true', `    trigger_tokens: ${autoFold.trigger}`, `    keep: ${autoFold.keep}`,
        `    min_result_tokens: ${autoFold.minResult}`, `    clear_at_least: ${autoFold.clearAtLeast}`);
      if (autoFold.thinking) lines.push(`    thinking: ${autoFold.thinking}`);
      if (autoFold.expectedRequests !== undefined && autoFold.expectedRequests !== null) {
        lines.push(`    expected_requests: ${autoFold.expectedRequests}`);
      }
    }
  }
  return lines.join('\n') + '\n';
}

// Starts contextd over HTTP with the gateway pointing at `doubleUrl`; resolves {origin, mcpUrl,
// stop, stderr}. `gateway: false` leaves the gateway out of the config (for the driver's tests).
export async function startContextd(binary, doubleUrl, { gateway = true, api = 'anthropic', autoFold = null, branchView = null } = {}) {
  try {
    return await spawnContextd({ binary, yaml: configYaml(doubleUrl, { gateway, api, autoFold, branchView }) });
  } catch (e) {
    if (branchView && /branch_view/.test(e.stderr ?? '')) {
      throw new BranchViewMissing(`contextd refused context_folding.branch_view (exit ${e.exitCode}): this build predates issue 33's branch view.\n` +
        `contextd stderr:\n${e.stderr}`);
    }
    if (autoFold && /auto_fold\.(thinking|expected_requests)/.test(e.stderr ?? '')) {
      throw new AutoFoldMissing(`contextd refused model_gateway.auto_fold.thinking or expected_requests (exit ${e.exitCode}): ` +
        `this build predates issue 34's auto-fold under thinking.\ncontextd stderr:\n${e.stderr}`);
    }
    if (autoFold && /auto_fold/.test(e.stderr ?? '')) {
      throw new AutoFoldMissing(`contextd refused model_gateway.auto_fold (exit ${e.exitCode}): this build has no auto-fold.\n` +
        `contextd stderr:\n${e.stderr}`);
    }
    if (/model_gateway/.test(e.stderr ?? '')) {
      throw new GatewayMissing(`contextd refused the config key model_gateway.${api === 'chat' ? 'openai' : 'anthropic'}.base_url ` +
        `(exit ${e.exitCode}): this build has no such gateway. Use --variants direct.\ncontextd stderr:\n${e.stderr}`);
    }
    throw e;
  }
}

// What contextd is started with for `variant` (`settings`: the run's options over the defaults):
// {api, autoFold (null: off), branchView (null: the default)}.
export function contextdOptions(variant, settings) {
  const autoFold = AUTO_FOLD.has(variant)
    ? { trigger: settings.trigger, keep: settings.keep, minResult: settings.minResult, clearAtLeast: settings.clearAtLeast,
      thinking: AUTO_FOLD_THINKING[variant] ?? null, expectedRequests: settings.expectedRequests ?? null }
    : null;
  return { api: settings.api ?? 'anthropic', autoFold, branchView: BRANCH_VIEW[variant] ?? null };
}

const connectMcp = (mcpUrl, sessionId) => connectMcpAt(mcpUrl, { [SESSION_HEADER]: sessionId });

// What Claude Code puts in a tool_result for an MCP result: the structuredContent as JSON text
// when there is one (decision 0014), else the text blocks; isError carried over.
export function mcpToolResult(toolUseId, result) {
  const text = result.structuredContent !== undefined && !result.isError
    ? JSON.stringify(result.structuredContent)
    : (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return { type: 'tool_result', tool_use_id: toolUseId, content: [{ type: 'text', text }], ...(result.isError ? { is_error: true } : {}) };
}

// The request body: the history with breakpoints on the last system block and on the last block
// of the last message (the history itself holds no markers).
export function requestBody(tools, messages, stream) {
  const last = messages[messages.length - 1];
  const marked = messages.slice(0, -1).concat([{
    ...last, content: last.content.map((b, i) => (i === last.content.length - 1 ? { ...b, cache_control: CC } : b)),
  }]);
  const system = SYSTEM.map((b, i) => (i === SYSTEM.length - 1 ? { ...b, cache_control: CC } : b));
  return { model: MODEL, max_tokens: 32000, system, tools, messages: marked, ...(stream ? { stream: true } : {}) };
}

// POSTs one request (Messages or Chat); resolves {status, reply (Anthropic-form assistant content
// blocks) or text}. A 404 from contextd means its build lacks the route.
async function postRequest(url, body, { api, sessionId, viaContextd, autoFold, beta }) {
  const path = api === 'chat' ? '/v1/chat/completions' : '/v1/messages';
  const headers = api === 'chat'
    ? { 'content-type': 'application/json', authorization: 'Bearer sk-proj-model-bench' }
    : { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant-api03-model-bench', [SESSION_HEADER]: sessionId };
  if (beta) headers['anthropic-beta'] = beta;
  else if (body.context_management) headers['anthropic-beta'] = 'context-management-2025-06-27';
  if (autoFold) headers[AUTO_FOLD_HEADER] = 'on';
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status === 404 && viaContextd) {
    throw new GatewayMissing(`contextd answered 404 to POST ${path}: this build has no such model gateway route. ` +
      `Use --variants direct until it lands. Body: ${text.slice(0, 300)}`);
  }
  if (res.status !== 200) return { status: res.status, text };
  if (api === 'chat') return { status: 200, reply: blocksOfChat(JSON.parse(text).choices[0].message) };
  return { status: 200, reply: (body.stream ? messageFromSse(text) : JSON.parse(text)).content };
}

// A tool_use id shaped like the API's (Anthropic: toolu_01 + 22 base62; Chat: call_ + 24), stable
// per conversation.
function toolUseId(conversationId, n, api = 'anthropic') {
  const h = createHash('sha256').update(`${conversationId}/${n}`).digest('base64').replace(/[^A-Za-z0-9]/g, '');
  return api === 'chat' ? `call_${h.slice(0, 24)}` : `toolu_01${h.slice(0, 22)}`;
}

// The name the agent gives contextd's MCP tool `tool` in the API's form (Claude Code's
// mcp__<server>__<tool>; a Chat agent's <server>__<tool>, decision 0017).
const mcpName = (api, tool) => (api === 'chat' ? `${MCP_SERVER}__${tool}` : `mcp__${MCP_SERVER}__${tool}`);

// Sums the samples of the counter `name` in a Prometheus text whose labels include `labels`.
export function metricSum(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const [head, value] = line.split(/\s+/);
    if (Object.entries(labels).every(([k, v]) => head.includes(`${k}="${v}"`))) sum += Number(value);
  }
  return sum;
}

// contextd's own account of a conversation (its /metrics, once it has recorded `requests`
// model requests: it records each after the answer has ended, which the driver may see first).
async function contextdCounters(origin, requests) {
  let text = '';
  for (let i = 0; i < 200; i++) {
    text = await (await fetch(`${origin}/metrics`)).text();
    if (metricSum(text, 'contextd_model_requests_total') >= requests) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  return {
    auto_folds: metricSum(text, 'contextd_model_auto_folds_total'),
    auto_fold_steps: metricSum(text, 'contextd_model_auto_fold_steps_total', { outcome: 'folded' }),
    auto_fold_tokens: metricSum(text, 'contextd_model_auto_fold_tokens_total'),
    fallbacks: metricSum(text, 'contextd_model_rewrite_fallbacks_total'),
    // Returned branches folded, and folds skipped by reason (what the fold core could not fold).
    folds: metricSum(text, 'contextd_model_folds_total'),
    folds_skipped: Object.fromEntries([...text.matchAll(/^contextd_model_folds_skipped_total\{[^}]*reason="([a-z_]+)"[^}]*\} (\S+)$/gm)]
      .map((m) => [m[1], Number(m[2])]).filter(([, n]) => n > 0)),
    // Issue 33: requests sent while a branch was open, by the view contextd gave the model, and
    // the tokens the isolated view left out (0 before issue 33).
    branch_view_requests: Object.fromEntries([...text.matchAll(/^contextd_model_branch_view_requests_total\{[^}]*view="([a-z_]+)"[^}]*\} (\S+)$/gm)]
      .map((m) => [m[1], Number(m[2])])),
    view_tokens_spared: metricSum(text, 'contextd_model_branch_view_tokens_spared_total'),
    // Requests with auto-fold on, by what their step did (folded, below_trigger, ...).
    auto_fold_outcomes: Object.fromEntries([...text.matchAll(/^contextd_model_auto_fold_steps_total\{[^}]*outcome="([a-z_]+)"[^}]*\} (\S+)$/gm)]
      .map((m) => [m[1], Number(m[2])])),
    // Issue 34: thinking blocks auto-fold steps removed (mode remove), and their tokens.
    thinking_removed: metricSum(text, 'contextd_model_auto_fold_thinking_removed_total'),
    thinking_removed_tokens: metricSum(text, 'contextd_model_auto_fold_thinking_removed_tokens_total'),
  };
}

// What the double's thinking rules did to the billed requests `u` (their usage), as the Anthropic
// caching double counts it (none of it on a double without those counters): requests answered with
// thinking off (a tool loop that lost its thinking), thinking blocks dropped, requests with either.
function thinkingStats(double, u) {
  const degraded = double.degraded?.length ?? u.filter((x) => x.degraded).length;
  const dropped = double.dropped?.length ?? u.reduce((a, x) => a + (x.thinking_dropped ?? 0), 0);
  const indexes = new Set([...(double.degraded ?? []).map((d) => d.index), ...(double.dropped ?? []).map((d) => d.index)]);
  u.forEach((x, i) => { if (x.degraded || x.thinking_dropped > 0) indexes.add(i); });
  return { degraded, thinking_dropped: dropped, thinking_invalid_requests: indexes.size, degraded_examples: (double.degraded ?? []).slice(0, 3) };
}

// The cache-lifetime scenarios of `settings` (one per --step-seconds value), [] without a TTL.
export function ttlScenarios(settings) {
  if (!(settings.cacheTtl > 0)) return [];
  return settings.stepSeconds.map((step) => ({
    name: `ttl${settings.cacheTtl}-step${step}`, ttl: settings.cacheTtl, step, outputTps: settings.outputTps,
    refresh: settings.cacheRefresh, maxAge: OPENAI_MAX_AGE_SECONDS,
  }));
}

// Whether a forwarded body opens contextd's isolated branch view (a user message whose text
// starts with BRANCH_VIEW_MARK), in either API's form.
export function opensBranchView(body) {
  return (body.messages ?? []).some((m) => m.role === 'user' && (typeof m.content === 'string'
    ? m.content.startsWith(BRANCH_VIEW_MARK)
    : (m.content ?? []).some((b) => b.type === 'text' && (b.text ?? '').startsWith(BRANCH_VIEW_MARK))));
}

// Plays one conversation (runs one after another) under `variant`; returns its numbers.
// `startServer(binary, doubleUrl, {api, autoFold, branchView})` starts what the contextd variants
// talk to (tests replace it). `opts.api` picks the API, `opts.form` (Anthropic) minimal or
// claude-code; `memo` is the token memo of that API's double. `observe({sent, forwarded, reply})`,
// if given, sees each request as the agent sent it, as the double got it (null if refused) and
// the assistant content the conversation goes on with (for tests).
export async function playConversation({ opts, enc, count, memo, runs, variant, conversationId, startServer = startContextd, observe = null }) {
  const api = opts.api ?? 'anthropic';
  const cc = (opts.form ?? 'minimal') === 'claude-code' ? claudeCodePrefix() : null;
  const settings = { ...AUTO_FOLD_DEFAULTS, ...CLOCK_DEFAULTS, ...opts };
  const plan = conversationPlan(enc, runs, variant, { boundary: cc ? 'answer' : 'text' });
  const clear = variant === 'clear-tool-uses';
  const scenarios = ttlScenarios(settings);
  const double = api === 'chat'
    ? await startOpenAICachingDouble({ tokenize: (t) => enc.encode_ordinary(t), memo, clearToolUses: clear ? { ...CLEAR_DEFAULTS, trigger: settings.trigger } : null, ttlCaches: scenarios })
    : await startCachingDouble({ count, memo, ttlCaches: scenarios });
  const tokensOf = (body) => (api === 'chat'
    ? chatSegments(body).reduce((s, x) => s + double.cache.tokensOf(x), 0)
    : requestBlocks(body).reduce((s, b) => s + double.cache.tokensOf(b), 0));
  const viaContextd = THROUGH_CONTEXTD.has(variant);
  const autoFold = AUTO_FOLD.has(variant);
  const sessionId = randomUUID();
  let server = null;
  let mcp = null;
  const sent = [];  // tokens of each request as the driver (the agent) sent it
  const stats = { branches: 0, tool_errors: 0, refused: 0, refusals: [], system_messages: 0, view_requests: 0 };
  // Per billed request: whether it was sent while a branch was open, or right after a return.
  const marks = [];
  const clocks = Object.fromEntries(scenarios.map((x) => [x.name, 0]));
  // Per branch: the clocks when the request before it was sent (the one that wrote the parent's
  // prefix), and when the request after its return was.
  const branchTimes = [];
  let afterReturn = false;
  const lost = { steps: 0, steps_lost: 0, items: 0, seen: 0, lost: 0, examples: [] };
  try {
    let tools = cc ? claudeCodeTools(cc) : [BASH_TOOL];
    let env = {};
    let url = api === 'chat' ? double.url.replace(/\/v1$/, '') : double.url;
    if (viaContextd) {
      server = await startServer(opts.binary, double.url, contextdOptions(variant, { ...settings, api }));
      mcp = await connectMcp(server.mcpUrl, sessionId);
      const listed = (await mcp.listTools()).tools;
      tools = cc ? claudeCodeTools(cc, loadedMcpTools(listed)) : [BASH_TOOL, ...loadedMcpTools(listed)];
      // Claude Code lists the others behind ToolSearch and puts the server's instructions in the
      // environment message.
      env = {
        server: MCP_SERVER, instructions: mcp.getInstructions() ?? '',
        deferred: listed.filter((t) => t._meta?.['anthropic/alwaysLoad'] !== true).map((t) => `mcp__${MCP_SERVER}__${t.name}`),
      };
      if (BRANCHING.has(variant) && !tools.some((t) => t.name === `mcp__${MCP_SERVER}__branch_create`)) {
        throw new Error(`contextd lists no always-loaded branch_create: ${tools.map((t) => t.name).join(', ')}`);
      }
      if (api === 'chat') tools = tools.map((t) => ({ ...t, name: t.name.replace(/^mcp__/, '') }));
      url = server.origin;
    }
    const messages = cc ? openingMessages(cc, plan.task, env) : [{ role: 'user', content: [{ type: 'text', text: plan.task }] }];
    const silent = new SilentTurns();
    const bashName = cc ? 'Bash' : 'bash';
    const open = [];  // branch ids, innermost last
    let seq = 0;
    for (const turn of plan.turns) {
      const content = [];
      // Claude Code's model reasons in a thinking block before its tool calls and before its final
      // answer (a session's task done); a turn without either (a recorded format error) says its text.
      if (turn.final) content.push(...reasoningBlocks(turn.thinking), { type: 'text', text: turn.text });
      else if (turn.text) content.push(...(cc && turn.actions.length ? reasoningBlocks(turn.text) : [{ type: 'text', text: turn.text }]));
      const actions = turn.actions.map((a) => ({ ...a, id: toolUseId(conversationId, ++seq, api) }));
      for (const a of actions) {
        if (a.kind === 'bash') content.push({ type: 'tool_use', id: a.id, name: bashName, input: { command: a.command } });
        else if (a.kind === 'create') content.push({ type: 'tool_use', id: a.id, name: mcpName(api, 'branch_create'), input: a.args });
        else content.push({ type: 'tool_use', id: a.id, name: mcpName(api, 'branch_return'), input: { branch_id: open[open.length - 1], message: a.message } });
      }
      if (content.length === 0) content.push({ type: 'text', text: '(no text)' });
      double.enqueue({ content });
      let body;
      const clearEdit = { type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: settings.trigger } };
      if (api === 'chat') body = chatRequestBody(SYSTEM, tools, messages);
      else if (cc) body = claudeCodeRequestBody(cc, tools, messages, { stream: opts.stream, clearToolUses: clear ? clearEdit : null });
      else {
        body = requestBody(tools, messages, opts.stream);
        // Anthropic's context editing with its defaults but the run's trigger (the same as auto-fold's).
        if (clear) body.context_management = { edits: [clearEdit] };
      }
      sent.push(tokensOf(body));
      const before = double.records.length;
      const errorsBefore = double.errors.length;
      const inBranch = open.length > 0;
      if (turn.actions.some((a) => a.kind === 'create')) branchTimes.push({ before: { ...clocks } });
      if (afterReturn) {
        const b = branchTimes.findLast((x) => !x.after);
        if (b) b.after = { ...clocks };
      }
      double.setTimes?.(clocks);
      const answer = await postRequest(url, body, { api, sessionId, viaContextd, autoFold, beta: cc?.anthropic_beta });
      let reply = answer.reply;
      if (answer.status !== 200) {
        // The double's validator refused what it got: counted, and the conversation goes on with
        // the scripted turn (unbilled) so that every later request is checked too.
        if (answer.status !== 400 || double.errors.length !== errorsBefore + 1) {
          throw new Error(`POST (${api}): ${answer.status} ${answer.text.slice(0, 2000)}`);
        }
        stats.refused++;
        stats.refusals.push(double.errors.pop());
        double.skip();
        reply = content;
      } else if (double.records.length !== before + 1) {
        throw new Error(`the double billed ${double.records.length - before} requests for one`);
      } else {
        const record = double.records[before];
        marks.push({ inBranch, afterReturn });
        if (opensBranchView(record.body)) stats.view_requests++;
        // The context a branch loses: what this step's command uses that the agent had seen and
        // the model was not sent.
        if (inBranch) {
          let sentText = null;
          let forwardedText = null;
          for (const a of turn.actions.filter((x) => x.kind === 'bash')) {
            sentText ??= requestText(body);
            forwardedText ??= requestText(record.body);
            const r = lostItems(a.command, sentText, forwardedText);
            lost.steps++;
            lost.items += r.items;
            lost.seen += r.seen;
            lost.lost += r.lost.length;
            if (r.lost.length) {
              lost.steps_lost++;
              if (lost.examples.length < 5) lost.examples.push({ request: before, command: a.command.slice(0, 160), lost: r.lost.map((x) => x.item) });
            }
          }
        }
        const out = record.usage.output_tokens;
        for (const x of scenarios) clocks[x.name] += x.step + out / x.outputTps;
      }
      afterReturn = false;
      observe?.({ sent: body, forwarded: answer.status === 200 ? double.records[before].body : null, reply });
      messages.push({ role: 'assistant', content: reply });
      // Results in the order of the tool_use blocks the agent received (Claude Code's order).
      const results = [];
      for (const block of reply.filter((b) => b.type === 'tool_use')) {
        const a = actions.find((x) => x.id === block.id);
        if (!a) throw new Error(`the reply carries a tool_use the script did not: ${block.id} ${block.name}`);
        if (a.kind === 'bash') {
          results.push({ type: 'tool_result', tool_use_id: a.id, content: a.observation });
          continue;
        }
        const name = a.kind === 'create' ? 'branch_create' : 'branch_return';
        const r = await mcp.callTool({ name, arguments: block.input }, undefined, { timeout: 120000 });
        if (r.isError) stats.tool_errors++;
        if (a.kind === 'create' && !r.isError) { open.push(r.structuredContent.branch_id); stats.branches++; }
        if (a.kind === 'return' && !r.isError) { open.pop(); afterReturn = true; }
        if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
        results.push(mcpToolResult(a.id, r));
      }
      const userContent = [...results];
      if (turn.userText !== undefined) userContent.push({ type: 'text', text: turn.userText || '(empty)' });
      if (turn.nextTask !== undefined) userContent.push({ type: 'text', text: turn.nextTask });
      if (userContent.length === 0) userContent.push({ type: 'text', text: 'Continue.' });
      messages.push({ role: 'user', content: userContent });
      if (cc && silent.next(reply, turn.userText !== undefined || turn.nextTask !== undefined)) {
        messages.push({ role: 'system', content: SILENT_TURN_REMINDER });
        stats.system_messages++;
      }
    }
    if (double.errors.length) throw new Error(`caching double errors: ${double.errors.join('; ')}`);
    if (server) Object.assign(stats, await contextdCounters(server.origin, plan.turns.length));
    const u = double.records.map((r) => r.usage);
    Object.assign(stats, thinkingStats(double, u));
    const sum = (f) => u.reduce((a, x) => a + (x[f] ?? 0), 0);
    // Per cache-lifetime scenario: the same requests billed in the cache with expiry; what expiry
    // added; and the requests right after a return that found the parent's prefix gone.
    const ttl = {};
    for (const x of scenarios) {
      const t = u.map((r) => r.ttl[x.name]);
      const tsum = (f) => t.reduce((a, r) => a + r[f], 0);
      const cold = u.map((r, i) => ({ r, t: t[i], m: marks[i] })).filter((e) => e.m.afterReturn);
      const rewrote = cold.filter((e) => e.t.cache_read < e.r.cache_read);
      ttl[x.name] = {
        ttl: x.ttl, step_seconds: x.step, seconds: clocks[x.name],
        cost: tsum('cost'), cache_read: tsum('cache_read'), cache_write: tsum('cache_write'), uncached: tsum('uncached'),
        extra_cost: tsum('cost') - sum('cost'),
        post_return: cold.length, post_return_cold: rewrote.length,
        post_return_cold_cost: rewrote.reduce((a, e) => a + e.t.cost - e.r.cost, 0),
        post_return_cold_tokens: rewrote.reduce((a, e) => a + e.r.cache_read - e.t.cache_read, 0),
        branches_over_ttl: branchTimes.filter((b) => b.after && b.after[x.name] - b.before[x.name] > x.ttl).length,
        branch_seconds_max: Math.max(0, ...branchTimes.filter((b) => b.after).map((b) => b.after[x.name] - b.before[x.name])),
      };
    }
    return {
      requests: u.length + stats.refused, input_sum: sum('input_tokens'), input_peak: Math.max(0, ...u.map((x) => x.input_tokens)),
      cache_read: sum('cache_read'), cache_write: sum('cache_write'), uncached: sum('uncached'),
      output: sum('output_tokens'), cost: sum('cost'), cleared: sum('cleared'),
      sent_sum: sent.reduce((a, x) => a + x, 0), sent_peak: Math.max(0, ...sent), ...stats,
      in_branch_requests: marks.filter((m) => m.inBranch).length,
      in_branch_input: u.reduce((a, x, i) => a + (marks[i].inBranch ? x.input_tokens : 0), 0),
      in_branch_cost: u.reduce((a, x, i) => a + (marks[i].inBranch ? x.cost : 0), 0),
      ...(scenarios.length ? { ttl } : {}), ...(BRANCHING.has(variant) ? { lost } : {}),
      per_request: u.map((x) => [x.input_tokens, x.cache_read, x.cache_write, x.uncached, x.output_tokens]),
    };
  } catch (e) {
    if (server && !(e instanceof GatewayMissing)) e.message += `\ncontextd stderr (tail):\n${server.stderr().slice(-3000)}`;
    throw e;
  } finally {
    await mcp?.close().catch(() => {});
    await server?.stop();
    await double.close();
  }
}

async function main() {
  const t0 = Date.now();
  const opts = parseArgs(process.argv.slice(2));
  const files = readdirSync(opts.workloads).filter((f) => f.endsWith('.jsonl')).sort();
  if (files.length === 0) { process.stdout.write(`bench/model: skipped: no *.jsonl in ${opts.workloads}\n`); return; }
  const { enc, count } = loadO200k();
  const memo = new Map();
  const runs = [];
  for (const f of files) {
    for (const t of readTrajectories(join(opts.workloads, f))) {
      if (opts.only && !String(t.id).includes(opts.only)) continue;
      if (runs.length < opts.limit) runs.push(runOf(t));
    }
  }
  const conversations = opts.kinds.includes('single') ? runs.map((r) => ({ kind: 'single', id: r.id, runs: [r] })) : [];
  const n = opts.sessionRuns;
  for (let i = 0; opts.kinds.includes('session') && n > 0 && i + n <= runs.length; i += n) {
    const group = runs.slice(i, i + n);
    conversations.push({ kind: 'session', id: `s${String(i / n + 1).padStart(2, '0')}: ${group.map((r) => r.id).join(' + ')}`, runs: group });
  }
  const rows = { single: [], session: [] };
  const unsupported = {};  // variant -> why this binary cannot run it
  const variants = () => opts.variants.filter((v) => !unsupported[v]);
  for (const c of conversations) {
    const row = { id: c.id, runs: c.runs.map((r) => r.id), variants: {} };
    for (const variant of variants()) {
      try {
        row.variants[variant] = await playConversation({ opts, enc, count, memo, runs: c.runs, variant, conversationId: c.id });
      } catch (e) {
        if (!(e instanceof AutoFoldMissing) && !(e instanceof BranchViewMissing)) throw e;
        unsupported[variant] = e.message.split('\n')[0];
        process.stderr.write(`bench/model: ${variant} skipped: ${unsupported[variant]}\n`);
      }
    }
    rows[c.kind].push(row);
    process.stderr.write(`${c.id}: ${variants().map((v) => `${v} ${Math.round(row.variants[v]?.cost ?? 0)}`).join(', ')}\n`);
  }
  const done = variants();
  for (const kind of ['single', 'session']) for (const r of rows[kind]) for (const v of Object.keys(r.variants)) if (!done.includes(v)) delete r.variants[v];
  const autoFold = { trigger: opts.trigger, keep: opts.keep, minResult: opts.minResult, clearAtLeast: opts.clearAtLeast,
    expected_requests: opts.expectedRequests ?? null };
  const results = {
    api: opts.api, form: opts.form, variants: done, unsupported, session_runs: n, model: opts.api === 'chat' ? 'gpt-bench' : opts.form === 'claude-code' ? claudeCodePrefix().model : MODEL, targets: TARGETS,
    targets_33: TARGETS_33, targets_34: TARGETS_34, clock: { cache_ttl: opts.cacheTtl, step_seconds: opts.stepSeconds, output_tps: opts.outputTps, cache_refresh: opts.cacheRefresh },
    auto_fold: autoFold, clear_tool_uses: { ...CLEAR_DEFAULTS, trigger: opts.trigger }, seconds: (Date.now() - t0) / 1000, single: {}, session: {},
  };
  const prices = opts.api === 'chat'
    ? 'OpenAI automatic prefix caching: cached 0.1, uncached 1, output 4; cached from 1,024 tokens in 128-token steps'
    : 'Anthropic prompt caching: read 0.1, write 1.25, uncached 1, output 5';
  let md = `# bench/model results (--api ${opts.api}, --form ${opts.form})\n\n${runs.length} runs, variants ${done.join(', ')}; cost in base-input-token units ` +
    `(${prices}), tokens o200k_base. Trigger ${opts.trigger} input tokens (auto-fold and clear-tool-uses); ` +
    `auto-fold keep ${opts.keep}, min_result_tokens ${opts.minResult}, clear_at_least ${opts.clearAtLeast}, ` +
    `expected_requests ${opts.expectedRequests ?? 'unset (contextd estimates)'}, thinking per variant (auto-fold-remove / -wait / -off; ` +
    'auto-fold: contextd\'s default); ' +
    `clear-tool-uses: keep 3, clear_at_least unset, placeholder "${CLEAR_DEFAULTS.placeholder}". ` +
    (opts.cacheTtl > 0
      ? `Cache lifetime: ${opts.cacheTtl} s after the last use (refresh: ${opts.cacheRefresh}${opts.api === 'chat' ? `, at most ${OPENAI_MAX_AGE_SECONDS} s` : ''}); ` +
        `replay clock: ${opts.stepSeconds.join(' or ')} s per request plus output tokens at ${opts.outputTps}/s; the tables above the ` +
        'issue 33 section bill without expiry.\n\n'
      : 'No cache expiry (--cache-ttl 0).\n\n');
  for (const [v, why] of Object.entries(unsupported)) md += `**${v} not run**: ${why}\n\n`;
  for (const kind of ['single', 'session']) {
    if (!rows[kind].length) continue;
    const pooled = summarize(rows[kind], done, TARGETS[kind], { trigger: opts.trigger, targets33: TARGETS_33[kind] });
    const ttlPooled = Object.fromEntries(ttlNames(rows[kind]).map((name) => [name,
      summarize(ttlRows(rows[kind], name), done, TARGETS[kind], { trigger: opts.trigger, targets33: TARGETS_33[kind] })]));
    results[kind] = { pooled, ttl_pooled: ttlPooled, rows: rows[kind] };
    md += markdown(kind, rows[kind], pooled, done, TARGETS[kind], { trigger: opts.trigger }) + '\n';
    md += markdown33(kind, rows[kind], pooled, done, TARGETS_33[kind], ttlPooled) + '\n';
    if (kind === 'session') {
      results[kind].issue34 = summarize34(rows[kind], done, { trigger: opts.trigger });
      md += markdown34(rows[kind], results[kind].issue34, { trigger: opts.trigger }) + '\n';
    }
  }
  md += `Run time: ${results.seconds.toFixed(0)} s.\n`;
  mkdirSync(opts.out, { recursive: true });
  writeFileSync(join(opts.out, 'results.json'), JSON.stringify(results) + '\n');
  writeFileSync(join(opts.out, 'results.md'), md);
  process.stdout.write(md + `raw numbers: ${join(opts.out, 'results.json')}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main().catch((e) => {
    process.stderr.write(`bench/model: ${e instanceof GatewayMissing || e instanceof UsageError ? e.message : (e.stack ?? e)}\n`);
    process.exit(1);
  });
}
