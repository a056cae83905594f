// bench/model's overhead benchmark: what contextd's model gateway adds to one Messages request of
// a ~100k-token Claude Code conversation, side by side with the same request sent straight to the
// provider. The provider is a double (node:http, 127.0.0.1) that answers at once, so every
// microsecond between the two paths is contextd's: parsing, folding, scrubbing, counting, saving
// its decisions, and relaying. See OVERHEAD.md.
//
//   node bench/model/overhead.mjs --binary PATH --out DIR [--n 200] [--warmup 20] [--lane 10]
//        [--seed 1] [--modes steady,cold,stream,floor,branch] [--gap-ms 10]
//
// Modes (each measured direct and through contextd, interleaved request by request, one request
// in flight, keep-alive connections on both hops):
// - steady: an agent's loop. A lane is one conversation id; its first request (150 - 2 * lane
//   messages, not measured) is new to contextd, and each of the next 2 * lane requests adds an
//   assistant tool_use + user tool_result pair to a prefix contextd has seen, up to 150 + 2 * lane
//   messages; lanes follow one another until N requests, so the median request has 150 messages
//   (~100k tokens).
// - cold: the 150-message conversation under a new conversation id each time (all blocks new).
// - stream: steady, with `stream: true`; time to the first SSE event (message_start).
// - floor: steady, but contextd gets the request at /v1/bench-floor, which its gateway forwards
//   untouched (no parse, fold, scrub, count or save): the relay's own cost, for comparison.
// - branch (issue 33; not in the default modes, needs tools/npm/e2e): steady INSIDE an open
//   branch, through two more contextd processes, one with the default branch view (isolated) and
//   one with `context_folding.branch_view: inherited`, side by side with direct (three paths,
//   the order rotating). A lane sends the parent (151 - 2 * lane messages, ending with a tool
//   result; not measured), an assistant turn calling mcp__contextd__branch_create, for which the
//   driver calls each contextd's real branch_create over /mcp with the lane's conversation id,
//   then the branch: the create result (the branch's first request, not measured), and one
//   request per added tool_use + tool_result pair (measured), each with the whole history, as
//   Claude Code sends it; at the lane's end the branch is returned over /mcp. `--gap-ms` (10)
//   pauses before each request, so that a contextd's work posted after its answer does not land
//   on the next path's request (the order rotates per request and per lane).
// With `--callgrind N` it measures instead, with contextd under valgrind's callgrind, the
// user-space instructions per request of N requests of each mode (contextd only, no direct
// path): steadier than milliseconds on a shared VM. The profile stays in --out for
// callgrind_annotate.
import { execFileSync } from 'node:child_process';
import { spawnContextd, connectMcp } from './contextd_process.mjs';
import { createServer, Agent, request as httpRequest } from 'node:http';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { loadO200k } from './caching_double.mjs';

export const SESSION_HEADER = 'x-claude-code-session-id';
const MODEL = 'claude-sonnet-4-5';
// Messages of the measured conversation; its JSON is ~400 KB and ~100k tokens (o200k_base).
export const BASE_MESSAGES = 150;

// Issue targets (ms): added p50 latency on a 100k-token request, and added time to first byte.
// Issue 33 (branch mode): the isolated view adds no more than the inherited one.
export const TARGETS = Object.freeze({ added_p50_ms: 1, added_ttfb_ms: 1, branch_view_added_vs_inherited: 'no more' });
// The text that opens contextd's isolated branch view (issue 33).
const BRANCH_VIEW_MARK = '[contextd] Branch';

// ---------------------------------------------------------------------------------------------
// A deterministic Claude Code conversation.

// mulberry32: a small seeded PRNG, so every run sends the same bytes.
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    chance: (p) => next() < p,
    chars: (alphabet, n) => { let s = ''; for (let i = 0; i < n; i++) s += alphabet[Math.floor(next() * alphabet.length)]; return s; },
  };
  return r;
}

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const B64 = ALNUM + '+/';
const HEX = '0123456789abcdef';
const NOUNS = ['user', 'account', 'session', 'token', 'cache', 'request', 'handler', 'config', 'order', 'invoice',
  'payment', 'queue', 'worker', 'job', 'record', 'schema', 'event', 'stream', 'buffer', 'client', 'server', 'route',
  'policy', 'tenant', 'metric', 'span', 'trace', 'bucket', 'object', 'lease', 'shard', 'index', 'query', 'result',
  'message', 'channel', 'profile', 'permission', 'role', 'secret', 'credential', 'webhook', 'retry', 'timeout'];
const VERBS = ['get', 'set', 'load', 'save', 'parse', 'render', 'validate', 'build', 'fetch', 'update', 'delete',
  'create', 'resolve', 'apply', 'merge', 'flush', 'encode', 'decode', 'compute', 'check', 'handle', 'emit', 'open'];
const DIRS = ['src', 'src/api', 'src/core', 'src/services', 'src/utils', 'lib', 'tests', 'packages/server/src',
  'packages/web/src/components', 'internal/store', 'cmd/worker', 'app/models', 'app/controllers'];
const WORDS = ('the a this that when if then so we it file test function value error because before after ' +
  'should could would now also only still already instead which where change fix update call return check ' +
  'looks like seems need let me first next see run read look at into from with for and but not is are was').split(' ');

const cap = (s) => s[0].toUpperCase() + s.slice(1);
function ident(r) { return r.pick(VERBS) + cap(r.pick(NOUNS)) + (r.chance(0.3) ? cap(r.pick(NOUNS)) : ''); }
function typeName(r) { return cap(r.pick(NOUNS)) + cap(r.pick(['service', 'store', 'manager', 'client', 'options', 'state', 'error'])); }
function filePath(r, ext) { return `${r.pick(DIRS)}/${r.pick(NOUNS)}_${r.pick(NOUNS)}.${ext}`; }
function sentence(r, min = 6, max = 18) {
  const n = r.int(min, max);
  const w = [];
  for (let i = 0; i < n; i++) w.push(r.chance(0.25) ? (r.chance(0.5) ? ident(r) : r.pick(NOUNS)) : r.pick(WORDS));
  return cap(w.join(' ')) + r.pick(['.', '.', '.', ':', '?']);
}
function paragraph(r, n) { const s = []; for (let i = 0; i < n; i++) s.push(sentence(r)); return s.join(' '); }

