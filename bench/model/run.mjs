// bench/model's driver: plays recorded trajectories as Claude Code conversations against a caching
// double (caching_double.mjs), directly and through contextd's model gateway, and reports what
// the model was sent and what it would cost with Anthropic's prompt caching. See README.md.
//
//   node bench/model/run.mjs --workloads DIR --out DIR [--binary PATH] [--variants a,b,...]
//        [--limit N] [--only SUBSTRING] [--session-runs 3] [--stream]
//
// Per conversation and variant: a fresh caching double and, for the contextd variants, a fresh
// `contextd serve --transport http` whose model_gateway.anthropic.base_url is that double. Every
// request carries the whole history with cache breakpoints on the last system block and the last
// block of the last message; the double answers with the next recorded step.
import { spawnContextd } from './contextd_process.mjs';
import { mkdirSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { randomUUID, createHash } from 'node:crypto';

import { join, resolve } from 'node:path';
import { readTrajectories } from '../replay/trajectory.mjs';
import { startCachingDouble, loadO200k, requestBlocks, messageFromSse } from './caching_double.mjs';
import { VARIANTS, THROUGH_CONTEXTD, FOLDING, SYSTEM, BASH_TOOL, loadedMcpTools, runOf, conversationPlan, MCP_SERVER } from './conversation.mjs';

const here = new URL('.', import.meta.url).pathname;
const root = resolve(here, '../..');
const sdkRoot = join(root, 'tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/');
const MODEL = 'claude-sonnet-4-5';
export const SESSION_HEADER = 'x-claude-code-session-id';
const CC = Object.freeze({ type: 'ephemeral' });

// Targets (issue text): single runs, and long sessions of --session-runs runs.
export const TARGETS = Object.freeze({
  single: { cost_saved_pct: 10, tokens_fewer_pct: 30, median_peak_ratio: 1.4, worst_costlier_pct: 10 },
  session: { cost_saved_pct: 25, tokens_fewer_pct: 45, median_peak_ratio: 1.9, worst_costlier_pct: 0 },
});

function parseArgs(argv) {
  const opts = { limit: Infinity, only: '', variants: [...VARIANTS], sessionRuns: 3, stream: false };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (key === 'stream') { opts.stream = true; continue; }
    const value = argv[++i];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    if (key === 'limit') opts.limit = Number(value);
    else if (key === 'session-runs') opts.sessionRuns = Number(value);
    else if (key === 'variants') opts.variants = value.split(',').map((v) => v.trim()).filter(Boolean);
    else if (['binary', 'workloads', 'out', 'only'].includes(key)) opts[key] = value;
    else throw new Error(`unknown option --${key}`);
  }
  for (const v of opts.variants) if (!VARIANTS.includes(v)) throw new Error(`unknown variant ${v} (known: ${VARIANTS.join(', ')})`);
  for (const k of ['workloads', 'out']) if (!opts[k]) throw new Error(`--${k} is required`);
  if (opts.variants.some((v) => THROUGH_CONTEXTD.has(v)) && !(opts.binary && existsSync(opts.binary))) {
    throw new UsageError(`the contextd variants need a contextd binary (--binary; got ${opts.binary ?? 'none'}); ` +
      'run `--variants direct` for the baseline without contextd');
  }
  return opts;
}

export class GatewayMissing extends Error {}
class UsageError extends Error {}

// What the driver writes into contextd's config: folding as bench/replay, and the gateway's upstream.
export function configYaml(doubleUrl, { gateway = true } = {}) {
  const lines = [
    'context_folding:',
    '  default_budget: 32768',
    '  max_budget: 32768',
    // A replay opens branches far faster than an agent does; the default 5/minute would refuse them.
    '  branch_creation_rate_limit: 100000/minute',
  ];
  if (gateway) lines.push('model_gateway:', '  anthropic:', `    base_url: ${doubleUrl}`);
  return lines.join('\n') + '\n';
}

