// Page-load bench of the trail viewer (issue 22: a session with 10,000 events opens in < 1 s).
// Seeds a real contextd data dir through the binary: an MCP client makes N/2 proxied
// fs__read_text_file calls (each a tool_call and a tool_result event) in the session root, then
// times in Debian's chromium (playwright-core) how long the page takes from navigation to the
// first rendered event row of that session (cold: the server computes the folded view; warm:
// cached), the sessions list, and one "load more" page. No peer to compare against: the target
// is the 1 s.
//   node bench/ui/trail_ui_load.mjs [--events 10000] [--runs 5]
// CONTEXTD_BINARY picks the binary (default build/debug); use a release build for real numbers.
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setMaxListeners } from 'node:events';
import { startHttpServer, connectHttp, cleanup, tempDataDir, BINARY } from '../../tests/e2e/harness.mjs';
import { loadBrowser, launch } from '../../tests/ui/lib.mjs';

const { values } = parseArgs({ options: { events: { type: 'string', default: '10000' }, runs: { type: 'string', default: '5' } } });
// The MCP SDK client adds an abort listener per call in flight to one signal.
setMaxListeners(0);
const EVENTS = Number(values.events);
const RUNS = Number(values.runs);
const FS_SERVER = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', import.meta.url).pathname;

const b = await loadBrowser();
if (b.skip) { console.log(`skipped: ${b.skip}`); process.exit(0); }

const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-uibench-files-')));
writeFileSync(join(files, 'note.txt'), 'a short note the agent reads again and again: line one\nline two\n');
const dataDir = tempDataDir();
const config = join(dataDir, 'contextd.yaml');
writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
  `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`, '    timeout_seconds: 20', ''].join('\n'));
const server = await startHttpServer({ dataDir, args: ['--config', config, '--log-level', 'warn'] });
const base = server.url.replace(/\/mcp$/, '');
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

try {
  const { client } = await connectHttp(server.url, 'bench');
  const t0 = Date.now();
  const calls = EVENTS / 2;
  for (let i = 0; i < calls; i += 25) {
    await Promise.all(Array.from({ length: Math.min(25, calls - i) }, () =>
      client.callTool({ name: 'fs__read_text_file', arguments: { path: join(files, 'note.txt') } })));
  }
  const seedS = (Date.now() - t0) / 1000;
  const sessions = await (await fetch(`${base}/api/v1/sessions`)).json();
  const root = sessions.sessions[0].root_id;
  console.log(`seeded ${sessions.sessions[0].events} events in ${seedS.toFixed(1)} s (binary ${BINARY})`);

  const browser = await launch(b.chromium, b.executablePath);
  const rows = { session: [], list: [], more: [] };
  for (let run = 0; run < RUNS; ++run) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // From navigation start to the first event row of the session (what the user waits for).
    await page.goto(`${base}/ui/?session=${encodeURIComponent(root)}`, { waitUntil: 'commit' });
    await page.locator('#tree .events .event').first().waitFor();
    rows.session.push(await page.evaluate(() => performance.now()));
    const t = Date.now();
    await page.locator('#tree .more').first().click();
    await page.waitForFunction(() => document.querySelectorAll('#tree .events .event').length >= 200);
    rows.more.push(Date.now() - t);
    await page.goto(`${base}/ui/`, { waitUntil: 'commit' });
    await page.locator('.session-row').first().waitFor();
    rows.list.push(await page.evaluate(() => performance.now()));
    await page.close();
  }
  await browser.close();
  const fmt = (xs) => `first ${xs[0].toFixed(0)} ms, median ${median(xs).toFixed(0)} ms, max ${Math.max(...xs).toFixed(0)} ms`;
  console.log(`session of ${EVENTS} events, navigation -> first event row: ${fmt(rows.session)}`);
  console.log(`"load more" (next 100 events): ${fmt(rows.more)}`);
  console.log(`sessions list, navigation -> first row: ${fmt(rows.list)}`);
  await client.close();
} finally {
  await server.stop();
  cleanup(dataDir);
  cleanup(files);
}
