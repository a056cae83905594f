// bench/model's numbers per variant, pooled over runs (or long sessions), the ratios the targets of
// issues 17, 20 and 33 name, the cache-lifetime and lost-context numbers, and their markdown
// (issue 34's section: issue34.mjs). Pure: no I/O.
import { BRANCHING, AUTO_FOLD } from './conversation.mjs';

// Issue 17's targets (folding by branches), single runs and long sessions of --session-runs runs.
export const TARGETS = Object.freeze({
  single: { cost_saved_pct: 10, tokens_fewer_pct: 30, median_peak_ratio: 1.4, worst_costlier_pct: 10 },
  session: { cost_saved_pct: 25, tokens_fewer_pct: 45, median_peak_ratio: 1.9, worst_costlier_pct: 0 },
});
// Issue 20's: on runs whose context (direct's peak) exceeds the trigger, a peak at least 2x smaller
// than direct's; cost lower than direct and than the clear_tool_uses simulation; no request refused.
export const TARGETS_20 = Object.freeze({ peak_ratio_over_trigger: 2 });
// Issue 33's, for the isolated branch view (`create-first-turn`): cost saved pooled, no run (or
// session) more than worst_costlier_pct costlier, tokens sent fewer, all against direct; and a
// median peak ratio no worse than the inherited view's (`create-first-turn-inherited`).
export const TARGETS_33 = Object.freeze({
  single: { cost_saved_pct: 20, worst_costlier_pct: 5, tokens_fewer_pct: 50 },
  session: { cost_saved_pct: 45, worst_costlier_pct: 0, tokens_fewer_pct: 60 },
});
export const ISOLATED = 'create-first-turn';
export const INHERITED = 'create-first-turn-inherited';

const ISSUE17_CHECKED = new Set(['create-own-turn', 'create-first-turn']);
const CONTEXTD_FOLDING = new Set([...BRANCHING, ...AUTO_FOLD]);

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return 0;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// The rows with each variant's cache, cost and input numbers replaced by those of cache-lifetime
// scenario `name` (results without it are dropped), for summarize.
export function ttlRows(rows, name) {
  return rows.map((r) => ({
    ...r,
    variants: Object.fromEntries(Object.entries(r.variants).filter(([, x]) => x.ttl?.[name]).map(([v, x]) => {
      const t = x.ttl[name];
      return [v, { ...x, cost: t.cost, cache_read: t.cache_read, cache_write: t.cache_write, uncached: t.uncached }];
    })),
  }));
}

// The cache-lifetime scenarios named in `rows` (in order of appearance).
export function ttlNames(rows) {
  const names = [];
  for (const r of rows) for (const x of Object.values(r.variants)) for (const n of Object.keys(x.ttl ?? {})) if (!names.includes(n)) names.push(n);
  return names;
}

const LOST_FIELDS = ['steps', 'steps_lost', 'items', 'seen', 'lost'];
const TTL_FIELDS = ['cost', 'cache_read', 'cache_write', 'uncached', 'extra_cost', 'post_return', 'post_return_cold',
  'post_return_cold_cost', 'post_return_cold_tokens', 'branches_over_ttl'];

