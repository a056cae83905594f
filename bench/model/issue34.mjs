// bench/model's issue 34 section: contextd's auto-fold under thinking (model_gateway.auto_fold.thinking
// remove | wait | off) on long sessions, against `direct` and Anthropic's clear_tool_uses simulation:
// cost, tokens sent, peak, over the sessions whose direct peak passes the trigger (the target
// population) and over all; contextd's step outcomes and the thinking it removed; what the caching
// double's thinking rules refused or degraded; the targets. Pure: no I/O.
import { AUTO_FOLD, AUTO_FOLD_THINKING } from './conversation.mjs';
import { median } from './report.mjs';

// Issue 34's targets for the auto-fold variants: cost at least `cost_saved_pct` lower than direct
// pooled over the sessions that pass the trigger; no session (of all) costlier than direct; no
// request refused; no request whose thinking the double turned off (a tool loop that lost its
// thinking) or dropped.
export const TARGETS_34 = Object.freeze({ cost_saved_pct: 25, worst_costlier_pct: 0, refused: 0, thinking_invalid_requests: 0 });
// contextd_model_auto_fold_steps_total's outcomes, in the order the table shows them.
export const OUTCOMES = Object.freeze(['folded', 'tool_loop', 'below_payback', 'thinking', 'below_clear_at_least', 'below_trigger', 'no_trail']);
const COUNTERS = ['auto_folds', 'auto_fold_tokens', 'thinking_removed', 'thinking_removed_tokens', 'refused', 'degraded', 'thinking_dropped',
  'thinking_invalid_requests', 'fallbacks'];

const sumOf = (list, f) => list.reduce((a, x) => a + (x[f] ?? 0), 0);

// Variant `v` over `rows` against direct and clear-tool-uses on the same rows.
function population(rows, v) {
  const list = rows.map((r) => r.variants[v]);
  const p = {
    sessions: list.length, requests: sumOf(list, 'requests'), input_sum: sumOf(list, 'input_sum'),
    input_peak: Math.max(0, ...list.map((x) => x.input_peak)), cost: sumOf(list, 'cost'),
  };
  if (!list.length || v === 'direct') return p;
  const direct = rows.map((r) => r.variants.direct);
  p.cost_saved_pct = 100 * (1 - p.cost / sumOf(direct, 'cost'));
  p.tokens_fewer_pct = 100 * (1 - p.input_sum / sumOf(direct, 'input_sum'));
  p.median_peak_ratio = median(rows.map((r) => r.variants.direct.input_peak / r.variants[v].input_peak));
  const costlier = rows.map((r) => ({ id: r.id, pct: 100 * (r.variants[v].cost / r.variants.direct.cost - 1) }))
    .filter((x) => x.pct > 0).sort((a, b) => b.pct - a.pct);
  p.sessions_costlier = costlier.length;
  p.worst_costlier = costlier[0] ?? null;
  if (v !== 'clear-tool-uses' && rows.every((r) => r.variants['clear-tool-uses'])) {
    p.cost_saved_vs_clear_pct = 100 * (1 - p.cost / sumOf(rows.map((r) => r.variants['clear-tool-uses']), 'cost'));
  }
  return p;
}

// The counters of variant `v` summed over `rows`: contextd's (steps by outcome, handles, thinking
// removed) and the double's (refused, degraded, dropped).
function counters(rows, v) {
  const list = rows.map((r) => r.variants[v]);
  const out = Object.fromEntries(COUNTERS.map((f) => [f, sumOf(list, f)]));
  out.outcomes = {};
  for (const x of list) for (const [k, n] of Object.entries(x.auto_fold_outcomes ?? {})) out.outcomes[k] = (out.outcomes[k] ?? 0) + n;
  return out;
}

// The thinking mode a variant runs contextd with ('default': contextd's; null: no auto-fold).
export const thinkingMode = (v) => AUTO_FOLD_THINKING[v] ?? (AUTO_FOLD.has(v) ? 'default' : null);

// Issue 34's numbers of the session rows, for the variants run on every row; null without direct.
// `trigger`: the run's trigger (input tokens); a session passes it when direct's peak exceeds it.
export function summarize34(rows, variants, { trigger = 100000 } = {}) {
  const shown = variants.filter((v) => rows.length && rows.every((r) => r.variants[v]));
  if (!shown.includes('direct')) return null;
  const over = rows.filter((r) => r.variants.direct.input_peak > trigger);
  const out = { trigger, sessions: rows.length, over_trigger: over.map((r) => r.id), targets: TARGETS_34, variants: {} };
  for (const v of shown) {
    const x = { thinking: thinkingMode(v), all: population(rows, v), over: population(over, v), counters: counters(rows, v) };
    if (AUTO_FOLD.has(v)) {
      x.targets = {
        cost_saved_over_trigger: over.length ? x.over.cost_saved_pct >= TARGETS_34.cost_saved_pct : null,
        no_session_costlier: (x.all.worst_costlier?.pct ?? 0) <= TARGETS_34.worst_costlier_pct,
        no_request_refused: x.counters.refused <= TARGETS_34.refused,
        no_request_degraded: x.counters.thinking_invalid_requests <= TARGETS_34.thinking_invalid_requests,
      };
    }
    out.variants[v] = x;
  }
  return out;
}