// Starts contextd over HTTP with the gateway pointing at `doubleUrl`; resolves {origin, mcpUrl,
// stop, stderr}. `gateway: false` leaves the gateway out of the config (for the driver's tests).
export async function startContextd(binary, doubleUrl, { gateway = true } = {}) {
  try {
    return await spawnContextd({ binary, yaml: configYaml(doubleUrl, { gateway }) });
  } catch (e) {
    if (/model_gateway/.test(e.stderr ?? '')) {
      throw new GatewayMissing('contextd refused the config key model_gateway.anthropic.base_url ' +
        `(exit ${e.exitCode}): this build has no model gateway. Use --variants direct.\ncontextd stderr:\n${e.stderr}`);
    }
    throw e;
  }
}

async function connectMcp(mcpUrl, sessionId) {
  const { Client } = await import(join(sdkRoot, 'client/index.js'));
  const { StreamableHTTPClientTransport } = await import(join(sdkRoot, 'client/streamableHttp.js'));
  const client = new Client({ name: 'claude-code', version: '2.1.332' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { [SESSION_HEADER]: sessionId } } });
  await client.connect(transport);
  return client;
}

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

async function postMessages(url, body, sessionId, viaContextd) {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant-api03-model-bench',
      [SESSION_HEADER]: sessionId,
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status === 404 && viaContextd) {
    throw new GatewayMissing(`contextd answered 404 to POST /v1/messages: this build has no model gateway route yet. ` +
      `Use --variants direct until it lands. Body: ${text.slice(0, 300)}`);
  }
  if (res.status !== 200) throw new Error(`POST /v1/messages: ${res.status} ${text.slice(0, 2000)}`);
  return body.stream ? messageFromSse(text) : JSON.parse(text);
}

// A tool_use id shaped like Anthropic's (toolu_01 + 22 base62 characters), stable per conversation.
function toolUseId(conversationId, n) {
  const h = createHash('sha256').update(`${conversationId}/${n}`).digest('base64').replace(/[^A-Za-z0-9]/g, '');
  return `toolu_01${h.slice(0, 22)}`;
}

