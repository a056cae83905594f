#!/usr/bin/env node
// Generates tests/tokens/goldens.tsv: token ids from OpenAI's tiktoken (npm `tiktoken`, the Rust
// core compiled to WASM, so its split regex is Rust's) for every case below, for o200k_base and
// cl100k_base, with special tokens allowed and not. The C++ golden test reads the file; it needs
// no node. Run after scripts/install-deps.sh:  node tests/tokens/make_goldens.mjs
//
// Line format (tab-separated): name, encoding, allow_special (0|1), input, ids (space-separated).
// input is "hex:<bytes in hex>" or "rep:<hex unit>:<count>" (the unit repeated count times).
// Raw inputs that are not valid UTF-8 are decoded with U+FFFD replacement first (WHATWG, checked
// against Python's bytes.decode("utf-8", "replace") below), as contextd does.
import { createRequire } from 'node:module';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const require = createRequire(join(root, 'tools', 'npm', 'tokens', 'package.json'));
const { get_encoding } = require('tiktoken');

const cases = [];  // {name, bytes: Buffer, rep?: {unit, count}}
const add = (name, s) => cases.push({ name, bytes: Buffer.isBuffer(s) ? s : Buffer.from(s, 'utf8') });
const addRep = (name, unit, count) =>
  cases.push({ name, bytes: Buffer.from(unit.repeat(count), 'utf8'), rep: { unit: Buffer.from(unit, 'utf8'), count } });

// Prose and contractions.
add('prose_en', 'The quick brown fox jumps over the lazy dog. It\'s 5 o\'clock; we\'re late, aren\'t we? ' +
  'I\'LL say it: THEY\'VE done what you\'d expect — and she\'s "fine".\nNew paragraph…  Two spaces.\n');
add('prose_fr_de', 'Où est la bibliothèque ? L\'été dernier, nous étions à Zürich. Größenwahnsinnige Straße; ÆØÅ æøå.');
add('contractions', "'s 'S 'ſ 'LL 'Re 'rE 've 'VE 'm 'M 'd 'D 't 'T x'sy rock'n'roll 'll've don't DON'T ' s ''s '");
add('contractions_long_s', "heſ'ſ ſtate 'ſſ Kelvin'K");
add('case_runs', 'HTTPServer iPhone XMLHttpRequest getHTTPResponseCode ǅungla ǈ ʰello ʰ カA カカAA ABCdef aBC ΑθήναΣ МоскваЁ ქართული ႠႡ');
add('code_cpp', '#include <vector>\n\nint main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n' +
  '\tfor (auto& x : v) x *= 2;  // double\n  return v.size() > 2 ? 0 : 1;\n}\n');
add('code_python', 'def f(x):\n    """Doc."""\n    if x:\n        return [i**2 for i in range(10)]\n\n\n    return None\r\n');
add('json', JSON.stringify({ id: 123, name: 'contextd', tags: ['a', 'b'], nested: { ok: true, v: 3.14e-10, s: 'q"uote\\n' } }, null, 2));
add('json_compact', '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":"/etc/hosts"}}}');
add('cjk_zh', '自然语言处理是人工智能的一个分支。我们今天去北京，好吗？「引用」（括号）');
add('cjk_ja', 'これは日本語の文章です。カタカナとひらがな、そして漢字。ｶﾀｶﾅ　全角スペース');
add('cjk_ko', '안녕하세요, 세계! 한국어 텍스트입니다.');
add('arabic', 'مرحبا بالعالم! هذا نصّ عربيّ مع تشكيل: بِسْمِ اللَّهِ. الأرقام ١٢٣٤٥');
add('hebrew', 'שָׁלוֹם עוֹלָם');
add('devanagari', 'नमस्ते दुनिया। हिन्दी में लिखा गया पाठ, क्षत्रिय, ज्ञान। ०१२३');
add('thai', 'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ');
add('emoji', '👨‍👩‍👧‍👦 family 👍🏽 👩🏾‍💻 🏳️‍🌈 🇺🇸🇫🇷 1️⃣ #️⃣ ❤️ 😀😃😄 ☺ ✨emoji✨ 🤖!');
add('combining', 'e\u0301 A\u0301B \u0301ABC .\u0301 x\u0301\u0302\u0303y Z̤̮͎a̴̡l̷g̸o ño\u0303 \u0301 \u0301a \u20dd abc\u0301DEF \u0903\u093e');
add('marks_prefix', '\u0301\u0301AB a\u0301\u0301 \u0301 \u0301x \u0301X1 .\u0301A \u0301\'s A\u0301\'S');
add('numbers', '1 12 123 1234 12345 1234567 3.14159 -42 1,000,000 0x1F 1e10 ١٢٣٤ ⅫⅯ ½¾ ²³ 𝟙𝟚𝟛 ①②③ 2024-01-02T03:04:05Z');
add('long_words', 'pneumonoultramicroscopicsilicovolcanoconiosis Donaudampfschifffahrtsgesellschaftskapitän ' +
  'supercalifragilisticexpialidocious antidisestablishmentarianism ' +
  'aVeryLongCamelCaseIdentifierNameThatKeepsGoingAndGoingForeverAndEver snake_case_identifier_name');
