// Runs the pinned OpenCode CLI (npm opencode-ai, tools/npm/opencode) headless (`opencode run`)
// against a model double, offline: a throwaway HOME and XDG dirs, models.dev never fetched
// (OPENCODE_DISABLE_MODELS_FETCH: the catalog bundled in the binary is used), no autoupdate,
// share, LSP downloads, default plugins, Claude Code compatibility, external skills or project
// config; its config (OPENCODE_CONFIG, written to the throwaway home) points the Anthropic
// provider at `modelUrl`/v1 and names contextd as a remote MCP server. OpenCode 1.18.33 names MCP
// tools `<server>_<tool>` (`contextd_branch_create`) and sends `x-session-id` (and
// `x-session-affinity`) with its session id on every model request.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const OPENCODE = new URL('../../../tools/npm/opencode/node_modules/.bin/opencode', import.meta.url).pathname;

export function opencodeMissing() {
  return existsSync(OPENCODE) ? null : `OpenCode is not installed at ${OPENCODE} (run scripts/install-deps.sh)`;
}

// The switches that keep `opencode run` offline and independent of the machine's own setup.
export const kOfflineEnv = {
  OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1', OPENCODE_DISABLE_CLAUDE_CODE: '1',
  OPENCODE_DISABLE_CLAUDE_CODE_PROMPT: '1', OPENCODE_DISABLE_CLAUDE_CODE_SKILLS: '1', OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
  OPENCODE_DISABLE_PROJECT_CONFIG: '1', OPENCODE_DISABLE_TERMINAL_TITLE: '1', OPENCODE_DISABLE_EMBEDDED_WEB_UI: '1',
  OPENCODE_DISABLE_AUTOCOMPACT: '1',
};

// Runs `opencode run PROMPT` in `cwd` and resolves with {code, signal, stdout, stderr}. `mcpUrl`:
// contextd's MCP endpoint (<url>/mcp), named `server` (default `contextd`). Everything is allowed
// (permission "*": "allow"). Kills the process group after `timeoutMs`.
export async function runOpenCode({ prompt, modelUrl, mcpUrl, cwd, server = 'contextd', model = 'anthropic/claude-sonnet-4-5', timeoutMs = 180000, env = {} }) {
  const home = mkdtempSync(join(tmpdir(), 'contextd-opencode-home-'));
  const xdg = { XDG_CONFIG_HOME: join(home, '.config'), XDG_DATA_HOME: join(home, '.local/share'), XDG_CACHE_HOME: join(home, '.cache'), XDG_STATE_HOME: join(home, '.local/state') };
  for (const d of Object.values(xdg)) mkdirSync(d, { recursive: true });
  const config = {
    $schema: 'https://opencode.ai/config.json', model, autoupdate: false, share: 'disabled',
    provider: { anthropic: { options: { baseURL: `${modelUrl}/v1`, apiKey: 'sk-ant-api03-model-double' } } },
    permission: { '*': 'allow' },
    ...(mcpUrl ? { mcp: { [server]: { type: 'remote', url: mcpUrl, enabled: true } } } : {}),
  };
  const configPath = join(home, 'opencode.json');
  writeFileSync(configPath, JSON.stringify(config));
  const child = spawn(OPENCODE, ['run', '--model', model, prompt], {
    cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH, HOME: home, TMPDIR: tmpdir(), LANG: 'C.UTF-8', NO_PROXY: '127.0.0.1',
      ...xdg, ...kOfflineEnv, OPENCODE_CONFIG: configPath, ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => { stdout += c; });
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
  const { code, signal } = await new Promise((resolve) => child.on('close', (c, s) => resolve({ code: c, signal: s })));
  clearTimeout(timer);
  rmSync(home, { recursive: true, force: true });
  return { code, signal, stdout, stderr };
}