// Pooled numbers per variant, ratios vs direct (and vs clear-tool-uses) and the targets checked.
// `trigger`: the auto-fold / clear_tool_uses trigger the run used (input tokens); `targets33`:
// issue 33's targets of this kind (TARGETS_33.single or .session).
export function summarize(rows, variants, targets, { trigger = 100000, targets33 = null } = {}) {
  const out = {};
  const has = (v) => variants.includes(v) && rows.every((r) => r.variants[v]);
  const total = (v, f) => rows.reduce((a, r) => a + r.variants[v][f], 0);
  for (const v of variants) {
    const list = rows.map((r) => r.variants[v]).filter(Boolean);
    if (!list.length) continue;
    const sum = (f) => list.reduce((a, x) => a + (x[f] ?? 0), 0);
    const p = {
      runs: list.length, requests: sum('requests'), input_sum: sum('input_sum'),
      input_peak: Math.max(0, ...list.map((x) => x.input_peak)), cache_read: sum('cache_read'),
      cache_write: sum('cache_write'), uncached: sum('uncached'), output: sum('output'), cost: sum('cost'),
      sent_sum: sum('sent_sum'), branches: sum('branches'), cleared: sum('cleared'), refused: sum('refused'),
      auto_folds: sum('auto_folds'), auto_fold_steps: sum('auto_fold_steps'), fallbacks: sum('fallbacks'),
      folds: sum('folds'), system_messages: sum('system_messages'), folds_skipped: {},
      view_requests: sum('view_requests'), in_branch_requests: sum('in_branch_requests'),
      in_branch_input: sum('in_branch_input'), in_branch_cost: sum('in_branch_cost'),
      median_peak: median(list.map((x) => x.input_peak)),
      // Issue 34: thinking removed by auto-fold steps; what the double's thinking rules refused
      // to carry (requests answered with thinking off, blocks dropped).
      thinking_removed: sum('thinking_removed'), thinking_removed_tokens: sum('thinking_removed_tokens'),
      degraded: sum('degraded'), thinking_dropped: sum('thinking_dropped'), thinking_invalid_requests: sum('thinking_invalid_requests'),
      auto_fold_outcomes: {},
    };
    for (const x of list) for (const [k, n] of Object.entries(x.auto_fold_outcomes ?? {})) p.auto_fold_outcomes[k] = (p.auto_fold_outcomes[k] ?? 0) + n;
    if (list.some((x) => x.lost)) {
      p.lost = Object.fromEntries(LOST_FIELDS.map((f) => [f, list.reduce((a, x) => a + (x.lost?.[f] ?? 0), 0)]));
    }
    for (const x of list) {
      for (const [name, t] of Object.entries(x.ttl ?? {})) {
        p.ttl ??= {};
        p.ttl[name] ??= { ttl: t.ttl, step_seconds: t.step_seconds, seconds: [], branch_seconds_max: 0, ...Object.fromEntries(TTL_FIELDS.map((f) => [f, 0])) };
        for (const f of TTL_FIELDS) p.ttl[name][f] += t[f];
        p.ttl[name].seconds.push(t.seconds);
        p.ttl[name].branch_seconds_max = Math.max(p.ttl[name].branch_seconds_max, t.branch_seconds_max);
      }
    }
    for (const t of Object.values(p.ttl ?? {})) t.median_seconds = median(t.seconds);
    for (const x of list) for (const [k, n] of Object.entries(x.folds_skipped ?? {})) p.folds_skipped[k] = (p.folds_skipped[k] ?? 0) + n;
    // contextd's own count of the views it gave (issue 33's metrics), beside the driver's.
    p.branch_view_requests = {};
    for (const x of list) for (const [k, n] of Object.entries(x.branch_view_requests ?? {})) p.branch_view_requests[k] = (p.branch_view_requests[k] ?? 0) + n;
    p.view_tokens_spared = sum('view_tokens_spared');
    if (v !== 'direct' && has('direct') && list.length === rows.length) {
      p.cost_saved_pct = 100 * (1 - p.cost / total('direct', 'cost'));
      p.tokens_fewer_pct = 100 * (1 - p.input_sum / total('direct', 'input_sum'));
      p.median_peak_ratio = median(rows.map((r) => r.variants.direct.input_peak / r.variants[v].input_peak));
      const costlier = rows.map((r) => ({ id: r.id, pct: 100 * (r.variants[v].cost / r.variants.direct.cost - 1) }))
        .filter((x) => x.pct > 0).sort((a, b) => b.pct - a.pct);
      p.runs_costlier = costlier.length;
      p.worst_costlier = costlier[0] ?? null;
      if (ISSUE17_CHECKED.has(v)) {
        p.targets = {
          cost_saved: p.cost_saved_pct >= targets.cost_saved_pct,
          tokens_fewer: p.tokens_fewer_pct >= targets.tokens_fewer_pct,
          median_peak: p.median_peak_ratio >= targets.median_peak_ratio,
          no_run_costlier: (p.worst_costlier?.pct ?? 0) <= targets.worst_costlier_pct,
        };
      }
      // Issue 20: runs over the trigger are those where direct's context exceeds it.
      const over = rows.filter((r) => r.variants.direct.input_peak > trigger);
      const ratios = over.map((r) => r.variants.direct.input_peak / r.variants[v].input_peak);
      p.over_trigger = over.length;
      p.peak_ratio_over_median = ratios.length ? median(ratios) : null;
      p.peak_ratio_over_min = ratios.length ? Math.min(...ratios) : null;
      p.cost_vs_direct = p.cost / total('direct', 'cost');
      p.cost_vs_clear = v !== 'clear-tool-uses' && has('clear-tool-uses') ? p.cost / total('clear-tool-uses', 'cost') : null;
      if (CONTEXTD_FOLDING.has(v)) {
        p.targets_20 = {
          peak_2x_over_trigger: ratios.length ? p.peak_ratio_over_min >= TARGETS_20.peak_ratio_over_trigger : null,
          cheaper_than_direct: p.cost_vs_direct < 1,
          cheaper_than_clear_tool_uses: p.cost_vs_clear === null ? null : p.cost_vs_clear < 1,
          no_request_refused: p.refused === 0,
        };
      }
    }
    out[v] = p;
  }
  // Issue 33: the isolated view against direct, and its median peak against the inherited view's.
  const iso = out[ISOLATED];
  if (targets33 && iso?.cost_saved_pct !== undefined) {
    const inh = out[INHERITED];
    iso.targets_33 = {
      cost_saved: iso.cost_saved_pct >= targets33.cost_saved_pct,
      no_run_costlier: (iso.worst_costlier?.pct ?? 0) <= targets33.worst_costlier_pct,
      tokens_fewer: iso.tokens_fewer_pct >= targets33.tokens_fewer_pct,
      median_peak_vs_inherited: inh?.median_peak_ratio !== undefined ? iso.median_peak_ratio >= inh.median_peak_ratio : null,
    };
  }
  return out;
}