add('urls_paths', 'https://example.com/a/b/c?x=1&y=2#frag /usr/include//stdio.h C:\\Windows\\System32 ../../x ///// //\n//\r\n/');
add('base64_hex', 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg== ' +
  'deadbeefcafebabe0123456789abcdef sha256:446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d');
add('punct_runs', '!!!??? ... --- *** ((())) [[]] {{}} <<>> :: ;; ,, "" \'\' `` ~~ @@ ## $$ %% ^^ && || \\\\ ' +
  '?!\n\n?!\r\n.//\n/ .\u2014\u2014 \u00bf\u00a1 \u00ab\u00bb');

// Whitespace: every White_Space code point and some lookalikes, in runs of 1..3 between letters,
// before punctuation and numbers, and at the end.
const ws = ['\t', '\n', '\u000b', '\u000c', '\r', ' ', '\u0085', '\u00a0', '\u1680', '\u2000', '\u2001',
  '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200a', '\u2028',
  '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u180e', '\u200b', '\u001c', '\u001f'];
for (const w of ws) {
  const hex = w.codePointAt(0).toString(16).padStart(4, '0');
  add(`ws_${hex}`, `a${w}b a${w}${w}b a${w}${w}${w}b ${w}x ${w}${w}1 ${w}. .${w} ${w}'s x${w}${w}`);
  add(`ws_${hex}_end`, `end${w}${w}`);
}
add('ws_mixed', ' \t \n \r\n\r\n  \n\t\tfoo\n\n\n   bar   \r  \r\n \u00a0\u0085\u3000x\n \n  ');
add('crlf', 'line one\r\nline two\r\n\r\n\r\nline three\r\rcr only\n\rreverse\r\n');
add('leading_trailing', '   leading and trailing   ');
add('only_ws', '     ');
add('only_newlines', '\n\n\n\n');
add('empty', '');

// Special tokens and lookalikes.
add('specials', '<|endoftext|> hello<|endoftext|>world <|endofprompt|> <|fim_prefix|>a<|fim_middle|>b<|fim_suffix|>');
add('special_lookalikes', '<|endoftext| <|endoftext|>> < |endoftext|> <|ENDOFTEXT|> <||> <|im_start|>user<|im_end|> ' +
  '<|<|endoftext|>|> <|endoftext|><|endoftext|> x<|endoftext');

// Invalid UTF-8.
const B = (...xs) => Buffer.from(xs);
add('invalid_lone_cont', Buffer.concat([Buffer.from('a'), B(0x80), Buffer.from('b'), B(0xbf, 0xbf)]));
add('invalid_overlong', Buffer.concat([B(0xc0, 0xaf), Buffer.from(' '), B(0xe0, 0x80, 0xaf), Buffer.from(' '), B(0xf0, 0x80, 0x80, 0xaf), B(0xc1, 0xbf)]));
add('invalid_truncated', Buffer.concat([Buffer.from('euro '), B(0xe2, 0x82), Buffer.from(' x '), B(0xf0, 0x9f, 0x98), Buffer.from('y'), B(0xe2)]));
add('invalid_surrogates', Buffer.concat([B(0xed, 0xa0, 0x80), Buffer.from('z'), B(0xed, 0xbf, 0xbf), B(0xed, 0x9f, 0xbf)]));
add('invalid_too_big', Buffer.concat([B(0xf4, 0x90, 0x80, 0x80), B(0xf5, 0x80), B(0xff, 0xfe), Buffer.from('ok'), B(0xf4, 0x8f, 0xbf, 0xbf)]));
add('invalid_mixed_text', Buffer.concat([Buffer.from('Hello '), B(0xff), Buffer.from('wörld'), B(0xc3), Buffer.from('\n'), B(0xe6, 0x97), Buffer.from('日本')]));
add('invalid_in_special', Buffer.concat([Buffer.from('<|endof'), B(0x80), Buffer.from('text|> <|endoftext|>'), B(0xfe)]));

