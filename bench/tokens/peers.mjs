#!/usr/bin/env node
// The npm peers of bench/tokens: gpt-tokenizer@4.0.0 (pure JS) and tiktoken (OpenAI's Rust core as
// WASM), pinned in tools/npm/tokens. Single thread, same input files as tokens_bench.
//   node peers.mjs corpus FILE [REPEATS]    count throughput, both encodings, both peers
//   node peers.mjs worst FILE PEER ENC      count one file with one peer (run under `timeout`)
// Prints lines in tokens_bench's format; cpu_s is process.cpuUsage() (user + system).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(root, 'tools', 'npm', 'tokens', 'package.json'));

// Special-token text counts as plain text, as contextd's Count does.
const plain = { allowedSpecial: new Set(), disallowedSpecial: new Set() };

function counter(peer, enc) {
  if (peer === 'gpt-tokenizer') {
    const m = require(`gpt-tokenizer/cjs/encoding/${enc}`);
    return (text) => m.countTokens(text, plain);
  }
  const { get_encoding } = require('tiktoken');
  const e = get_encoding(enc);
  return (text) => e.encode(text, [], []).length;
}

function time(fn) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const result = fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const c = process.cpuUsage(c0);
  return { result, wall, cpu: (c.user + c.system) / 1e6 };
}

const [mode, file, a, b] = process.argv.slice(2);
const bytes = readFileSync(file);
const text = bytes.toString('utf8');
if (mode === 'corpus') {
  const repeats = Number(a || 1);
  for (const peer of ['gpt-tokenizer', 'tiktoken']) {
    for (const enc of ['o200k_base', 'cl100k_base']) {
      const count = counter(peer, enc);
      let best = { wall: Infinity, cpu: Infinity, result: 0 };
      for (let r = 0; r < repeats; r++) {
        const t = time(() => count(text));
        best = { wall: Math.min(best.wall, t.wall), cpu: Math.min(best.cpu, t.cpu), result: t.result };
      }
      console.log(`${peer} ${enc} bytes=${bytes.length} tokens=${best.result} wall_s=${best.wall.toFixed(3)} ` +
        `cpu_s=${best.cpu.toFixed(3)} MBps_wall=${(bytes.length / 1e6 / best.wall).toFixed(1)} ` +
        `MBps_cpu=${(bytes.length / 1e6 / best.cpu).toFixed(1)}`);
    }
  }
} else if (mode === 'worst') {
  const count = counter(a, b);
  const t = time(() => count(text));
  console.log(`${a} worst ${b} bytes=${bytes.length} tokens=${t.result} wall_s=${t.wall.toFixed(3)} cpu_s=${t.cpu.toFixed(3)}`);
} else {
  console.error('usage: peers.mjs corpus FILE [REPEATS] | worst FILE PEER ENCODING');
  process.exit(2);
}