const n0 = (x) => Math.round(x).toLocaleString('en-US');
const f1 = (x) => x.toFixed(1);
const x2 = (x) => (x === null || x === undefined ? '-' : `${x.toFixed(2)}x`);
const verdict = (t) => Object.entries(t).map(([k, ok]) => `${k} ${ok === null ? 'n/a' : ok ? 'PASS' : 'FAIL'}`).join(', ');

export function markdown(kind, rows, pooled, variants, targets, { trigger = 100000 } = {}) {
  const lines = [];
  const shown = variants.filter((v) => pooled[v]);
  const title = kind === 'single' ? 'Single runs' : 'Long sessions';
  lines.push(`## ${title} (${rows.length})`, '');
  lines.push('| variant | requests | input tokens (sum) | peak input | cache read | cache write | uncached | output | cost | branches | auto-fold steps / handles | results cleared (summed over requests) | fallbacks | refused |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const v of shown) {
    const p = pooled[v];
    lines.push(`| ${v} | ${p.requests} | ${n0(p.input_sum)} | ${n0(p.input_peak)} | ${n0(p.cache_read)} | ${n0(p.cache_write)} | ` +
      `${n0(p.uncached)} | ${n0(p.output)} | ${n0(p.cost)} | ${p.branches} | ${p.auto_fold_steps} / ${p.auto_folds} | ${p.cleared} | ${p.fallbacks} | ${p.refused} |`);
  }
  const compared = shown.filter((v) => v !== 'direct' && pooled[v].cost_saved_pct !== undefined);
  if (compared.length) {
    const over = pooled[compared[0]].over_trigger;
    lines.push('', `Issue 20: ${over} of ${rows.length} ${kind === 'single' ? 'runs' : 'sessions'} exceed the trigger ` +
      `(${n0(trigger)} input tokens, direct's peak). Targets: peak ≥${TARGETS_20.peak_ratio_over_trigger}x smaller than direct ` +
      'on each of those, cost below direct and below clear-tool-uses, no request refused.', '');
    lines.push('| variant | peak ratio over trigger (median / min) | cost vs direct | cost vs clear-tool-uses | refused | targets |');
    lines.push('|---|---:|---:|---:|---:|---|');
    for (const v of compared) {
      const p = pooled[v];
      lines.push(`| ${v} | ${x2(p.peak_ratio_over_median)} / ${x2(p.peak_ratio_over_min)} | ${x2(p.cost_vs_direct)} | ${x2(p.cost_vs_clear)} | ` +
        `${p.refused} | ${p.targets_20 ? verdict(p.targets_20) : '(peer or control)'} |`);
    }
    lines.push('', `Issue 17 (vs direct; targets: cost ≥${targets.cost_saved_pct}% lower, tokens ≥${targets.tokens_fewer_pct}% fewer, ` +
      `median peak ≥${targets.median_peak_ratio}x smaller, no run more than ${targets.worst_costlier_pct}% costlier):`, '');
    lines.push('| variant | cost saved | tokens fewer | median peak ratio | runs costlier | worst | targets |');
    lines.push('|---|---:|---:|---:|---:|---|---|');
    for (const v of compared) {
      const p = pooled[v];
      const worst = p.worst_costlier ? `${p.worst_costlier.id} +${f1(p.worst_costlier.pct)}%` : '-';
      lines.push(`| ${v} | ${f1(p.cost_saved_pct)}% | ${f1(p.tokens_fewer_pct)}% | ${p.median_peak_ratio.toFixed(2)}x | ${p.runs_costlier} | ${worst} | ` +
        `${p.targets ? verdict(p.targets) : '-'} |`);
    }
  }
  lines.push('', `| ${kind === 'single' ? 'run' : 'session'} | ${shown.map((v) => `${v} cost / peak`).join(' | ')} |`);
  lines.push(`|---|${shown.map(() => '---:').join('|')}|`);
  for (const r of rows) {
    lines.push(`| ${r.id} | ${shown.map((v) => (r.variants[v] ? `${n0(r.variants[v].cost)} / ${n0(r.variants[v].input_peak)}` : '-')).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

const pct = (x) => (x === null || x === undefined ? '-' : `${f1(x)}%`);
const worstOf = (p) => (p.worst_costlier ? `${p.worst_costlier.id} +${f1(p.worst_costlier.pct)}%` : '-');

// Issue 33's section of a kind: the branch views against direct (and the targets), the same with
// each cache-lifetime scenario (`ttlPooled`: name -> summarize of ttlRows), the cold parent
// prefix after a return, and the context a branch loses (pooled and per run).
export function markdown33(kind, rows, pooled, variants, targets33, ttlPooled = {}) {
  const shown = variants.filter((v) => pooled[v] && v !== 'direct' && pooled[v].cost_saved_pct !== undefined);
  if (!shown.length || (!pooled[ISOLATED] && !pooled[INHERITED] && !Object.keys(ttlPooled).length)) return '';
  const unit = kind === 'single' ? 'run' : 'session';
  const lines = [`### Issue 33: branch views (${kind === 'single' ? 'single runs' : 'long sessions'})`, ''];
  const view = (v) => (v === ISOLATED ? 'isolated (default)' : v === INHERITED ? 'inherited' : '-');
  lines.push(`Targets for ${ISOLATED} (the isolated view) against direct: cost ≥${targets33.cost_saved_pct}% lower pooled, no ${unit} more than ` +
    `${targets33.worst_costlier_pct}% costlier, tokens sent ≥${targets33.tokens_fewer_pct}% fewer, median peak ratio no worse than ${INHERITED}'s. ` +
    '"requests with the view": forwarded requests that open with contextd\'s `[contextd] Branch` message.', '');
  const table = (p0, label) => {
    lines.push(`| variant${label} | view | requests in branches | requests with the view | input in branches | input | cost | cost saved | tokens fewer | median peak ratio | median peak | ${unit}s costlier | worst | issue 33 targets |`);
    lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|');
    for (const v of shown) {
      const p = p0[v];
      if (!p || p.cost_saved_pct === undefined) continue;
      lines.push(`| ${v} | ${view(v)} | ${p.in_branch_requests} | ${p.view_requests} | ${n0(p.in_branch_input)} | ${n0(p.input_sum)} | ${n0(p.cost)} | ${pct(p.cost_saved_pct)} | ${pct(p.tokens_fewer_pct)} | ` +
        `${p.median_peak_ratio.toFixed(2)}x | ${n0(p.median_peak)} | ${p.runs_costlier} | ${worstOf(p)} | ${p.targets_33 ? verdict(p.targets_33) : '-'} |`);
    }
  };
  table(pooled, '');
  for (const [name, tp] of Object.entries(ttlPooled)) {
    const any = Object.values(pooled).find((p) => p.ttl?.[name])?.ttl[name];
    if (!any) continue;
    lines.push('', `With the cache lifetime modelled (${name}: entries expire ${any.ttl} s after their last use; each request takes ` +
      `${any.step_seconds} s plus its output tokens at the configured throughput; median replay time per ${unit}: ` +
      `${(any.median_seconds / 60).toFixed(1)} min for ${shown[0]}):`, '');
    table(tp, ` (${name})`);
    lines.push('', `Cold parent prefix (${name}): "after a return" = the first request after each branch_return; "cold" = it read less ` +
      'from the cache with expiry than without (the parent\'s prefix had expired during the branch and was written again).', '');
    lines.push(`| variant | cost, no expiry | cost, expiry | expiry adds | branches longer than ${any.ttl} s | longest branch (s) | requests after a return | cold | tokens re-written | their extra cost | share of the expiry's cost |`);
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const v of variants) {
      const t = pooled[v]?.ttl?.[name];
      if (!t) continue;
      lines.push(`| ${v} | ${n0(pooled[v].cost)} | ${n0(t.cost)} | ${n0(t.extra_cost)} (${pct(100 * t.extra_cost / pooled[v].cost)}) | ${t.branches_over_ttl} | ` +
        `${n0(t.branch_seconds_max)} | ${t.post_return} | ${t.post_return_cold} | ${n0(t.post_return_cold_tokens)} | ${n0(t.post_return_cold_cost)} | ` +
        `${t.extra_cost > 0 ? pct(100 * t.post_return_cold_cost / t.extra_cost) : '-'} |`);
    }
  }
  const lossy = variants.filter((v) => pooled[v]?.lost);
  if (lossy.length) {
    lines.push('', 'Context a branch loses (lost_context.mjs): per step run from a request sent while a branch was open, the paths and ' +
      'identifiers its command uses that the transcript the agent sent contains and the request the model got does not.', '');
    lines.push('| variant | steps in branches | steps with ≥1 lost item | share | items used | of which seen before | items lost | lost / seen |');
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const v of lossy) {
      const l = pooled[v].lost;
      lines.push(`| ${v} | ${l.steps} | ${l.steps_lost} | ${pct(l.steps ? 100 * l.steps_lost / l.steps : null)} | ${l.items} | ${l.seen} | ${l.lost} | ` +
        `${pct(l.seen ? 100 * l.lost / l.seen : null)} |`);
    }
    lines.push('', `| ${unit} | ${lossy.map((v) => `${v}: steps / with loss / items lost`).join(' | ')} |`);
    lines.push(`|---|${lossy.map(() => '---:').join('|')}|`);
    for (const r of rows) {
      lines.push(`| ${r.id} | ${lossy.map((v) => { const l = r.variants[v]?.lost; return l ? `${l.steps} / ${l.steps_lost} / ${l.lost}` : '-'; }).join(' | ')} |`);
    }
    // A few of each view's, the isolated view's first.
    const examples = [...lossy].sort((a, b) => (b === ISOLATED) - (a === ISOLATED))
      .flatMap((v) => rows.flatMap((r) => (r.variants[v]?.lost?.examples ?? []).map((e) => ({ v, id: r.id, ...e }))).slice(0, 4));
    if (examples.length) {
      lines.push('', 'Examples:', '');
      for (const e of examples) lines.push(`- ${e.v}, ${e.id}: \`${e.command.replace(/`/g, "'").replace(/\n/g, ' ').slice(0, 120)}\` lost ${e.lost.map((x) => `\`${x}\``).join(', ')}`);
    }
  }
  return lines.join('\n') + '\n';
}
