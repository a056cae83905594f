// Shared by tests/ui and bench/ui: find Debian's chromium and playwright-core (tools/npm/ui), or
// say why they are missing; where screenshots go.
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PW = new URL('../../tools/npm/ui/node_modules/playwright-core/index.mjs', import.meta.url).pathname;
const CANDIDATES = [process.env.CONTEXTD_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']
  .filter(Boolean);

// {chromium, executablePath} or {skip: reason}.
export async function loadBrowser() {
  const executablePath = CANDIDATES.find((p) => existsSync(p));
  if (!executablePath) return { skip: 'chromium is not installed (apt-get install chromium; scripts/install-deps.sh does)' };
  if (!existsSync(PW)) return { skip: 'playwright-core is missing (npm ci in tools/npm/ui; scripts/install-deps.sh does)' };
  const { chromium } = await import(PW);
  return { chromium, executablePath };
}

export async function launch(chromium, executablePath) {
  return chromium.launch({
    executablePath,
    headless: true,
    // Containers and CI runners: no user namespaces for the sandbox, small /dev/shm.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

// $CONTEXTD_TEST_ARTIFACTS/<name>, else a fresh temp dir.
export function artifactsDir(name) {
  const base = process.env.CONTEXTD_TEST_ARTIFACTS;
  if (base) {
    const dir = join(base, name);
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  return mkdtempSync(join(tmpdir(), `contextd-${name}-`));
}
