// The replay benchmark's driver (issue 6, "Compression, measured"): plays recorded agent
// trajectories through contextd and reports, from contextd's own context_view, the main-context
// tokens with and without folding. See bench/replay/README.md for the method.
//
//   node bench/replay/replay.mjs --binary PATH --workloads DIR --out DIR
//        [--budget 32768] [--only SUBSTRING] [--limit N]
//
// For each trajectory it runs two passes, each against a fresh `contextd serve --transport stdio`
// (own data dir, generated config naming bench/replay/replay_upstream.mjs as the stdio upstream
// `replay`): a flat pass (every recorded call through `replay__bash` at the session root: the
// baseline) and a folded pass (the same calls, with each segment of segment.mjs wrapped in
// branch_create / branch_return, the agent's next message cut to 200 tokens as the summary).
// Writes OUT/results.json (raw numbers) and OUT/results.md (tables), and prints the tables.
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, basename } from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { readTrajectories, recordedCalls } from './trajectory.mjs';
import { segment, summaryText, SegmentKind, MIN_SEGMENT_STEPS } from './segment.mjs';

const here = new URL('.', import.meta.url).pathname;
const root = resolve(here, '../..');
const sdkRoot = join(root, 'tools/npm/e2e/node_modules/@modelcontextprotocol/sdk/dist/esm/');
const tiktokenDir = join(root, 'tools/npm/tokens/node_modules/tiktoken');
export const SUMMARY_MAX_TOKENS = 200;
const UPSTREAM = 'replay';
const TOOL = `${UPSTREAM}__bash`;

function parseArgs(argv) {
  const opts = { budget: 32768, limit: Infinity, only: '' };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    const value = argv[++i];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    if (key === 'budget' || key === 'limit') opts[key] = Number(value);
    else if (['binary', 'workloads', 'out', 'only'].includes(key)) opts[key] = value;
    else throw new Error(`unknown option --${key}`);
  }
  for (const k of ['binary', 'workloads', 'out']) if (!opts[k]) throw new Error(`--${k} is required`);
  return opts;
}

// o200k_base (contextd's default encoding) through the pinned tiktoken of tools/npm/tokens.
function loadEncoder() {
  if (!existsSync(tiktokenDir)) throw new Error('tools/npm/tokens is not installed: run scripts/install-deps.sh');
  const { get_encoding } = createRequire(import.meta.url)(tiktokenDir);
  return get_encoding('o200k_base');
}

// `text` cut to at most `max` o200k_base tokens, at a UTF-8 character boundary.
export function cutToTokens(enc, text, max) {
  const tokens = enc.encode_ordinary(text);
  if (tokens.length <= max) return text;
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for (let n = max; n > 0; n--) {
    try {
      return decoder.decode(enc.decode(tokens.slice(0, n)));
    } catch { /* a partial character at the cut: one token fewer */ }
  }
  return '';
}

function count(enc, text) {
  return enc.encode_ordinary(text).length;
}

// Tokens the agent holds for a segment's two folding calls (arguments and replies), which the
// folded view does not count: it counts the summary only.
function foldingCallTokens(s) {
  return s.create_call_tokens + s.create_reply_tokens + s.return_call_tokens + s.return_reply_tokens;
}