// Long and repetitive.
addRep('rep_a_100k', 'a', 100000);
addRep('rep_space_5k', ' ', 5000);
addRep('rep_newline_3k', '\n', 3000);
addRep('rep_digits_10k', '7', 10000);
addRep('rep_cjk_5k', '语', 5000);
addRep('rep_emoji_2k', '😀', 2000);
addRep('rep_abc_upper_20k', 'aB', 10000);
addRep('rep_punct_10k', '=-', 5000);

// Deterministic random strings over a pool of interesting characters.
let seed = 0x2545f491;
const rnd = (n) => { seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0; return seed % n; };
const pool = ['a', 'b', 'z', 'A', 'Z', 'é', 'É', 'ǅ', 'ʰ', 'カ', '语', 'ß', 'Σ', 'σ', 'ſ', '\u0301', '\u0903',
  '\u20dd', '0', '7', '١', 'Ⅻ', '½', ' ', ' ', ' ', '\t', '\n', '\r', '\u00a0', '\u0085', '\u3000', '\u2028',
  '\ufeff', '\u200b', '\'', '\'', 's', 't', 'l', 'r', 'e', 'v', 'd', 'm', 'S', 'L', '.', ',', '!', '/', '-',
  '<|endoftext|>', '<|', '|>', '😀', '👍🏽', '\u200d', '"', '{', '}', '_', '$'];
for (let i = 0; i < 400; i++) {
  const len = 1 + rnd(i < 300 ? 24 : 200);
  let s = '';
  for (let k = 0; k < len; k++) s += pool[rnd(pool.length)];
  add(`random_${i}`, s);
}
// Random lowercase letters without whitespace: one long piece, the merge worst case.
{
  let s = '';
  for (let k = 0; k < 20000; k++) s += String.fromCharCode(97 + rnd(26));
  add('random_letters_20k', s);
}

// Real files available on the machine that made the goldens (their bytes go into the golden file).
for (const [name, path, limit] of [['gpl3', '/usr/share/common-licenses/GPL-3', 40000],
  ['stdio_h', '/usr/include/stdio.h', 30000]]) {
  if (existsSync(path)) add(`file_${name}`, readFileSync(path).subarray(0, limit));
}

// Python's replacement semantics are the reference; check that WHATWG's decoder agrees.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
const toText = (bytes) => decoder.decode(bytes);
for (const c of cases) {
  if (!c.name.startsWith('invalid_')) continue;
  const py = execFileSync('python3', ['-c',
    'import sys; sys.stdout.buffer.write(sys.stdin.buffer.read().decode("utf-8","replace").encode("utf-8"))'],
  { input: c.bytes });
  if (!py.equals(Buffer.from(toText(c.bytes), 'utf8'))) throw new Error(`decoders disagree on ${c.name}`);
}

const lines = [];
for (const encName of ['o200k_base', 'cl100k_base']) {
  const enc = get_encoding(encName);
  for (const c of cases) {
    const text = toText(c.bytes);
    const input = c.rep ? `rep:${c.rep.unit.toString('hex')}:${c.rep.count}` : `hex:${c.bytes.toString('hex')}`;
    // With allow_special the ids differ only where special-token text occurs.
    for (const allow of text.includes('<|') ? [0, 1] : [0]) {
      const ids = allow ? enc.encode(text, 'all') : enc.encode(text, [], []);
      lines.push([c.name, encName, allow, input, Array.from(ids).join(' ')].join('\t'));
    }
  }
  enc.free();
}
writeFileSync(join(here, 'goldens.tsv'), lines.join('\n') + '\n');
console.log(`wrote ${lines.length} golden lines for ${cases.length} cases`);