// Plays one conversation (runs one after another) under `variant`; returns its numbers.
// `startServer(binary, doubleUrl)` starts what the contextd variants talk to (tests replace it).
export async function playConversation({ opts, enc, count, memo, runs, variant, conversationId, startServer = startContextd }) {
  const plan = conversationPlan(enc, runs, variant);
  const double = await startCachingDouble({ count, memo });
  const viaContextd = THROUGH_CONTEXTD.has(variant);
  const sessionId = randomUUID();
  let server = null;
  let mcp = null;
  const sent = [];  // tokens of each request as the driver (the agent) sent it
  const stats = { branches: 0, tool_errors: 0 };
  try {
    let tools = [BASH_TOOL];
    let url = double.url;
    if (viaContextd) {
      server = await startServer(opts.binary, double.url);
      mcp = await connectMcp(server.mcpUrl, sessionId);
      tools = [BASH_TOOL, ...loadedMcpTools((await mcp.listTools()).tools)];
      if (FOLDING.has(variant) && !tools.some((t) => t.name === `mcp__${MCP_SERVER}__branch_create`)) {
        throw new Error(`contextd lists no always-loaded branch_create: ${tools.map((t) => t.name).join(', ')}`);
      }
      url = server.origin;
    }
    const messages = [{ role: 'user', content: [{ type: 'text', text: plan.task }] }];
    const open = [];  // branch ids, innermost last
    let seq = 0;
    for (const turn of plan.turns) {
      const content = [];
      if (turn.text) content.push({ type: 'text', text: turn.text });
      const actions = turn.actions.map((a) => ({ ...a, id: toolUseId(conversationId, ++seq) }));
      for (const a of actions) {
        if (a.kind === 'bash') content.push({ type: 'tool_use', id: a.id, name: 'bash', input: { command: a.command } });
        else if (a.kind === 'create') content.push({ type: 'tool_use', id: a.id, name: `mcp__${MCP_SERVER}__branch_create`, input: a.args });
        else content.push({ type: 'tool_use', id: a.id, name: `mcp__${MCP_SERVER}__branch_return`, input: { branch_id: open[open.length - 1], message: a.message } });
      }
      if (content.length === 0) content.push({ type: 'text', text: '(no text)' });
      double.enqueue({ content });
      const body = requestBody(tools, messages, opts.stream);
      sent.push(requestBlocks(body).reduce((s, b) => s + double.cache.tokensOf(b), 0));
      const before = double.records.length;
      const reply = await postMessages(url, body, sessionId, viaContextd);
      if (double.records.length !== before + 1) throw new Error(`the double billed ${double.records.length - before} requests for one`);
      messages.push({ role: 'assistant', content: reply.content });
      // Results in the order of the tool_use blocks the agent received (Claude Code's order).
      const results = [];
      for (const block of reply.content.filter((b) => b.type === 'tool_use')) {
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
        if (a.kind === 'return' && !r.isError) open.pop();
        if (r.isError) throw new Error(`${name} failed: ${JSON.stringify(r.content)}`);
        results.push(mcpToolResult(a.id, r));
      }
      const userContent = [...results];
      if (turn.userText !== undefined) userContent.push({ type: 'text', text: turn.userText || '(empty)' });
      if (turn.nextTask !== undefined) userContent.push({ type: 'text', text: turn.nextTask });
      if (userContent.length === 0) userContent.push({ type: 'text', text: 'Continue.' });
      messages.push({ role: 'user', content: userContent });
    }
    if (double.errors.length) throw new Error(`caching double errors: ${double.errors.join('; ')}`);
    const u = double.records.map((r) => r.usage);
    const sum = (f) => u.reduce((a, x) => a + x[f], 0);
    return {
      requests: u.length, input_sum: sum('input_tokens'), input_peak: Math.max(0, ...u.map((x) => x.input_tokens)),
      cache_read: sum('cache_read'), cache_write: sum('cache_write'), uncached: sum('uncached'),
      output: sum('output_tokens'), cost: sum('cost'),
      sent_sum: sent.reduce((a, x) => a + x, 0), sent_peak: Math.max(0, ...sent), ...stats,
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

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return 0;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Pooled numbers per variant, and ratios vs direct with the targets checked.
export function summarize(rows, variants, targets) {
  const out = {};
  for (const v of variants) {
    const list = rows.map((r) => r.variants[v]).filter(Boolean);
    const sum = (f) => list.reduce((a, x) => a + x[f], 0);
    const p = {
      runs: list.length, requests: sum('requests'), input_sum: sum('input_sum'),
      input_peak: Math.max(0, ...list.map((x) => x.input_peak)), cache_read: sum('cache_read'),
      cache_write: sum('cache_write'), uncached: sum('uncached'), output: sum('output'), cost: sum('cost'),
      sent_sum: sum('sent_sum'), branches: sum('branches'),
    };
    if (v !== 'direct' && variants.includes('direct')) {
      const d = rows.map((r) => r.variants.direct);
      p.cost_saved_pct = 100 * (1 - p.cost / d.reduce((a, x) => a + x.cost, 0));
      p.tokens_fewer_pct = 100 * (1 - p.input_sum / d.reduce((a, x) => a + x.input_sum, 0));
      p.median_peak_ratio = median(rows.map((r) => r.variants.direct.input_peak / r.variants[v].input_peak));
      const costlier = rows.map((r) => ({ id: r.id, pct: 100 * (r.variants[v].cost / r.variants.direct.cost - 1) }))
        .filter((x) => x.pct > 0).sort((a, b) => b.pct - a.pct);
      p.runs_costlier = costlier.length;
      p.worst_costlier = costlier[0] ?? null;
      if (FOLDING.has(v)) {
        p.targets = {
          cost_saved: p.cost_saved_pct >= targets.cost_saved_pct,
          tokens_fewer: p.tokens_fewer_pct >= targets.tokens_fewer_pct,
          median_peak: p.median_peak_ratio >= targets.median_peak_ratio,
          no_run_costlier: (p.worst_costlier?.pct ?? 0) <= targets.worst_costlier_pct,
        };
      }
    }
    out[v] = p;
  }
  return out;
}

const n0 = (x) => Math.round(x).toLocaleString('en-US');
const f1 = (x) => x.toFixed(1);

function markdown(kind, rows, pooled, variants, targets) {
  const lines = [];
  const title = kind === 'single' ? 'Single runs' : 'Long sessions';
  lines.push(`## ${title} (${rows.length})`, '');
  lines.push('| variant | requests | input tokens (sum) | peak input | cache read | cache write | uncached | output | cost | branches |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const v of variants) {
    const p = pooled[v];
    lines.push(`| ${v} | ${p.requests} | ${n0(p.input_sum)} | ${n0(p.input_peak)} | ${n0(p.cache_read)} | ${n0(p.cache_write)} | ` +
      `${n0(p.uncached)} | ${n0(p.output)} | ${n0(p.cost)} | ${p.branches} |`);
  }
  const compared = variants.filter((v) => v !== 'direct' && pooled[v].cost_saved_pct !== undefined);
  if (compared.length) {
    lines.push('', `vs direct (targets: cost ≥${targets.cost_saved_pct}% lower, tokens ≥${targets.tokens_fewer_pct}% fewer, ` +
      `median peak ≥${targets.median_peak_ratio}x smaller, no run more than ${targets.worst_costlier_pct}% costlier):`, '');
    lines.push('| variant | cost saved | tokens fewer | median peak ratio | runs costlier | worst | targets |');
    lines.push('|---|---:|---:|---:|---:|---|---|');
    for (const v of compared) {
      const p = pooled[v];
      const t = p.targets ? Object.entries(p.targets).map(([k, ok]) => `${k} ${ok ? 'PASS' : 'FAIL'}`).join(', ') : '(control: no target)';
      const worst = p.worst_costlier ? `${p.worst_costlier.id} +${f1(p.worst_costlier.pct)}%` : '-';
      lines.push(`| ${v} | ${f1(p.cost_saved_pct)}% | ${f1(p.tokens_fewer_pct)}% | ${p.median_peak_ratio.toFixed(2)}x | ${p.runs_costlier} | ${worst} | ${t} |`);
    }
  }
  lines.push('', `| ${kind === 'single' ? 'run' : 'session'} | ${variants.map((v) => `${v} cost / peak`).join(' | ')} |`);
  lines.push(`|---|${variants.map(() => '---:').join('|')}|`);
  for (const r of rows) {
    lines.push(`| ${r.id} | ${variants.map((v) => `${n0(r.variants[v].cost)} / ${n0(r.variants[v].input_peak)}`).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

async function main() {
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
  const conversations = [
    ...runs.map((r) => ({ kind: 'single', id: r.id, runs: [r] })),
  ];
  const n = opts.sessionRuns;
  for (let i = 0; n > 0 && i + n <= runs.length; i += n) {
    const group = runs.slice(i, i + n);
    conversations.push({ kind: 'session', id: `s${String(i / n + 1).padStart(2, '0')}: ${group.map((r) => r.id).join(' + ')}`, runs: group });
  }
  const rows = { single: [], session: [] };
  for (const c of conversations) {
    const row = { id: c.id, runs: c.runs.map((r) => r.id), variants: {} };
    for (const variant of opts.variants) {
      row.variants[variant] = await playConversation({ opts, enc, count, memo, runs: c.runs, variant, conversationId: c.id });
    }
    rows[c.kind].push(row);
    process.stderr.write(`${c.id}: ${opts.variants.map((v) => `${v} ${n0(row.variants[v].cost)}`).join(', ')}\n`);
  }
  const results = { variants: opts.variants, session_runs: n, model: MODEL, targets: TARGETS, single: {}, session: {} };
  let md = `# bench/model results\n\n${runs.length} runs, variants ${opts.variants.join(', ')}; cost in base-input-token units ` +
    '(read 0.1, write 1.25, uncached 1, output 5), tokens o200k_base.\n\n';
  for (const kind of ['single', 'session']) {
    if (!rows[kind].length) continue;
    const pooled = summarize(rows[kind], opts.variants, TARGETS[kind]);
    results[kind] = { pooled, rows: rows[kind] };
    md += markdown(kind, rows[kind], pooled, opts.variants, TARGETS[kind]) + '\n';
  }
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