// Secrets of the shapes the default scrub rules know (random bodies, never the documented
// EXAMPLE keys, which the rules leave alone).
function secretLines(r) {
  return r.pick([
    () => [`AWS_ACCESS_KEY_ID=AKIA${r.chars('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567', 16)}`,
      `AWS_SECRET_ACCESS_KEY=${r.chars(B64, 40)}`, `AWS_DEFAULT_REGION=us-east-1`],
    () => [`GITHUB_TOKEN=ghp_${r.chars(ALNUM, 36)}`],
    () => [`SLACK_BOT_TOKEN=xoxb-${r.chars('0123456789', 12)}-${r.chars('0123456789', 13)}-${r.chars(ALNUM, 24)}`],
    () => [`STRIPE_SECRET_KEY=sk_live_${r.chars(ALNUM, 24)}`],
    () => [`DATABASE_URL=postgres://app:${r.chars(ALNUM, 20)}@db.internal:5432/app`],
    () => ['-----BEGIN RSA PRIVATE KEY-----', ...Array.from({ length: 6 }, () => r.chars(B64, 64)),
      '-----END RSA PRIVATE KEY-----'],
  ])();
}

function codeLines(r, lang, n) {
  const out = [];
  const indent = (d) => '  '.repeat(d);
  while (out.length < n) {
    const fn = ident(r);
    const args = [r.pick(NOUNS), r.pick(NOUNS)].filter((v, i, a) => a.indexOf(v) === i);
    if (lang === 'py') {
      out.push(`def ${fn.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())}(${args.join(', ')}):`);
      out.push(`    """${sentence(r, 5, 12)}"""`);
      for (let i = r.int(3, 10); i > 0; i--) {
        out.push(r.pick([
          `    ${r.pick(NOUNS)} = ${args[0]}.get("${r.pick(NOUNS)}_id")`,
          `    if ${args[0]} is None:\n        raise ValueError("${r.pick(NOUNS)} is required")`,
          `    logger.info("${fn}: %s", ${args[0]})`,
          `    for item in ${args.at(-1)}.${r.pick(NOUNS)}s:\n        item.${r.pick(VERBS)}()`,
          `    return ${ident(r)}(${args.join(', ')})`,
        ]));
      }
      out.push('');
    } else {
      const t = typeName(r);
      out.push(`export async function ${fn}(${args.map((a) => `${a}: ${cap(a)}`).join(', ')}): Promise<${t}> {`);
      for (let i = r.int(3, 10); i > 0; i--) {
        out.push(r.pick([
          `${indent(1)}const ${r.pick(NOUNS)} = await this.${ident(r)}(${args[0]}.id);`,
          `${indent(1)}if (!${args[0]}) {\n${indent(2)}throw new ${typeName(r)}('${r.pick(NOUNS)} not found: ' + ${args[0]});\n${indent(1)}}`,
          `${indent(1)}// ${sentence(r, 5, 14)}`,
          `${indent(1)}for (const item of ${args.at(-1)}.${r.pick(NOUNS)}s) {\n${indent(2)}await item.${r.pick(VERBS)}();\n${indent(1)}}`,
          `${indent(1)}return { ...${args[0]}, ${r.pick(NOUNS)}: ${r.int(0, 999)} } as ${t};`,
        ]));
      }
      out.push('}', '');
    }
  }
  return out.join('\n').split('\n').slice(0, n);
}

// What a tool printed, about `chars` long; each kind shaped like Claude Code's tools' output.
function toolOutput(r, tool, input, chars) {
  const size = Math.max(4, Math.round(chars / 40));  // lines (or entries) to start from
  const text = toolLines(r, tool, input, size);
  return text.length > chars ? text.slice(0, text.lastIndexOf('\n', chars) > 0 ? text.lastIndexOf('\n', chars) : chars) : text;
}