const n0 = (x) => Math.round(x).toLocaleString('en-US');
const pct = (x) => (x === null || x === undefined ? '-' : `${x.toFixed(1)}%`);
const verdict = (t) => Object.entries(t).map(([k, ok]) => `${k} ${ok === null ? 'n/a' : ok ? 'PASS' : '**FAIL**'}`).join(', ');

function populationTable(s, which) {
  const lines = ['| variant | thinking | requests | input tokens (sum) | peak | cost | cost saved vs direct | cost saved vs clear-tool-uses | ' +
    'tokens fewer vs direct | median peak ratio | sessions costlier (worst) |', '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|'];
  for (const [v, x] of Object.entries(s.variants)) {
    const p = x[which];
    const worst = p.worst_costlier ? ` (${p.worst_costlier.id.split(':')[0]} +${p.worst_costlier.pct.toFixed(1)}%)` : '';
    lines.push(`| ${v} | ${x.thinking ?? '-'} | ${n0(p.requests)} | ${n0(p.input_sum)} | ${n0(p.input_peak)} | ${n0(p.cost)} | ` +
      `${pct(p.cost_saved_pct)} | ${pct(p.cost_saved_vs_clear_pct)} | ${pct(p.tokens_fewer_pct)} | ` +
      `${p.median_peak_ratio === undefined ? '-' : `${p.median_peak_ratio.toFixed(2)}x`} | ${p.sessions_costlier ?? '-'}${worst} |`);
  }
  return lines;
}

// Issue 34's markdown section (long sessions) from summarize34's result.
export function markdown34(rows, s, { trigger = s?.trigger ?? 100000 } = {}) {
  if (!s || !Object.keys(s.variants).some((v) => AUTO_FOLD.has(v))) return '';
  const t = s.targets;
  const lines = ['### Issue 34: auto-fold under thinking (long sessions)', '',
    `${s.over_trigger.length} of ${s.sessions} sessions pass the trigger (direct's peak over ${n0(trigger)} input tokens). ` +
    `Targets for the auto-fold variants: cost ≥${t.cost_saved_pct}% lower than direct pooled over the sessions that pass the trigger, ` +
    'no session costlier than direct, no request refused, no request whose thinking the caching double turned off (a tool loop ' +
    'that lost its thinking: "degraded") or dropped.', ''];
  if (s.over_trigger.length) lines.push(`Sessions that pass the trigger (${s.over_trigger.length}):`, '', ...populationTable(s, 'over'), '');
  lines.push(`All sessions (${s.sessions}):`, '', ...populationTable(s, 'all'), '');
  lines.push('contextd\'s auto-fold steps by outcome (`contextd_model_auto_fold_steps_total`), results folded (handles), thinking blocks ' +
    'removed, and the double\'s verdicts, summed over all sessions:', '');
  lines.push(`| variant | thinking | ${OUTCOMES.join(' | ')} | handles | thinking removed (blocks / tokens) | refused | degraded | ` +
    'thinking blocks dropped | issue 34 targets |');
  lines.push(`|---|---|${OUTCOMES.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---|`);
  for (const [v, x] of Object.entries(s.variants)) {
    const c = x.counters;
    lines.push(`| ${v} | ${x.thinking ?? '-'} | ${OUTCOMES.map((o) => c.outcomes[o] ?? 0).join(' | ')} | ${c.auto_folds} | ` +
      `${c.thinking_removed} / ${n0(c.thinking_removed_tokens)} | ${c.refused} | ${c.degraded} | ${c.thinking_dropped} | ` +
      `${x.targets ? verdict(x.targets) : '(peer)'} |`);
  }
  const shown = Object.keys(s.variants).filter((v) => v !== 'direct');
  lines.push('', `| session | over the trigger | direct cost / peak | ${shown.map((v) => `${v} cost (saved) / peak`).join(' | ')} |`);
  lines.push(`|---|---|---:|${shown.map(() => '---:').join('|')}|`);
  for (const r of rows) {
    const d = r.variants.direct;
    if (!d) continue;
    const cell = (v) => {
      const x = r.variants[v];
      return x ? `${n0(x.cost)} (${pct(100 * (1 - x.cost / d.cost))}) / ${n0(x.input_peak)}` : '-';
    };
    lines.push(`| ${r.id.split(':')[0]} | ${s.over_trigger.includes(r.id) ? 'yes' : 'no'} | ${n0(d.cost)} / ${n0(d.input_peak)} | ` +
      `${shown.map(cell).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}
