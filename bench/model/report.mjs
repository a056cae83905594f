// bench/model's numbers per variant, pooled over runs (or long sessions), the ratios the targets of
// issues 17 and 20 name, and their markdown. Pure: no I/O.
import { BRANCHING, AUTO_FOLD } from './conversation.mjs';

// Issue 17's targets (folding by branches), single runs and long sessions of --session-runs runs.
export const TARGETS = Object.freeze({
  single: { cost_saved_pct: 10, tokens_fewer_pct: 30, median_peak_ratio: 1.4, worst_costlier_pct: 10 },
  session: { cost_saved_pct: 25, tokens_fewer_pct: 45, median_peak_ratio: 1.9, worst_costlier_pct: 0 },
});
// Issue 20's: on runs whose context (direct's peak) exceeds the trigger, a peak at least 2x smaller
// than direct's; cost lower than direct and than the clear_tool_uses simulation; no request refused.
export const TARGETS_20 = Object.freeze({ peak_ratio_over_trigger: 2 });

const ISSUE17_CHECKED = new Set(['create-own-turn', 'create-first-turn']);
const CONTEXTD_FOLDING = new Set([...BRANCHING, ...AUTO_FOLD]);

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return 0;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Pooled numbers per variant, ratios vs direct (and vs clear-tool-uses) and the targets checked.
// `trigger`: the auto-fold / clear_tool_uses trigger the run used (input tokens).
export function summarize(rows, variants, targets, { trigger = 100000 } = {}) {
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
    };
    for (const x of list) for (const [k, n] of Object.entries(x.folds_skipped ?? {})) p.folds_skipped[k] = (p.folds_skipped[k] ?? 0) + n;
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