function toolLines(r, tool, input, size) {
  switch (tool) {
    case 'Read': {
      const lang = input.file_path.endsWith('.py') ? 'py' : 'ts';
      const lines = codeLines(r, lang, size);
      if (r.chance(0.15)) lines.splice(r.int(0, lines.length), 0, ...secretLines(r));  // a config or fixture
      return lines.map((l, i) => `${String(i + 1).padStart(6)}\u2192${l}`).join('\n');
    }
    case 'Bash': {
      const out = [];
      const kind = r.pick(['test', 'git', 'env', 'build', 'logs']);
      for (let i = 0; out.length < size; i++) {
        if (kind === 'test') {
          out.push(r.chance(0.9) ? `tests/test_${r.pick(NOUNS)}.py::test_${r.pick(VERBS)}_${r.pick(NOUNS)} PASSED [${String(Math.min(99, i)).padStart(3)}%]`
            : `tests/test_${r.pick(NOUNS)}.py::test_${r.pick(VERBS)}_${r.pick(NOUNS)} FAILED\n    assert ${r.pick(NOUNS)}.status == ${r.int(200, 503)}\nE   AssertionError: ${sentence(r, 4, 9)}`);
        } else if (kind === 'git') {
          out.push(`commit ${r.chars(HEX, 40)}\nAuthor: ${cap(r.pick(NOUNS))} Dev <dev${r.int(1, 99)}@example.com>\nDate:   Mon Nov ${r.int(1, 28)} ${r.int(10, 23)}:${r.int(10, 59)}:00 2025 +0000\n\n    ${sentence(r, 4, 10)}\n`);
        } else if (kind === 'env') {
          out.push(`${r.pick(NOUNS).toUpperCase()}_${r.pick(NOUNS).toUpperCase()}=${r.chars(ALNUM, r.int(4, 16))}`);
          if (r.chance(0.12)) out.push(...secretLines(r));
        } else if (kind === 'build') {
          out.push(`${filePath(r, 'ts')}(${r.int(1, 400)},${r.int(1, 80)}): error TS${r.int(2000, 2999)}: ${sentence(r, 6, 14)}`);
        } else {
          out.push(JSON.stringify({ ts: `2025-11-${String(r.int(10, 28))}T${r.int(10, 23)}:${r.int(10, 59)}:${r.int(10, 59)}.${r.int(100, 999)}Z`,
            level: r.pick(['info', 'info', 'warn', 'error']), msg: sentence(r, 4, 10), request_id: r.chars(HEX, 16),
            ip: `10.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`, latency_ms: r.int(1, 900) }));
          if (r.chance(0.03)) out.push(`Authorization: token ghp_${r.chars(ALNUM, 36)}`);
        }
      }
      return out.join('\n');
    }
    case 'Grep': {
      const out = [];
      for (let i = 0; i < size; i++) out.push(`${filePath(r, r.pick(['ts', 'py', 'go']))}:${r.int(1, 900)}:${codeLines(r, 'ts', 3)[r.int(1, 2)]}`);
      return out.join('\n');
    }
    case 'Glob':
    case 'LS': {
      const out = [];
      for (let i = 0; i < size; i++) out.push(`/home/dev/project/${filePath(r, r.pick(['ts', 'py', 'json', 'md']))}`);
      return out.join('\n');
    }
    default: {
      const out = [];
      for (let i = 0; out.length < size; i++) out.push(paragraph(r, r.int(1, 3)));
      return out.join('\n');
    }
  }
}

const TOOL_NAMES = ['Task', 'Bash', 'Glob', 'Grep', 'LS', 'ExitPlanMode', 'Read', 'Edit', 'MultiEdit', 'Write',
  'NotebookEdit', 'WebFetch', 'TodoWrite', 'WebSearch', 'BashOutput', 'KillShell', 'SlashCommand',
  'mcp__contextd__branch_create', 'mcp__contextd__branch_return', 'mcp__contextd__branch_status'];

