// Captures what the pinned Claude Code (tools/npm/agents) sends, for bench/model's claude-code
// form: runs it headless and offline against tests/agents' scripted double in a throwaway git
// checkout, and writes the first main-loop request's system prompt, tools, first-message
// reminders, environment message and request settings, scrubbed, to bench/model/data/.
//
//   node bench/model/capture_claude_code.mjs [--out FILE] [--model M]    pins the prefix
//   node bench/model/capture_claude_code.mjs --cadence [--turns 40] [--text-every 8]
//        plays `turns` Bash turns (every `text-every`th with text) and prints where Claude Code
//        put role:"system" messages and <system-reminder> blocks
//
// Scrubbing: the checkout's path becomes /testbed (SWE-bench's; also in Claude Code's project
// slug), the throwaway HOME ~; the
// request's metadata (a device id) and headers other than anthropic-beta are not kept.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startAnthropicDouble } from '../../tests/agents/lib/anthropic_double.mjs';
import { CLAUDE, claudeMissing } from '../../tests/agents/lib/claude.mjs';

const here = new URL('.', import.meta.url).pathname;

function parseArgs(argv) {
  const o = { out: join(here, 'data/claude-code-2.1.332.json'), model: '', cadence: false, turns: 40, textEvery: 0 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--cadence') o.cadence = true;
    else if (k === '--out') o.out = resolve(argv[++i]);
    else if (k === '--model') o.model = argv[++i];
    else if (k === '--turns') o.turns = Number(argv[++i]);
    else if (k === '--text-every') o.textEvery = Number(argv[++i]);
    else throw new Error(`unknown option ${k}`);
  }
  return o;
}

// A checkout like a SWE-bench one: a git repository with one commit, clean.
function checkout() {
  const ws = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-cc-capture-')));
  writeFileSync(join(ws, 'README.md'), 'A project.\n');
  const env = { ...process.env, GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'bench',
    GIT_COMMITTER_EMAIL: 'bench@example.com', GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z' };
  for (const args of [['init', '-q', '-b', 'main'], ['add', '-A'], ['commit', '-q', '-m', 'Initial commit']]) execFileSync('git', args, { cwd: ws, env });
  return ws;
}

async function runClaude({ double, ws, home, maxTurns, model }) {
  const args = ['-p', 'Fix the failing test.', '--output-format', 'json', '--allowedTools', 'Bash,Read', '--max-turns', String(maxTurns)];
  if (model) args.push('--model', model);
  const child = spawn(CLAUDE, args, {
    cwd: ws, stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH, HOME: home, TMPDIR: tmpdir(), LANG: 'C.UTF-8', ANTHROPIC_BASE_URL: double.url,
      ANTHROPIC_API_KEY: 'sk-ant-api03-model-double', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1', NO_PROXY: '127.0.0.1',
    },
  });
  let stderr = '';
  child.stdout.resume();
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 600000);
  const code = await new Promise((r) => child.on('close', r));
  clearTimeout(timer);
  if (code !== 0) throw new Error(`claude exited ${code}: ${stderr.slice(0, 2000)}\ndouble errors: ${double.errors.join('\n')}`);
}

const textOf = (content) => (typeof content === 'string' ? content : content.map((b) => b.text ?? '').join(''));

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const missing = claudeMissing();
  if (missing) throw new Error(missing);
  const ws = checkout();
  const home = mkdtempSync(join(tmpdir(), 'contextd-cc-home-'));
  const turns = o.cadence ? o.turns : 1;
  const script = Array.from({ length: turns }, (_, i) => ({
    ...(o.textEvery && i % o.textEvery === o.textEvery - 1 ? { text: `Step ${i} done.` } : {}),
    tools: [{ name: 'Bash', input: { command: `echo step ${i}`, description: `step ${i}` } }],
  }));
  const double = await startAnthropicDouble({ script: [...script, { text: 'Done.' }] });
  try {
    await runClaude({ double, ws, home, maxTurns: turns + 5, model: o.model });
    if (double.errors.length) throw new Error(`the double refused requests: ${double.errors.join('\n')}`);
    const main = double.requests.filter((r) => r.main);
    // Claude Code also names the project by its path with '/' as '-' (its memory directory).
    const scrub = (s) => s.split(ws).join('/testbed').split(ws.replace(/[/.]/g, '-')).join('-testbed').split(home).join('~');
    if (o.cadence) {
      const last = main[main.length - 1].json.messages;
      const shape = last.map((m) => (m.role === 'assistant' ? (m.content.some((b) => b.type === 'text') ? 'A' : 'a') : m.role[0])).join('');
      process.stdout.write(`${main.length} main requests, model ${main[0].json.model}\n` +
        `last request's messages (a: silent assistant turn, A: one with text, u: user, s: system): ${shape}\n` +
        `role:"system" at ${last.flatMap((m, i) => (m.role === 'system' ? [i] : [])).join(', ')}\n`);
      for (const [i, m] of last.entries()) {
        if (m.role === 'system' && i > 1) process.stdout.write(`  ${i}: ${scrub(textOf(m.content)).slice(0, 160)}\n`);
      }
      return;
    }
    const req = main[0];
    const body = req.json;
    const [user, environment] = body.messages;
    if (user?.role !== 'user' || environment?.role !== 'system') {
      throw new Error(`expected [user, system] in the first request, got ${body.messages.map((m) => m.role).join(', ')}`);
    }
    const version = execFileSync(CLAUDE, ['--version'], { encoding: 'utf8' }).trim();
    const pinned = {
      note: `What ${version} sends on the first main-loop request of \`claude -p\` (model ${body.model}), captured offline by ` +
        'bench/model/capture_claude_code.mjs against tests/agents/lib/anthropic_double.mjs; the checkout path is /testbed.',
      claude_code_version: version.split(' ')[0],
      model: body.model,
      anthropic_beta: req.headers['anthropic-beta'],
      request: { max_tokens: body.max_tokens, thinking: body.thinking, context_management: body.context_management, output_config: body.output_config },
      system: JSON.parse(scrub(JSON.stringify(body.system))),
      tools: JSON.parse(scrub(JSON.stringify(body.tools))),
      // The first user message: these <system-reminder> blocks, then the task.
      first_user_reminders: user.content.slice(0, -1).map((b) => scrub(b.text)),
      // The role:"system" message after it.
      environment: scrub(textOf(environment.content)),
    };
    writeFileSync(o.out, JSON.stringify(pinned, null, 1) + '\n');
    process.stdout.write(`wrote ${o.out}: ${body.system.length} system blocks, ${body.tools.length} tools, ` +
      `${pinned.first_user_reminders.length} reminders, environment ${pinned.environment.length} chars\n`);
  } finally {
    await double.close();
    rmSync(ws, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((e) => { process.stderr.write(`capture_claude_code: ${e.stack ?? e}\n`); process.exit(1); });
