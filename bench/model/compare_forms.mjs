// Puts two bench/model results.json side by side, one per conversation form (issue 31): per kind
// and variant, the pooled numbers of each form and each against its own form's `direct`.
//
//   node bench/model/compare_forms.mjs MINIMAL/results.json CLAUDE_CODE/results.json [--title T]
//
// Prints markdown. Variants missing from one form are shown as '-'.
import { readFileSync } from 'node:fs';

const n0 = (x) => Math.round(x).toLocaleString('en-US');
const pct = (x) => (x === undefined ? '' : `${x.toFixed(1)}%`);
const ratio = (x) => (x === undefined ? '' : `${x.toFixed(2)}x`);

// One form's cells for a variant: requests, input sum, peak, cost, cost saved, tokens fewer,
// median peak ratio (the last three against that form's direct).
function cells(p) {
  if (!p) return ['-', '-', '-', '-', '-', '-', '-'];
  return [n0(p.requests), n0(p.input_sum), n0(p.input_peak), n0(p.cost), pct(p.cost_saved_pct), pct(p.tokens_fewer_pct), ratio(p.median_peak_ratio)];
}

function folds(p) {
  if (!p) return '-';
  const skipped = Object.entries(p.folds_skipped ?? {}).map(([k, n]) => `${k} ${n}`).join(', ');
  return `${p.branches} / ${p.folds ?? 0}${skipped ? ` (skipped: ${skipped})` : ''}`;
}

export function compare(minimal, claudeCode) {
  const lines = [];
  for (const kind of ['single', 'session']) {
    const a = minimal[kind]?.pooled;
    const b = claudeCode[kind]?.pooled;
    if (!a && !b) continue;
    const variants = [...new Set([...(minimal.variants ?? []), ...(claudeCode.variants ?? [])])].filter((v) => a?.[v] || b?.[v]);
    const n = (minimal[kind] ?? claudeCode[kind]).rows.length;
    lines.push(`### ${kind === 'single' ? `Single runs (${n})` : `Long sessions of ${minimal.session_runs ?? claudeCode.session_runs} runs (${n})`}`, '');
    const head = ['requests', 'input sum', 'peak', 'cost', 'cost saved', 'tokens fewer', 'median peak'];
    lines.push(`| variant | ${head.map((h) => `minimal ${h}`).join(' | ')} | ${head.map((h) => `claude-code ${h}`).join(' | ')} |`);
    lines.push(`|---|${head.map(() => '---:').join('|')}|${head.map(() => '---:').join('|')}|`);
    for (const v of variants) lines.push(`| ${v} | ${cells(a?.[v]).join(' | ')} | ${cells(b?.[v]).join(' | ')} |`);
    lines.push('', '| variant | minimal: branches / folded | claude-code: branches / folded | claude-code: system messages (nudges) | refused (minimal / claude-code) |');
    lines.push('|---|---|---|---:|---:|');
    for (const v of variants) {
      lines.push(`| ${v} | ${folds(a?.[v])} | ${folds(b?.[v])} | ${b?.[v] ? n0(b[v].system_messages ?? 0) : '-'} | ${a?.[v]?.refused ?? '-'} / ${b?.[v]?.refused ?? '-'} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const [minimalPath, ccPath] = process.argv.slice(2);
  if (!minimalPath || !ccPath) {
    process.stderr.write('usage: node bench/model/compare_forms.mjs MINIMAL/results.json CLAUDE_CODE/results.json\n');
    process.exit(2);
  }
  process.stdout.write(compare(JSON.parse(readFileSync(minimalPath, 'utf8')), JSON.parse(readFileSync(ccPath, 'utf8'))));
}