function toolDefinitions(r) {
  return TOOL_NAMES.map((name) => {
    const properties = {};
    const required = [];
    for (let i = r.int(2, 6); i > 0; i--) {
      const p = `${r.pick(NOUNS)}_${r.pick(NOUNS)}`;
      properties[p] = r.pick([
        { type: 'string', description: sentence(r, 8, 20) },
        { type: 'number', description: sentence(r, 6, 14) },
        { type: 'boolean', description: sentence(r, 6, 14) },
        { type: 'array', items: { type: 'object', properties: { content: { type: 'string', minLength: 1 },
          status: { type: 'string', enum: ['pending', 'in_progress', 'completed'] } }, required: ['content', 'status'],
          additionalProperties: false }, description: sentence(r, 6, 14) },
      ]);
      if (r.chance(0.5)) required.push(p);
    }
    const desc = [];
    for (let i = r.int(3, 9); i > 0; i--) desc.push(r.chance(0.3) ? `- ${sentence(r)}` : paragraph(r, r.int(2, 5)));
    return { name, description: desc.join('\n\n'), input_schema: { type: 'object', properties, required,
      additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' } };
  });
}

// One assistant tool_use + user tool_result pair (index i of the conversation).
function turnPair(r, i) {
  const tool = r.pick(['Read', 'Read', 'Read', 'Bash', 'Bash', 'Bash', 'Grep', 'Glob', 'LS', 'WebFetch']);
  const id = `toolu_01${r.chars(ALNUM, 22)}`;
  let input;
  if (tool === 'Read') input = { file_path: `/home/dev/project/${filePath(r, r.pick(['ts', 'py']))}` };
  else if (tool === 'Bash') input = { command: r.pick(['pytest -x -q', 'git log -n 20', 'env | sort', 'npx tsc --noEmit', 'kubectl logs deploy/api --tail=200']), description: sentence(r, 3, 8) };
  else if (tool === 'Grep') input = { pattern: ident(r), path: r.pick(DIRS), output_mode: 'content', '-n': true };
  else if (tool === 'WebFetch') input = { url: `https://docs.example.com/${r.pick(NOUNS)}/${r.pick(VERBS)}`, prompt: sentence(r) };
  else input = { path: `/home/dev/project/${r.pick(DIRS)}` };
  // Sizes: mostly small results, some big files and logs (Claude Code's spread).
  const chars = r.chance(0.2) ? r.int(8000, 16000) : r.int(1000, 4000);
  const content = [];
  if (r.chance(0.8)) content.push({ type: 'text', text: paragraph(r, r.int(1, 3)) });
  content.push({ type: 'tool_use', id, name: tool, input });
  const result = toolOutput(r, tool, input, chars);
  const block = r.chance(0.85)
    ? { tool_use_id: id, type: 'tool_result', content: result }
    : { tool_use_id: id, type: 'tool_result', content: [{ type: 'text', text: result }] };
  if (i % 7 === 3) block.is_error = false;
  return [{ role: 'assistant', content }, { role: 'user', content: [block] }];
}

// The conversation: {system, tools, messages (`total` of them: the task, then pairs)}.
export function buildConversation(seed, total) {
  const r = rng(seed);
  const system = [
    { type: 'text', text: 'You are Claude Code, Anthropic\'s official CLI for Claude.' },
    { type: 'text', text: Array.from({ length: 60 }, () => paragraph(r, r.int(2, 6))).join('\n\n'),
      cache_control: { type: 'ephemeral' } },
  ];
  const tools = toolDefinitions(r);
  const messages = [{ role: 'user', content: [
    { type: 'text', text: `<system-reminder>\n${paragraph(r, 12)}\n</system-reminder>` },
    { type: 'text', text: `Fix the failing ${ident(r)} tests in ${r.pick(DIRS)} and make sure the build passes.` },
  ] }];
  for (let i = 0; messages.length < total; i++) messages.push(...turnPair(r, i));
  return { system, tools, messages: messages.slice(0, total) };
}

// The request body with the first `n` messages, a breakpoint on the last block. The `stream`
// member comes before the big members so the double can read it from the first bytes.
export function requestBody(conv, n, stream) {
  return bodyOf(conv, conv.messages.slice(0, n), stream);
}

// The request body of `messages` (with conv's system and tools), a breakpoint on the last block.
export function bodyOf(conv, messages, stream = false) {
  const n = messages.length;
  const marked = messages.map((m, i) => (i === n - 1
    ? { ...m, content: m.content.map((b, j) => (j === m.content.length - 1 ? { ...b, cache_control: { type: 'ephemeral' } } : b)) }
    : m));
  return Buffer.from(JSON.stringify({ model: MODEL, max_tokens: 32000, stream, system: conv.system,
    tools: conv.tools, messages: marked }));
}

// Branch mode: the parent's length (odd: it ends with a tool result) for lanes of `lane` pairs,
// so that the measured requests have 135 ... 153 messages at lane 10 (median ~100k tokens).
export const branchParentMessages = (lane) => BASE_MESSAGES + 1 - 2 * lane;

// The assistant turn that opens a branch in lane `k`, and the user turn with its result
// (`result`: branch_create's structuredContent, as Claude Code shows an MCP result).
export function branchCreateTurn(k) {
  return { role: 'assistant', content: [
    { type: 'text', text: 'The failures look unrelated to each other; I will explore them in a branch and keep only the cause.' },
    { type: 'tool_use', id: `toolu_01Branch${String(k).padStart(14, '0')}`, name: 'mcp__contextd__branch_create',
      input: { description: 'debugging: why the handler tests fail', prompt: 'Read the failing tests and the handlers they call; report the cause in three lines.' } },
  ] };
}
export function branchResultTurn(createTurn, result) {
  return { role: 'user', content: [{ type: 'tool_result', tool_use_id: createTurn.content[1].id,
    content: [{ type: 'text', text: JSON.stringify(result) }] }] };
}

// Tokens the model reads (o200k_base): system and message text, tool inputs and results, tools.
export function countTokens(conv, n, count) {
  let t = 0;
  for (const b of conv.system) t += count(b.text);
  for (const tool of conv.tools) t += count(`${tool.name}\n${tool.description}\n${JSON.stringify(tool.input_schema)}`);
  for (const m of conv.messages.slice(0, n)) {
    for (const b of m.content) {
      if (b.type === 'text') t += count(b.text);
      else if (b.type === 'tool_use') t += count(`${b.name}\n${JSON.stringify(b.input)}`);
      else if (typeof b.content === 'string') t += count(b.content);
      else t += count(b.content.map((c) => c.text).join('\n'));
    }
  }
  return t;
}

// ---------------------------------------------------------------------------------------------
// The provider double: answers /v1/messages as soon as the request has ended.

const ANSWER = JSON.stringify({ id: 'msg_bench', type: 'message', role: 'assistant', model: MODEL,
  content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn', stop_sequence: null,
  usage: { input_tokens: 12, cache_read_input_tokens: 100000, cache_creation_input_tokens: 800, output_tokens: 3 } });
const SSE_START = `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { id: 'msg_bench',
  type: 'message', role: 'assistant', model: MODEL, content: [], stop_reason: null, stop_sequence: null,
  usage: { input_tokens: 12, cache_read_input_tokens: 100000, cache_creation_input_tokens: 800, output_tokens: 1 } } })}\n\n`;
const SSE_REST = [
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Done.' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } },
  { type: 'message_stop' },
].map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join('');

// Resolves {url, last: () => the last request body received (Buffer), close}.
export async function startDouble() {
  let last = null;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      last = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const stream = /"stream"\s*:\s*true/.test(last.subarray(0, 256).toString('latin1'));
      if (!stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_bench' });
        res.end(ANSWER);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_bench' });
      res.write(SSE_START);  // flushes the head and the first event together, now
      setImmediate(() => res.end(SSE_REST));
    });
  });
  server.keepAliveTimeout = 60000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, last: () => last, close: () => new Promise((r) => server.close(r)) };
}

// ---------------------------------------------------------------------------------------------
// contextd.