function textOf(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

function configYaml({ file, id, budget }) {
  return [
    'upstreams:',
    `  - name: ${UPSTREAM}`,
    '    stdio:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: [${JSON.stringify(join(here, 'replay_upstream.mjs'))}, ${JSON.stringify(file)}, ${JSON.stringify(String(id))}]`,
    '    timeout_seconds: 60',
    'context_folding:',
    `  default_budget: ${budget}`,
    `  max_budget: ${budget}`,
    // A replay opens branches far faster than an agent does; the default 5/minute would refuse them.
    '  branch_creation_rate_limit: 100000/minute',
    '',
  ].join('\n');
}

// Starts contextd with the replay upstream of trajectory `id` and connects the SDK client.
async function startContextd({ binary, file, id, budget }) {
  const { Client } = await import(join(sdkRoot, 'client/index.js'));
  const { StdioClientTransport } = await import(join(sdkRoot, 'client/stdio.js'));
  const dataDir = mkdtempSync(join(tmpdir(), 'contextd-replay-'));
  const config = join(dataDir, 'contextd.yaml');
  writeFileSync(config, configYaml({ file, id, budget }));
  const transport = new StdioClientTransport({
    command: binary,
    args: ['serve', '--transport', 'stdio', '--config', config, '--data-dir', dataDir, '--log-level', 'warn'],
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => { stderr = (stderr + chunk.toString()).slice(-20000); });
  const client = new Client({ name: 'contextd-replay', version: '1.0.0' }, { capabilities: {} });
  try {
    await client.connect(transport);
    // The upstream's tools are listed once its child has initialized; wait for them (bounded).
    for (let i = 0; ; i++) {
      const names = (await client.listTools()).tools.map((t) => t.name);
      if (names.includes(TOOL)) break;
      if (i >= 200) throw new Error(`contextd does not list ${TOOL}: ${names.join(', ')}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  } catch (e) {
    e.message += `\ncontextd stderr:\n${stderr}`;
    throw e;
  }
  return {
    client, dataDir, stderr: () => stderr,
    async stop() {
      await client.close().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
}

// Every event of a scope, through trail_unfold pages.
async function unfoldAll(client, scopeId) {
  const events = [];
  for (let offset = 0; ;) {
    const page = await call(client, 'trail_unfold', { scope_id: scopeId, offset, limit: 200 });
    if (page.isError) throw new Error(`trail_unfold ${scopeId}: ${textOf(page)}`);
    events.push(...page.structuredContent.events);
    offset += page.structuredContent.events.length;
    if (page.structuredContent.events.length === 0 || offset >= page.structuredContent.total) break;
  }
  return events;
}

// One pass over a trajectory. `segments` empty: the flat pass.
async function replayPass({ opts, enc, file, trajectory, calls, segments }) {
  const t0 = performance.now();
  const server = await startContextd({ binary: opts.binary, file, id: trajectory.id, budget: opts.budget });
  const t1 = performance.now();
  const out = { verbatim: 0, mismatches: [], tool_errors: 0, segments: [] };
  try {
    const { client } = server;
    const starts = new Map(segments.map((s) => [s.start, s]));
    let open = null;
    for (let i = 0; i < calls.length; i++) {
      const seg = starts.get(i);
      if (seg) {
        const first = calls[i].command.split('\n')[0];
        const args = {
          description: `${seg.kind}: recorded steps ${seg.start}-${seg.end - 1} (${seg.end - seg.start} commands)`,
          prompt: `Replay of ${seg.end - seg.start} recorded commands, starting with: ${first.slice(0, 300) || '(none)'}`,
        };  // budget: the configured default_budget
        const created = await call(client, 'branch_create', args);
        if (created.isError) throw new Error(`branch_create at step ${i}: ${textOf(created)}`);
        open = {
          ...seg, branch_id: created.structuredContent.branch_id, prompt_tokens: created.structuredContent.prompt_tokens,
          // What the agent itself holds for this call: its arguments and the reply text.
          create_call_tokens: count(enc, JSON.stringify(args)), create_reply_tokens: count(enc, textOf(created)),
        };
      }
      const result = await call(client, TOOL, { command: calls[i].command });
      const text = textOf(result);
      if (result.isError) out.tool_errors++;
      if (!result.isError && text === calls[i].observation) {
        out.verbatim++;
      } else {
        const reason = text.includes('[REDACTED:') ? 'scrubbed' : result.isError ? 'error' : 'differs';
        out.mismatches.push({ step: i, reason, head: text.slice(0, 200), tail: text.slice(-300) });
      }
      if (open && i === open.end - 1) {
        // The agent's next message (after the segment's last result) is what it concluded.
        const next = calls[i + 1]?.message ?? calls[i].message;
        const summary = cutToTokens(enc, summaryText(next), SUMMARY_MAX_TOKENS) || '(no summary)';
        const args = { message: summary };  // returns the innermost active branch: this one
        const returned = await call(client, 'branch_return', args);
        open.return_error = returned.isError ? textOf(returned) : null;
        open.summary_tokens_reported = returned.isError ? null : returned.structuredContent.summary_tokens;
        open.summary_tokens_local = count(enc, summary);
        open.return_call_tokens = count(enc, JSON.stringify(args));
        open.return_reply_tokens = count(enc, textOf(returned));
        out.segments.push(open);
        open = null;
      }
    }
    const t2 = performance.now();
    const view = await call(client, 'context_view', {});
    if (view.isError) throw new Error(`context_view: ${textOf(view)}`);
    const v = view.structuredContent;
    out.view = {
      tokens_unfolded: v.tokens_unfolded, tokens_folded: v.tokens_folded,
      scopes_open: v.scopes_open, scopes_folded: v.scopes_folded, events: v.events,
    };
    // Per-segment numbers from the branch scopes' recorded events.
    for (const s of out.segments) {
      const events = await unfoldAll(client, s.branch_id);
      s.tool_tokens = events.filter((e) => e.kind === 'tool_call' || e.kind === 'tool_result')
        .reduce((a, e) => a + e.tokens, 0);
      const end = events.find((e) => e.kind === 'branch_returned' || e.kind === 'force_return');
      s.forced = !end || end.kind === 'force_return';
      s.summary_tokens = end ? end.tokens : 0;
      s.warnings = events.filter((e) => e.kind === 'warning').length;
    }
    // Per-step tokens (flat pass): the root scope holds a tool_call and a tool_result per step.
    if (segments.length === 0) {
      const events = (await unfoldAll(client, v.session_scope_id))
        .filter((e) => e.kind === 'tool_call' || e.kind === 'tool_result');
      out.step_tokens = [];
      for (let k = 0; k + 1 < events.length; k += 2) out.step_tokens.push(events[k].tokens + events[k + 1].tokens);
    }
    const status = await call(client, 'branch_status', {});
    const flat = [];
    const walk = (list) => { for (const b of list ?? []) { flat.push(b); walk(b.children); } };
    walk(status.structuredContent?.branches);
    out.branch_statuses = {};
    for (const b of flat) out.branch_statuses[b.status] = (out.branch_statuses[b.status] ?? 0) + 1;
    out.startup_ms = t1 - t0;
    out.replay_ms = t2 - t1;
  } catch (e) {
    e.message += `\ncontextd stderr:\n${server.stderr()}`;
    throw e;
  } finally {
    await server.stop();
  }
  return out;
}

function pct(part, whole) {
  return whole > 0 ? (100 * (1 - part / whole)) : 0;
}

function fmtPct(x) {
  return `${x.toFixed(1)}%`;
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

// Flat-pass tokens (call + result) by the class segment.mjs gives each step.
function byClass(rows) {
  const out = {};
  for (const r of rows) {
    r.classes.forEach((c, i) => {
      out[c] ??= { steps: 0, tokens: 0 };
      out[c].steps++;
      out[c].tokens += r.step_tokens[i] ?? 0;
    });
  }
  return out;
}

function summarize(rows, opts) {
  const sum = (f) => rows.reduce((a, r) => a + f(r), 0);
  const segs = rows.flatMap((r) => r.segments);
  const byKind = (kind) => {
    const list = segs.filter((s) => s.kind === kind);
    const tool = list.reduce((a, s) => a + s.tool_tokens, 0);
    const summary = list.reduce((a, s) => a + s.summary_tokens, 0);
    const prompt = list.reduce((a, s) => a + s.prompt_tokens, 0);
    const per = list.map((s) => pct(s.summary_tokens, s.tool_tokens)).sort((a, b) => a - b);
    const calls = list.reduce((a, s) => a + foldingCallTokens(s), 0);
    return {
      segments: list.length,
      steps: list.reduce((a, s) => a + s.end - s.start, 0),
      tool_tokens: tool,
      summary_tokens: summary,
      prompt_tokens: prompt,
      reduction_pct: pct(summary, tool),
      reduction_with_prompts_pct: pct(summary + prompt, tool),
      folding_call_tokens: calls,
      reduction_with_folding_calls_pct: pct(calls, tool),
      segment_reduction_median_pct: quantile(per, 0.5),
      segments_below_80_pct: per.filter((x) => x < 80).length,
    };
  };
  const wall = rows.map((r) => r.folded.replay_ms).sort((a, b) => a - b);
  return {
    trajectories: rows.length,
    calls: sum((r) => r.calls),
    baseline_tokens: sum((r) => r.flat.view.tokens_folded),
    folded_pass_tokens_unfolded: sum((r) => r.folded.view.tokens_unfolded),
    folded_tokens: sum((r) => r.folded.view.tokens_folded),
    reduction_pct: pct(sum((r) => r.folded.view.tokens_folded), sum((r) => r.flat.view.tokens_folded)),
    folded_with_calls_tokens: sum((r) => r.folded_with_calls_tokens),
    reduction_with_calls_pct: pct(sum((r) => r.folded_with_calls_tokens), sum((r) => r.flat.view.tokens_folded)),
    summary_count_mismatches: segs.filter((s) => s.summary_tokens_reported !== s.summary_tokens_local).length,
    file_exploration: byKind(SegmentKind.FILE_EXPLORATION),
    debugging: byKind(SegmentKind.DEBUGGING),
    force_returned: segs.filter((s) => s.forced).length,
    return_errors: segs.filter((s) => s.return_error).length,
    budget_warnings: segs.reduce((a, s) => a + s.warnings, 0),
    accounting_inconsistent: rows.filter((r) => !r.accounting_consistent).map((r) => r.instance_id),
    baseline_tokens_by_step_class: byClass(rows),
    results_not_verbatim: sum((r) => r.folded.mismatches.length + r.flat.mismatches.length),
    wall_ms: {
      folded_replay_total: sum((r) => r.folded.replay_ms),
      flat_replay_total: sum((r) => r.flat.replay_ms),
      folded_replay_median: quantile(wall, 0.5),
      folded_replay_max: wall[wall.length - 1] ?? 0,
      startup_median: quantile(rows.map((r) => r.folded.startup_ms).sort((a, b) => a - b), 0.5),
    },
    budget: opts.budget,
    summary_max_tokens: SUMMARY_MAX_TOKENS,
    min_segment_steps: MIN_SEGMENT_STEPS,
  };
}

function markdown(rows, pooled) {
  const lines = [];
  lines.push('Main-context tokens of the tool traffic, as contextd counts them (context_view, o200k_base). ' +
    '"without": flat pass (no branches). "with": folded pass, tokens_folded. "with + calls": the folded ' +
    'pass with each segment costing its branch_create/branch_return arguments and replies instead of the summary alone.');
  lines.push('');
  lines.push('| trajectory | calls | segments (expl/dbg) | without | with | less | with + calls | less | file-expl. segments: tokens -> summary (less) | forced | replay ms flat / folded |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const fe = r.segments.filter((s) => s.kind === SegmentKind.FILE_EXPLORATION);
    const feTool = fe.reduce((a, s) => a + s.tool_tokens, 0);
    const feSum = fe.reduce((a, s) => a + s.summary_tokens, 0);
    const base = r.flat.view.tokens_folded;
    lines.push(`| ${r.instance_id} | ${r.calls} | ${fe.length}/${r.segments.length - fe.length} | ` +
      `${base} | ${r.folded.view.tokens_folded} | ${fmtPct(pct(r.folded.view.tokens_folded, base))} | ` +
      `${r.folded_with_calls_tokens} | ${fmtPct(pct(r.folded_with_calls_tokens, base))} | ` +
      `${fe.length ? `${feTool} -> ${feSum} (${fmtPct(pct(feSum, feTool))})` : '-'} | ` +
      `${r.segments.filter((s) => s.forced).length} | ${Math.round(r.flat.replay_ms)} / ${Math.round(r.folded.replay_ms)} |`);
  }
  const p = pooled;
  lines.push(`| **pooled (${p.trajectories})** | ${p.calls} | ${p.file_exploration.segments}/${p.debugging.segments} | ` +
    `${p.baseline_tokens} | ${p.folded_tokens} | ${fmtPct(p.reduction_pct)} | ` +
    `${p.folded_with_calls_tokens} | ${fmtPct(p.reduction_with_calls_pct)} | ` +
    `${p.file_exploration.tool_tokens} -> ${p.file_exploration.summary_tokens} (${fmtPct(p.file_exploration.reduction_pct)}) | ` +
    `${p.force_returned} | ${Math.round(p.wall_ms.flat_replay_total)} / ${Math.round(p.wall_ms.folded_replay_total)} |`);
  lines.push('');
  lines.push('| segments | count | steps | tool tokens | summary tokens | less (summaries, as context_view counts) | less (+ branch prompts) | folding calls + replies | less (folding calls + replies) | median per segment | segments < 80% |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const [name, k] of [['file-exploration', p.file_exploration], ['debugging', p.debugging]]) {
    lines.push(`| ${name} | ${k.segments} | ${k.steps} | ${k.tool_tokens} | ${k.summary_tokens} | ${fmtPct(k.reduction_pct)} | ` +
      `${fmtPct(k.reduction_with_prompts_pct)} | ${k.folding_call_tokens} | ${fmtPct(k.reduction_with_folding_calls_pct)} | ` +
      `${fmtPct(k.segment_reduction_median_pct)} | ${k.segments_below_80_pct} |`);
  }
  lines.push('');
  lines.push('| step class (rule) | steps | tokens without folding | share |');
  lines.push('|---|---:|---:|---:|');
  for (const [c, k] of Object.entries(p.baseline_tokens_by_step_class)) {
    lines.push(`| ${c} | ${k.steps} | ${k.tokens} | ${(100 * k.tokens / p.baseline_tokens).toFixed(1)}% |`);
  }
  lines.push('');
  lines.push(`Force-returned segments: ${p.force_returned} (budget ${p.budget} tokens per branch; ${p.budget_warnings} budget warnings). ` +
    `Results not returned verbatim: ${p.results_not_verbatim}. Totals that do not add up: ${p.accounting_inconsistent.length}. ` +
    `Summaries whose server count differs from tiktoken's: ${p.summary_count_mismatches}. ` +
    `Replay wall time per trajectory (calls only): folded pass median ${Math.round(p.wall_ms.folded_replay_median)} ms, ` +
    `max ${Math.round(p.wall_ms.folded_replay_max)} ms; contextd start-up (spawn to upstream tool listed) median ${Math.round(p.wall_ms.startup_median)} ms.`);
  return lines.join('\n') + '\n';
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const files = readdirSync(opts.workloads).filter((f) => f.endsWith('.jsonl')).sort()
    .map((f) => join(opts.workloads, f));
  if (files.length === 0) throw new Error(`no *.jsonl in ${opts.workloads}`);
  const enc = loadEncoder();
  const rows = [];
  for (const file of files) {
    for (const trajectory of readTrajectories(file)) {
      if (rows.length >= opts.limit) break;
      if (opts.only && !String(trajectory.id).includes(opts.only)) continue;
      const calls = recordedCalls(trajectory);
      const { classes, segments } = segment(calls);
      const flat = await replayPass({ opts, enc, file, trajectory, calls, segments: [] });
      const folded = await replayPass({ opts, enc, file, trajectory, calls, segments });
      const row = {
        id: trajectory.id, instance_id: trajectory.meta?.instance_id ?? String(trajectory.id),
        workload: basename(file), calls: calls.length, classes,
        step_tokens: flat.step_tokens,
        segments: folded.segments.map(({ kind, start, end, branch_id, prompt_tokens, tool_tokens, summary_tokens,
          summary_tokens_reported, summary_tokens_local, create_call_tokens, create_reply_tokens, return_call_tokens,
          return_reply_tokens, forced, warnings, return_error }) =>
          ({ kind, start, end, branch_id, prompt_tokens, tool_tokens, summary_tokens, summary_tokens_reported,
            summary_tokens_local, create_call_tokens, create_reply_tokens, return_call_tokens, return_reply_tokens,
            forced, warnings, return_error })),
        flat: { view: flat.view, startup_ms: flat.startup_ms, replay_ms: flat.replay_ms, mismatches: flat.mismatches, tool_errors: flat.tool_errors },
        folded: { view: folded.view, startup_ms: folded.startup_ms, replay_ms: folded.replay_ms, mismatches: folded.mismatches,
          tool_errors: folded.tool_errors, branch_statuses: folded.branch_statuses },
      };
      // The server's totals must add up: the folded pass records the flat pass's calls plus each
      // branch's prompt and summary, and its folded total swaps each segment for its summary.
      const segTool = row.segments.reduce((a, s) => a + s.tool_tokens, 0);
      const segSummary = row.segments.reduce((a, s) => a + s.summary_tokens, 0);
      const segPrompt = row.segments.reduce((a, s) => a + s.prompt_tokens, 0);
      row.accounting_consistent =
        folded.view.tokens_unfolded - segPrompt - segSummary === flat.view.tokens_unfolded &&
        flat.view.tokens_unfolded === flat.view.tokens_folded &&
        folded.view.tokens_folded === flat.view.tokens_folded - segTool + segSummary &&
        flat.step_tokens.reduce((a, t) => a + t, 0) === flat.view.tokens_unfolded;
      // The folded total as the agent would hold it: every segment replaced by its two folding
      // calls with their arguments and replies instead of by the summary alone.
      row.folded_with_calls_tokens = flat.view.tokens_folded - segTool +
        row.segments.reduce((a, s) => a + foldingCallTokens(s), 0);
      rows.push(row);
      process.stderr.write(`${row.instance_id}: ${calls.length} calls, ${segments.length} segments, ` +
        `${flat.view.tokens_folded} -> ${folded.view.tokens_folded} tokens, ${Math.round(folded.replay_ms)} ms\n`);
    }
  }
  const pooled = summarize(rows, opts);
  mkdirSync(opts.out, { recursive: true });
  writeFileSync(join(opts.out, 'results.json'), JSON.stringify({ pooled, trajectories: rows }, null, 1) + '\n');
  const md = markdown(rows, pooled);
  writeFileSync(join(opts.out, 'results.md'), md);
  process.stdout.write(md);
  process.stdout.write(`\nraw numbers: ${join(opts.out, 'results.json')}\n`);
  // The numbers stand only if the checks hold: fail the run (and the e2e test) otherwise.
  if (pooled.results_not_verbatim > 0 || pooled.accounting_inconsistent.length > 0) {
    process.stderr.write(`replay: ${pooled.results_not_verbatim} result(s) not verbatim, ` +
      `${pooled.accounting_inconsistent.length} total(s) that do not add up\n`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main().catch((e) => {
    process.stderr.write(`replay: ${e.stack ?? e}\n`);
    process.exit(1);
  });
}
