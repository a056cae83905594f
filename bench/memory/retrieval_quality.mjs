// Writes the labelled replay set that retrieval_quality (the C++ scorer) reads: every recorded run
// of ../shared/workloads/*.jsonl cut into the replay benchmark's segments (the same rule, imported
// from ../replay/segment.mjs), each turned into the BranchTrace fields a finished branch would give
// the ReasoningBank, plus the repository files its commands touch (the labels' raw material).
// Deterministic: the same workloads give the same file, byte for byte.
//   node bench/memory/retrieval_quality.mjs [--workloads DIR] --out FILE
// Prints "skipped: ..." and exits 0 (writing nothing) when DIR holds no *.jsonl.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readTrajectories, recordedCalls } from '../replay/trajectory.mjs';
import { segment, summaryText } from '../replay/segment.mjs';

const here = new URL('.', import.meta.url).pathname;
// The description a branch would get: the first sentence of the agent's intent, at most this many
// words; its prompt: the whole intent plus the issue's title, at most PROMPT_WORDS words.
const DESCRIPTION_WORDS = 20;
const PROMPT_WORDS = 300;

function parseArgs(argv) {
  const opts = { workloads: resolve(here, '../../../shared/workloads'), out: null };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    if (!['workloads', 'out'].includes(key) || i + 1 >= argv.length) {
      throw new Error(`usage: retrieval_quality.mjs [--workloads DIR] --out FILE (bad: ${argv[i]})`);
    }
    opts[key] = argv[++i];
  }
  if (!opts.out) throw new Error('--out is required');
  return opts;
}

const collapse = (text) => String(text ?? '').replace(/\s+/g, ' ').trim();
const words = (text, max) => collapse(text).split(' ').filter(Boolean).slice(0, max).join(' ');

// The first sentence of `text` (up to ". ", "! ", "? " or a line break).
function firstSentence(text) {
  const t = String(text ?? '').trim();
  const m = t.match(/^[\s\S]*?(?:[.!?](?=\s|$)|\n)/);
  return collapse(m ? m[0] : t);
}

// The issue's title: the first non-empty line after mini-swe-agent's "Consider the following PR
// description:" (the whole task's first line if that marker is missing).
function issueTitle(task) {
  const text = String(task ?? '');
  const at = text.indexOf('Consider the following PR description:');
  const rest = at >= 0 ? text.slice(at).split('\n').slice(1) : text.split('\n');
  return collapse(rest.find((l) => l.trim() && !l.startsWith('<')) ?? '');
}

// Repository files a command touches: path-like words with a '/' and a file extension, relative
// to the checkout (/testbed/ and ./ dropped; other absolute paths are not the repository's). The
// script a `python` runs is not counted: running tests/runtests.py says nothing about the topic.
export function touchedFiles(command) {
  const text = String(command ?? '').replace(/(python[0-9.]*)\s+(?!-)\S+/g, '$1');
  const out = new Set();
  for (const m of text.matchAll(/[A-Za-z0-9_.\/-]+/g)) {
    const w = m[0].replace(/^\/testbed\//, '').replace(/^(\.\/)+/, '').replace(/[.\/]+$/, '');
    if (w.startsWith('/') || w.startsWith('-') || !w.includes('/')) continue;
    if (!/\.[A-Za-z][A-Za-z0-9]{0,4}$/.test(w)) continue;
    out.add(w);
  }
  return [...out];
}

const returnCode = (observation) => {
  const m = String(observation).match(/^<returncode>(-?\d+)<\/returncode>/);
  return m ? Number(m[1]) : 0;
};

function segmentsOf(trajectory) {
  const calls = recordedCalls(trajectory);
  const { segments } = segment(calls);
  const title = issueTitle(trajectory.task);
  return segments.map((s, k) => {
    const intent = summaryText(calls[s.start].message);
    const files = new Set();
    const events = [];
    for (let i = s.start; i < s.end; i++) {
      for (const f of touchedFiles(calls[i].command)) files.add(f);
      // The agent's one tool is `bash`: that is the label contextd would record.
      events.push({ kind: 'tool_call', label: 'bash', text: JSON.stringify({ command: calls[i].command }),
        is_error: false });
      events.push({ kind: 'tool_result', label: 'bash', text: calls[i].observation,
        is_error: returnCode(calls[i].observation) !== 0 });
    }
    const next = calls[s.end];
    return {
      id: `${trajectory.meta?.instance_id ?? trajectory.id}#${k}`,
      run: String(trajectory.id),
      repo: String(trajectory.meta?.repo ?? ''),
      exit_status: String(trajectory.meta?.exit_status ?? ''),
      kind: s.kind,
      start: s.start,
      end: s.end,
      description: words(firstSentence(intent), DESCRIPTION_WORDS),
      prompt: words(`${collapse(intent)} Issue: ${title}`, PROMPT_WORDS),
      summary: next ? summaryText(next.message) : '',
      files: [...files].sort(),
      events,
    };
  });
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const files = existsSync(opts.workloads)
    ? readdirSync(opts.workloads).filter((f) => f.endsWith('.jsonl')).sort() : [];
  if (files.length === 0) {
    console.log(`skipped: no *.jsonl in ${opts.workloads}`);
    return;
  }
  const runs = [];
  const segments = [];
  for (const file of files) {
    for (const t of readTrajectories(join(opts.workloads, file))) {
      const segs = segmentsOf(t);
      runs.push({ id: String(t.id), repo: String(t.meta?.repo ?? ''),
        exit_status: String(t.meta?.exit_status ?? ''), calls: recordedCalls(t).length,
        segments: segs.length });
      segments.push(...segs);
    }
  }
  writeFileSync(opts.out, JSON.stringify({ workloads: files, runs, segments }));
  console.log(`wrote ${opts.out}: ${runs.length} runs, ${segments.length} segments`);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(here, 'retrieval_quality.mjs')) main();