// `callgrindOut`: run contextd under callgrind, instrumentation off, profile to that file.
export function startContextd(binary, upstreamUrl, { callgrindOut = null } = {}) {
  return spawnContextd({
    binary, yaml: `model_gateway:\n  anthropic:\n    base_url: ${upstreamUrl}\n`, prefix: 'contextd-model-overhead-',
    launcher: callgrindOut ? ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${callgrindOut}`] : null,
    startSeconds: callgrindOut ? 300 : 20,
  });
}

// User + system CPU seconds of a process so far (Linux /proc), or null.
function cpuSeconds(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch { return null; }
}

// ---------------------------------------------------------------------------------------------
// The client: one request at a time, keep-alive.

// POSTs `body` to `origin`/v1/messages; resolves {total, headers, first} in ms from the start
// (first: the first body chunk, i.e. the first SSE event of a stream) and the answer's status.
function post(agent, origin, body, session, path = '/v1/messages') {
  return new Promise((resolveTiming, reject) => {
    const t0 = process.hrtime.bigint();
    const ms = () => Number(process.hrtime.bigint() - t0) / 1e6;
    const req = httpRequest(`${origin}${path}`, { method: 'POST', agent, headers: {
      'content-type': 'application/json', 'content-length': body.length, 'anthropic-version': '2023-06-01',
      'x-api-key': 'sk-ant-bench', [SESSION_HEADER]: session } }, (res) => {
      const timing = { status: res.statusCode, headers: ms(), first: null, total: null, bytes: 0 };
      res.on('data', (c) => { if (timing.first === null) timing.first = ms(); timing.bytes += c.length; });
      res.on('end', () => { timing.total = ms(); resolveTiming(timing); });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  if (!s.length) return null;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

function parseArgs(argv) {
  const opts = { n: 200, warmup: 20, lane: 10, seed: 1, modes: ['steady', 'cold', 'stream', 'floor'], callgrind: 0, gapMs: 10 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i].replace(/^--/, '');
    const value = argv[++i];
    if (value === undefined) throw new Error(`--${key} needs a value`);
    if (['n', 'warmup', 'lane', 'seed', 'callgrind'].includes(key)) opts[key] = Number(value);
    else if (key === 'gap-ms') opts.gapMs = Number(value);
    else if (key === 'modes') opts.modes = value.split(',').filter(Boolean);
    else if (['binary', 'out'].includes(key)) opts[key] = value;
    else throw new Error(`unknown option --${key}`);
  }
  if (!opts.binary || !opts.out) throw new Error('--binary and --out are required');
  if (opts.lane < 1 || 2 * opts.lane >= BASE_MESSAGES) throw new Error('--lane must be in [1, 74]');
  for (const m of opts.modes) if (!['steady', 'cold', 'stream', 'floor', 'branch'].includes(m)) throw new Error(`unknown mode ${m}`);
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const machine = { nproc: cpus().length, cpu: cpus()[0]?.model ?? '?', loadavg: loadavg().map((l) => l.toFixed(2)).join(' '),
    node: process.version };
  const conv = buildConversation(opts.seed, BASE_MESSAGES + 2 * opts.lane);
  const { count } = loadO200k();
  const base = requestBody(conv, BASE_MESSAGES, false);
  const workload = {
    messages: BASE_MESSAGES, body_bytes: base.length, tokens: countTokens(conv, BASE_MESSAGES, count),
    body_json_tokens: count(base.toString()),
    tools: conv.tools.length, lane_pairs: opts.lane,
    lane_first_tokens: countTokens(conv, BASE_MESSAGES - 2 * opts.lane, count),
    lane_last_tokens: countTokens(conv, BASE_MESSAGES + 2 * opts.lane, count),
  };
  process.stderr.write(`machine: ${machine.nproc} cores (${machine.cpu}), load ${machine.loadavg}\n` +
    `conversation: ${workload.messages} messages, ${(workload.body_bytes / 1024).toFixed(0)} KiB, ` +
    `${workload.tokens} tokens (o200k_base); steady lanes ${workload.lane_first_tokens}-${workload.lane_last_tokens} tokens\n`);

  if (opts.callgrind > 0) {
    await callgrindMain(opts, conv, { machine, workload });
    return;
  }
  const double = await startDouble();
  const contextd = await startContextd(opts.binary, double.url);
  const paths = {
    direct: { origin: double.url, agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
    contextd: { origin: contextd.origin, agent: new Agent({ keepAlive: true, maxSockets: 1 }) },
  };
  const bodies = new Map();
  const bodyOf = (n, stream) => {
    const k = `${n}:${stream}`;
    if (!bodies.has(k)) bodies.set(k, requestBody(conv, n, stream));
    return bodies.get(k);
  };
  let sessions = 0;
  const newSession = (mode) => `overhead-${mode}-${process.pid}-${++sessions}`;
  // One request on each path, in alternating order; returns {direct, contextd} timings.
  let flip = false;
  let viaContextd = 0;  // requests sent to contextd, for its CPU per request
  const pair = async (body, session, contextdPath = '/v1/messages') => {
    viaContextd++;
    const out = {};
    flip = !flip;
    for (const path of flip ? ['direct', 'contextd'] : ['contextd', 'direct']) {
      const t = await post(paths[path].agent, paths[path].origin, body, session, path === 'contextd' ? contextdPath : '/v1/messages');
      if (t.status !== 200) throw new Error(`${path}: status ${t.status}; contextd stderr:\n${contextd.stderr()}`);
      out[path] = t;
    }
    return out;
  };

  const results = { machine, workload, targets: TARGETS, n: opts.n, warmup: opts.warmup, binary: resolve(opts.binary), modes: {} };
  try {
    // Sanity: contextd forwards the conversation, with its secrets redacted.
    await pair(base, newSession('check'));
    const forwarded = double.last();
    await post(paths.direct.agent, paths.direct.origin, base, 'x');
    const sent = double.last();
    workload.redacted = forwarded.toString().split('[REDACTED:').length - 1;
    workload.forwarded_bytes = forwarded.length;
    if (workload.redacted === 0) process.stderr.write('warning: contextd forwarded no redaction; is the scrubber on?\n');
    if (sent.length !== base.length) throw new Error('the double did not receive the direct body whole');

    for (const mode of opts.modes.filter((m) => m !== 'branch')) {
      const samples = { direct: [], contextd: [] };
      const cpu0 = cpuSeconds(contextd.pid);
      const sent0 = viaContextd;
      let measured = 0;
      const total = opts.warmup + opts.n;
      if (mode === 'cold') {
        for (let i = 0; i < total; i++) {
          const t = await pair(base, newSession(mode));
          if (i >= opts.warmup) for (const p of ['direct', 'contextd']) samples[p].push(t[p]);
        }
        measured = opts.n;
      } else {
        const stream = mode === 'stream';
        const contextdPath = mode === 'floor' ? '/v1/bench-floor' : '/v1/messages';
        // Warm-up requests are whole lanes too; a lane's first request (new to contextd) never counts.
        let done = 0;
        while (done < total) {
          const session = newSession(mode);
          const start = BASE_MESSAGES - 2 * opts.lane;
          await pair(bodyOf(start, stream), session, contextdPath);
          for (let k = 1; k <= 2 * opts.lane && done < total; k++, done++) {
            const t = await pair(bodyOf(start + 2 * k, stream), session, contextdPath);
            if (done >= opts.warmup) for (const p of ['direct', 'contextd']) samples[p].push(t[p]);
          }
        }
        measured = opts.n;
      }
      const cpu1 = cpuSeconds(contextd.pid);
      const metric = mode === 'stream' ? 'first' : 'total';
      const stats = {};
      for (const p of ['direct', 'contextd']) {
        const v = samples[p].map((t) => t[metric]);
        stats[p] = { p50: percentile(v, 50), p90: percentile(v, 90), p99: percentile(v, 99), max: Math.max(...v) };
        if (mode === 'stream') stats[p].headers_p50 = percentile(samples[p].map((t) => t.headers), 50);
      }
      // Paired differences (contextd - direct of the same request), a steadier view on a noisy VM.
      const diffs = samples.contextd.map((t, i) => t[metric] - samples.direct[i][metric]);
      results.modes[mode] = { metric: mode === 'stream' ? 'time to first SSE event' : 'total latency', measured,
        ...stats, added_p50: stats.contextd.p50 - stats.direct.p50, paired_diff_p50: percentile(diffs, 50),
        ratio_p50: stats.contextd.p50 / stats.direct.p50,
        contextd_cpu_ms_per_request: cpu0 === null ? null : ((cpu1 - cpu0) * 1000) / (viaContextd - sent0) };
      process.stderr.write(`${mode}: direct p50 ${stats.direct.p50.toFixed(3)} ms, contextd p50 ${stats.contextd.p50.toFixed(3)} ms\n`);
    }
    if (opts.modes.includes('branch')) results.branch = await branchMode(opts, conv, double, paths.direct);
  } finally {
    for (const p of Object.values(paths)) p.agent.destroy();
    await contextd.stop();
    await double.close();
  }
  mkdirSync(opts.out, { recursive: true });
  const file = join(opts.out, 'model-overhead.json');
  writeFileSync(file, JSON.stringify(results, null, 1) + '\n');
  process.stdout.write((Object.keys(results.modes).length ? table(results) : '') + (results.branch ? branchTable(results) : '') + `results: ${file}\n`);
}

// The contextd config of branch mode: the gateway, branches as the model bench opens them (rate
// limit off, 32k budgets: a lane's branch spans ~13k tokens at lane 10) and the branch view.
export function branchConfig(upstreamUrl, view) {
  return ['context_folding:', '  default_budget: 32768', '  max_budget: 32768', '  branch_creation_rate_limit: 100000/minute',
    ...(view ? [`  branch_view: ${view}`] : []), 'model_gateway:', '  anthropic:', `    base_url: ${upstreamUrl}`, ''].join('\n');
}

// Branch mode (see the header): direct, contextd with the isolated view (its default) and with
// `branch_view: inherited`, request by request, the order rotating.
async function branchMode(opts, conv, double, direct) {
  const servers = {};
  const unsupported = {};
  for (const [name, view] of [['isolated', null], ['inherited', 'inherited']]) {
    try {
      servers[name] = await spawnContextd({ binary: opts.binary, yaml: branchConfig(double.url, view), prefix: 'contextd-model-overhead-' });
    } catch (e) {
      if (!view || !/branch_view/.test(e.stderr ?? '')) throw e;
      unsupported[name] = 'contextd refused context_folding.branch_view: this build predates issue 33';
      process.stderr.write(`branch: ${name} not run: ${unsupported[name]}\n`);
    }
  }
  const names = Object.keys(servers);
  const paths = { direct, ...Object.fromEntries(names.map((n) => [n, { origin: servers[n].origin, agent: new Agent({ keepAlive: true, maxSockets: 1 }) }])) };
  const order = ['direct', ...names];
  const samples = Object.fromEntries(order.map((p) => [p, []]));
  const entry = Object.fromEntries(order.map((p) => [p, []]));  // each branch's first request
  const forwarded = Object.fromEntries(names.map((n) => [n, { bytes: [], view: 0, requests: 0 }]));
  const cpu0 = Object.fromEntries(names.map((n) => [n, cpuSeconds(servers[n].pid)]));
  const sent0 = { requests: 0 };
  const parentN = branchParentMessages(opts.lane);
  const parent = conv.messages.slice(0, parentN);
  let rotate = 0;
  let lanes = 0;
  // One request on every path; `bodies[p]` is path p's body. Returns {path: timing}.
  const round = async (bodies, session) => {
    const out = {};
    // The order rotates per round and per lane (a lane's rounds are a multiple of 3: without the
    // lane, each place in a branch would always see the same order).
    const first = (rotate + lanes) % order.length;
    const turn = order.slice(first).concat(order.slice(0, first));
    rotate++;
    for (const p of turn) {
      // A pause before each request lets the last one's posted work (trail, frontier) finish, as
      // the seconds between an agent's requests do; else it lands on the next path's request.
      if (opts.gapMs > 0) await new Promise((r) => setTimeout(r, opts.gapMs));
      const t = await post(paths[p].agent, paths[p].origin, bodies[p], session);
      if (t.status !== 200) throw new Error(`branch ${p}: status ${t.status}; contextd stderr:\n${servers[p]?.stderr() ?? ''}`);
      if (p !== 'direct') {
        const last = double.last();
        forwarded[p].bytes.push(last.length);
        forwarded[p].requests++;
        if (last.includes(BRANCH_VIEW_MARK)) forwarded[p].view++;
      }
      out[p] = t;
    }
    sent0.requests++;
    return out;
  };
  try {
    let done = 0;
    const total = opts.warmup + opts.n;
    while (done < total) {
      const session = `overhead-branch-${process.pid}-${++lanes}`;
      const clients = {};
      for (const n of names) clients[n] = await connectMcp(servers[n].mcpUrl, { [SESSION_HEADER]: session });
      try {
        const same = (body) => Object.fromEntries(order.map((p) => [p, body]));
        await round(same(bodyOf(conv, parent)), session);  // the parent: new to contextd, not measured
        const create = branchCreateTurn(lanes);
        const results = {};
        for (const n of names) {
          const r = await clients[n].callTool({ name: 'branch_create', arguments: create.content[1].input });
          if (r.isError || !r.structuredContent?.branch_id) throw new Error(`branch_create (${n}) failed: ${JSON.stringify(r.content)}`);
          results[n] = r.structuredContent;
        }
        results.direct = results[names[0]];
        const history = (p, k) => [...parent, create, branchResultTurn(create, results[p]), ...conv.messages.slice(parentN, parentN + 2 * k)];
        const bodies = (k) => Object.fromEntries(order.map((p) => [p, bodyOf(conv, history(p, k))]));
        const first = await round(bodies(0), session);  // the branch's first request: its view is new
        for (const p of order) entry[p].push(first[p].total);
        for (let k = 1; k <= opts.lane && done < total; k++, done++) {
          const t = await round(bodies(k), session);
          if (done >= opts.warmup) for (const p of order) samples[p].push({ ...t[p], step: k });
        }
        for (const n of names) {
          await clients[n].callTool({ name: 'branch_return', arguments: { branch_id: results[n].branch_id, message: 'The handlers drop the tenant id.' } });
        }
      } finally {
        for (const c of Object.values(clients)) await c.close().catch(() => {});
      }
    }
  } finally {
    for (const n of names) cpu0[n] = cpu0[n] === null ? null : { start: cpu0[n], end: cpuSeconds(servers[n].pid) };
    for (const n of names) paths[n].agent.destroy();
    for (const n of names) await servers[n].stop();
  }
  const stats = {};
  for (const p of order) {
    const v = samples[p].map((t) => t.total);
    stats[p] = { p50: percentile(v, 50), p90: percentile(v, 90), p99: percentile(v, 99), max: Math.max(...v), entry_p50: percentile(entry[p], 50) };
    // By the request's place in its branch (1 = the first after the branch's entry), p50 and p90.
    stats[p].by_step = Array.from({ length: opts.lane }, (_, i) => {
      const w = samples[p].filter((t) => t.step === i + 1).map((t) => t.total);
      return w.length ? [percentile(w, 50), percentile(w, 90)] : null;
    });
  }
  for (const n of names) {
    const diffs = samples[n].map((t, i) => t.total - samples.direct[i].total);
    Object.assign(stats[n], {
      added_p50: stats[n].p50 - stats.direct.p50, added_p90: stats[n].p90 - stats.direct.p90, added_p99: stats[n].p99 - stats.direct.p99,
      paired_diff_p50: percentile(diffs, 50), paired_diff_p90: percentile(diffs, 90), paired_diff_p99: percentile(diffs, 99),
      forwarded_bytes_p50: percentile(forwarded[n].bytes, 50), view_requests: forwarded[n].view, forwarded_requests: forwarded[n].requests,
      contextd_cpu_ms_per_request: cpu0[n]?.end == null ? null : ((cpu0[n].end - cpu0[n].start) * 1000) / sent0.requests,
    });
  }
  const out = { measured: samples.direct.length, lanes, lane_pairs: opts.lane, parent_messages: parentN, gap_ms: opts.gapMs,
    messages_measured: [parentN + 4, parentN + 2 + 2 * opts.lane], unsupported, paths: stats };
  if (stats.isolated && stats.inherited) {
    const d = samples.isolated.map((t, i) => t.total - samples.inherited[i].total);
    out.isolated_minus_inherited = { p50: percentile(d, 50), p90: percentile(d, 90), p99: percentile(d, 99) };
    out.target_met = stats.isolated.added_p50 <= stats.inherited.added_p50;
  }
  if (stats.isolated && stats.isolated.view_requests === 0) {
    process.stderr.write('branch: the isolated contextd forwarded no branch view (no "[contextd] Branch" message): this build predates issue 33\n');
  }
  return out;
}

// Instructions per request of each mode under callgrind (contextd only). Each mode: a lane's first
// request (or, for cold, one request) with instrumentation off, then N requests counted.
async function callgrindMain(opts, conv, results) {
  mkdirSync(opts.out, { recursive: true });
  const cgOut = join(resolve(opts.out), 'model-overhead.callgrind');
  for (const f of readdirSync(opts.out)) if (f.startsWith('model-overhead.callgrind')) rmSync(join(opts.out, f));
  const double = await startDouble();
  const contextd = await startContextd(opts.binary, double.url, { callgrindOut: cgOut });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  // valgrind may run the tool in a child process: address the one with our profile's name.
  const vg = execFileSync('pgrep', ['-f', '--', `--callgrind-out-file=${cgOut}`]).toString().trim().split('\n').at(-1);
  const control = (...args) => execFileSync('callgrind_control', [...args, vg], { stdio: 'ignore' });
  let session = 0;
  let dumps = 0;
  const send = async (n, stream, sid, path = '/v1/messages') => {
    const t = await post(agent, contextd.origin, requestBody(conv, n, stream), sid, path);
    if (t.status !== 200) throw new Error(`status ${t.status}; contextd stderr:\n${contextd.stderr()}`);
  };
  results.callgrind = { n: opts.callgrind, modes: {} };
  try {
    for (const mode of opts.modes) {
      const stream = mode === 'stream';
      const path = mode === 'floor' ? '/v1/bench-floor' : '/v1/messages';
      const start = BASE_MESSAGES - 2 * opts.lane;
      let sid = `cg-${mode}-${++session}`;
      await send(mode === 'cold' ? BASE_MESSAGES : start, stream, sid, path);
      control('-i', 'on');
      for (let k = 1; k <= opts.callgrind; k++) {
        if (mode === 'cold') {
          await send(BASE_MESSAGES, stream, `cg-${mode}-${++session}`, path);
        } else {
          const step = ((k - 1) % (2 * opts.lane)) + 1;
          if (k > 1 && step === 1) {  // a new lane: its first request (all new) is not counted
            control('-i', 'off');
            sid = `cg-${mode}-${++session}`;
            await send(start, stream, sid, path);
            control('-i', 'on');
          }
          await send(start + 2 * step, stream, sid, path);
        }
      }
      control('-i', 'off');
      control('-d');
      dumps++;
      // Each dump is one file (all threads): <out>.<dump number>.
      const file = `${cgOut}.${dumps}`;
      // One "totals:" line per part of the dump; "summary:" lines are 0 with --instr-atstart=no.
      const ir = [...readFileSync(file, 'utf8').matchAll(/^totals: (\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
      results.callgrind.modes[mode] = { instructions_per_request: ir / opts.callgrind, profile: file };
      process.stderr.write(`${mode}: ${(ir / opts.callgrind / 1e6).toFixed(2)} M instructions per request (${file})\n`);
    }
  } finally {
    agent.destroy();
    await contextd.stop();
    await double.close();
  }
  writeFileSync(join(opts.out, 'model-overhead-callgrind.json'), JSON.stringify(results, null, 1) + '\n');
  let t = `\ncontextd user-space instructions per request (callgrind, ${opts.callgrind} requests per mode; ` +
    `${results.workload.messages} messages, ${(results.workload.body_bytes / 1024).toFixed(0)} KiB):\n\n| mode | M instructions / request |\n|---|---:|\n`;
  for (const [mode, m] of Object.entries(results.callgrind.modes)) t += `| ${mode} | ${(m.instructions_per_request / 1e6).toFixed(2)} |\n`;
  process.stdout.write(t + `\nprofiles: ${cgOut}.N (callgrind_annotate)\n`);
}

const f3 = (v) => (v === null || v === undefined ? '' : v.toFixed(3));

// Branch mode's table: added latency inside an open branch, with and without the isolated view.
export function branchTable(results) {
  const b = results.branch;
  let s = `branch mode: inside an open branch, ${b.measured} requests per path (${b.messages_measured[0]}-${b.messages_measured[1]} ` +
    `messages; parent ${b.parent_messages}; ${b.lanes} lanes of ${b.lane_pairs} pairs), one in flight, keep-alive, ${b.gap_ms} ms between requests\n\n` +
    '| path (ms) | p50 | p90 | p99 | added p50 | added p90 | added p99 | paired diff p50 / p90 / p99 | forwarded KiB (p50) | requests with the view | CPU/req | branch entry p50 |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n';
  for (const [p, m] of Object.entries(b.paths)) {
    const label = { direct: 'direct', isolated: 'contextd, isolated view (default)', inherited: 'contextd, branch_view: inherited' }[p];
    s += `| ${label} | ${f3(m.p50)} | ${f3(m.p90)} | ${f3(m.p99)} | ${f3(m.added_p50)} | ${f3(m.added_p90)} | ${f3(m.added_p99)} | ` +
      `${p === 'direct' ? '' : `${f3(m.paired_diff_p50)} / ${f3(m.paired_diff_p90)} / ${f3(m.paired_diff_p99)}`} | ` +
      `${m.forwarded_bytes_p50 ? (m.forwarded_bytes_p50 / 1024).toFixed(0) : ''} | ${p === 'direct' ? '' : `${m.view_requests} / ${m.forwarded_requests}`} | ` +
      `${f3(m.contextd_cpu_ms_per_request)} | ${f3(m.entry_p50)} |\n`;
  }
  for (const [p, why] of Object.entries(b.unsupported)) s += `\n${p}: not run (${why})\n`;
  if (b.isolated_minus_inherited) {
    const d = b.isolated_minus_inherited;
    s += `\nisolated - inherited, same request: p50 ${f3(d.p50)} ms, p90 ${f3(d.p90)} ms, p99 ${f3(d.p99)} ms. ` +
      `Target (added p50 with the view <= without it): ${b.target_met ? 'met' : 'MISSED'}\n`;
  }
  return s + '\n';
}

export function table(results) {
  const w = results.workload;
  let s = `\nmodel gateway overhead: ${w.messages} messages, ${(w.body_bytes / 1024).toFixed(0)} KiB, ${w.tokens} tokens ` +
    `(o200k_base), ${w.redacted} secrets redacted; ${results.n} requests per mode, one in flight, keep-alive\n` +
    `machine: ${results.machine.nproc} cores, ${results.machine.cpu}, load ${results.machine.loadavg}\n\n` +
    '| mode (ms) | direct p50 | p90 | p99 | contextd p50 | p90 | p99 | added p50 | paired diff p50 | ratio | contextd CPU/req | target |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n';
  for (const [mode, m] of Object.entries(results.modes)) {
    const target = mode === 'stream' ? `added <= ${TARGETS.added_ttfb_ms} ms: ${m.added_p50 <= TARGETS.added_ttfb_ms ? 'met' : 'MISSED'}`
      : mode === 'steady' ? `added <= ${TARGETS.added_p50_ms} ms: ${m.added_p50 <= TARGETS.added_p50_ms ? 'met' : 'MISSED'}` : '';
    const label = { stream: 'stream (first event)', floor: 'floor (relay only)' }[mode] ?? mode;
    s += `| ${label} | ${f3(m.direct.p50)} | ${f3(m.direct.p90)} | ${f3(m.direct.p99)} | ${f3(m.contextd.p50)} | ` +
      `${f3(m.contextd.p90)} | ${f3(m.contextd.p99)} | ${f3(m.added_p50)} | ${f3(m.paired_diff_p50)} | ` +
      `${m.ratio_p50.toFixed(2)}x | ${f3(m.contextd_cpu_ms_per_request)} | ${target} |\n`;
  }
  return s + '\n';
}

if (process.argv[1] && resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  main().catch((e) => {
    process.stderr.write(`bench/model/overhead: ${e.stack ?? e}\n`);
    process.exit(1);
  });
}
