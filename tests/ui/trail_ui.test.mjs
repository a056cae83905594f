// The trail viewer (issue 22) in a real browser: Debian's chromium driven by playwright-core
// (tools/npm/ui) against the built contextd binary. A real scenario over MCP (a branch reading
// files through the fs upstream, one secret redacted, returned; a second branch force-returned by
// its budget), then the page: the sessions list and chart, the session's tree, a branch unfolded
// with the keyboard, an event's payload with its redaction marker highlighted, search, a live
// session followed over SSE without reload, a narrow window, and the auth refusals (cross-origin
// 403, missing bearer token 401, the page's token form). Assertions are structural (elements
// present and visible); screenshots go to $CONTEXTD_TEST_ARTIFACTS/trail_ui or a temp dir.
// Skips with a message when chromium or playwright-core is missing.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer, connectHttp, cleanup, tempDataDir, textOf } from '../e2e/harness.mjs';
import { loadBrowser, launch, artifactsDir } from './lib.mjs';

const upstreams = new URL('../../tools/npm/upstreams/node_modules/@modelcontextprotocol/', import.meta.url).pathname;
const FS_SERVER = join(upstreams, 'server-filesystem/dist/index.js');
const SECRET = 'ghp_' + 'Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa'.slice(0, 36);
const TOKEN = 'ui-test-token-0123456789abcdef';

const browserInfo = await loadBrowser();
const skip = browserInfo.skip ?? (existsSync(FS_SERVER) ? false : 'run npm ci in tools/npm/upstreams');
if (skip) console.log(`# skipped: ${skip}`);

function setup() {
  const files = realpathSync(mkdtempSync(join(tmpdir(), 'contextd-ui-files-')));
  writeFileSync(join(files, 'secret.txt'), `config\napi_token_for_ci ${SECRET}\nend\n`);
  writeFileSync(join(files, 'small.txt'), 'hello from the filesystem\n');
  writeFileSync(join(files, 'big.txt'), Array.from({ length: 3000 }, (_, i) => `line ${i} of a large log`).join('\n'));
  const dataDir = tempDataDir();
  const config = join(dataDir, 'contextd.yaml');
  // The model gateway too, its upstream unreachable: a request still leaves a usage row, so its
  // conversation is listed (with no folds).
  writeFileSync(config, ['upstreams:', '  - name: fs', '    stdio:', '      command: node',
    `      args: [${JSON.stringify(FS_SERVER)}, ${JSON.stringify(files)}]`, '    timeout_seconds: 20',
    'model_gateway:', '  anthropic:', '    base_url: "http://127.0.0.1:9"', ''].join('\n'));
  return { files, dataDir, config };
}

async function call(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  return r;
}

function base(url) { return url.replace(/\/mcp$/, ''); }

async function shot(page, dir, name) {
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}

test('trail viewer: sessions, tree, unfold, event detail, search, live updates, narrow window', { skip, timeout: 90_000 }, async () => {
  const { files, dataDir, config } = setup();
  const server = await startHttpServer({ dataDir, args: ['--config', config] });
  const browser = await launch(browserInfo.chromium, browserInfo.executablePath);
  const shots = artifactsDir('trail_ui');
  console.log(`# screenshots in ${shots}`);
  try {
    const { client } = await connectHttp(server.url, 'ui-agent');
    const a = await call(client, 'branch_create', { description: 'read the config files', prompt: 'find the CI token', budget: 4000 });
    assert.ok(!a.isError, textOf(a));
    const secret = await call(client, 'fs__read_text_file', { path: join(files, 'secret.txt') });
    assert.match(textOf(secret), /\[REDACTED:github-pat/);
    await call(client, 'fs__read_text_file', { path: join(files, 'small.txt') });
    const ret = await call(client, 'branch_return', { message: 'the CI config holds a github token (redacted)' });
    assert.ok(!ret.isError, textOf(ret));
    const b = await call(client, 'branch_create', { description: 'read the big log', prompt: 'read big.txt', budget: 300 });
    const big = await call(client, 'fs__read_text_file', { path: join(files, 'big.txt') });
    assert.equal(big.isError, true, 'the big read exhausts the 300-token budget');
    const aId = a.structuredContent.branch_id;
    const bId = b.structuredContent.branch_id;

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const consoleErrors = [];
    page.on('pageerror', (e) => consoleErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });

    // 1. Sessions list with the chart.
    await page.goto(`${base(server.url)}/ui/`);
    const row = page.locator('.session-row').first();
    await row.waitFor();
    assert.ok(await page.locator('#chart svg').first().isVisible(), 'chart of tokens saved');
    assert.ok(await page.locator('#chart rect').count() >= 1);
    const cells = await row.locator('td').allTextContents();
    assert.equal(cells.length, 8, cells.join('|'));
    assert.equal(cells[3], '2', `two branches: ${cells.join('|')}`);
    console.log(`# ${await shot(page, shots, '1-sessions')}`);

    // 2. The session as a tree: root unfolded, both branches folded with their budgets.
    await row.locator('a.session-link').click();
    await page.locator(`.scope[data-scope-id="${aId}"]`).waitFor();
    const scopeA = page.locator(`.scope[data-scope-id="${aId}"]`);
    const scopeB = page.locator(`.scope[data-scope-id="${bId}"]`);
    assert.equal(await scopeA.getAttribute('aria-expanded'), 'false');
    assert.ok(await scopeA.locator('.budget .bar').isVisible(), 'budget bar');
    assert.ok(await scopeB.locator('.badge.forced').isVisible(), 'force-return reason shown');
    assert.match(await scopeB.locator('.badge.forced').textContent(), /budget/);
    assert.ok(await scopeA.locator('.summary').isVisible(), 'a folded branch shows its summary');
    assert.ok(await page.locator('#session-totals').textContent().then((t) => /saved/.test(t)));

    // 3. Unfold a branch in place with the keyboard, open the redacted result's detail.
    await scopeA.locator('> .scope-head').focus();
    await page.keyboard.press('Enter');
    await scopeA.locator('.events .event').first().waitFor();
    assert.equal(await scopeA.getAttribute('aria-expanded'), 'true');
    const redacted = scopeA.locator('.event', { has: page.locator('.red') }).first();
    assert.ok(await redacted.isVisible(), 'the event with a redaction is marked in the list');
    await redacted.click();
    const mark = page.locator('#event-detail mark.redaction').first();
    await mark.waitFor();
    assert.match(await mark.textContent(), /^\[REDACTED:github-pat/);
    assert.ok(!(await page.locator('#event-detail pre').textContent()).includes(SECRET), 'no secret in the page');
    console.log(`# ${await shot(page, shots, '2-session-unfolded-event')}`);
    // ArrowLeft folds it back.
    await scopeA.locator('> .scope-head').focus();
    await page.keyboard.press('ArrowLeft');
    assert.equal(await scopeA.getAttribute('aria-expanded'), 'false');

    // 4. Search ("/" focuses the box), open a hit: its branch is unfolded.
    await page.locator('body').press('/');
    await page.keyboard.type('github token');
    await page.keyboard.press('Enter');
    const hit = page.locator('#search-results .hit a').first();
    await hit.waitFor();
    console.log(`# ${await shot(page, shots, '3-search')}`);
    await hit.click();
    await page.waitForFunction((id) => document.querySelector(`.scope[data-scope-id="${id}"]`)?.getAttribute('aria-expanded') === 'true', aId);

    // 5. Live: a new branch and a proxied call appear without a reload.
    await page.locator('#live-status.on').waitFor();
    await page.evaluate(() => { window.__noReload = true; });
    const rootEventsBefore = await page.locator('#tree > .scope > .body > .events .event').count();
    const c = await call(client, 'branch_create', { description: 'live branch while watching', prompt: 'watch', budget: 4000 });
    const cId = c.structuredContent.branch_id;
    await call(client, 'fs__read_text_file', { path: join(files, 'small.txt') });
    await page.locator(`.scope[data-scope-id="${cId}"]`).waitFor({ timeout: 10_000 });
    await page.waitForFunction((n) => document.querySelectorAll('#tree > .scope > .body > .events .event').length > n, rootEventsBefore);
    await page.locator(`.scope[data-scope-id="${cId}"] > .scope-head`).click();
    await page.locator(`.scope[data-scope-id="${cId}"] .event .lbl`, { hasText: 'fs__read_text_file' }).first().waitFor();
    // Another call in the unfolded live branch is appended to it.
    const liveBefore = await page.locator(`.scope[data-scope-id="${cId}"] .event`).count();
    await call(client, 'fs__read_text_file', { path: join(files, 'secret.txt') });
    await page.waitForFunction(([id, n]) => document.querySelectorAll(`.scope[data-scope-id="${id}"] .event`).length > n, [cId, liveBefore]);
    assert.equal(await page.evaluate(() => window.__noReload), true, 'no reload');
    console.log(`# ${await shot(page, shots, '4-live')}`);

    // 6. A narrow window: the tree and the detail stack, nothing cut off sideways.
    await page.setViewportSize({ width: 420, height: 800 });
    assert.ok(await page.locator('#tree').isVisible());
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 1, `no horizontal scroll at 420px (overflow ${overflow}px)`);
    console.log(`# ${await shot(page, shots, '5-narrow')}`);

    // 7. The model gateway's conversations with their folds made and skipped.
    await page.setViewportSize({ width: 1280, height: 800 });
    const model = await fetch(`${base(server.url)}/v1/messages`, { method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-test', 'anthropic-version': '2023-06-01',
        'x-claude-code-session-id': 'ui-conversation' },
      body: JSON.stringify({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'hi' }] }) });
    assert.ok(model.status >= 500, `the upstream is unreachable: ${model.status}`);
    await page.goto(`${base(server.url)}/ui/`);
    const conversation = page.locator('.conversation-row[data-conversation="ui-conversation"]');
    await conversation.waitFor();
    assert.ok(await page.locator('#conversations-view').isVisible());
    assert.equal(await conversation.locator('td.folds-made').textContent(), '0');
    assert.equal(await conversation.locator('td.folds-skipped').textContent(), '0');
    assert.equal(await conversation.locator('td.skip-reasons').textContent(), 'none');
    assert.equal(await conversation.locator('td.branch-views').textContent(), '0');
    console.log(`# ${await shot(page, shots, '6-conversations')}`);

    // 8. Cross-origin requests are refused even from loopback.
    const api = `${base(server.url)}/api/v1/sessions`;
    assert.equal((await fetch(api, { headers: { Origin: 'http://evil.test' } })).status, 403);
    const port = new URL(server.url).port;
    // A loopback origin on another port passes the listener's allowlist, not Origin == Host.
    assert.equal((await fetch(api, { headers: { Origin: `http://127.0.0.1:${Number(port) + 1}` } })).status, 403);
    assert.equal((await fetch(api)).status, 200);
    assert.deepEqual(consoleErrors, []);
    await context.close();
    await client.close();
  } finally {
    await browser.close();
    await server.stop();
    cleanup(dataDir);
    cleanup(files);
  }
});

test('trail viewer with bearer tokens: 401 without one, the page asks for it, #token= works', { skip, timeout: 60_000 }, async () => {
  const dataDir = tempDataDir();
  const tokens = join(dataDir, 'tokens');
  writeFileSync(tokens, `acme:${TOKEN}\n`);
  const server = await startHttpServer({ dataDir, args: ['--auth-token-file', tokens] });
  const browser = await launch(browserInfo.chromium, browserInfo.executablePath);
  const shots = artifactsDir('trail_ui');
  try {
    const api = `${base(server.url)}/api/v1/sessions`;
    const refused = await fetch(api);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /Bearer/);
    assert.equal((await fetch(api, { headers: { Authorization: 'Bearer wrong-token-0123456789' } })).status, 401);
    const ok = await fetch(api, { headers: { Authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).tenant, 'acme');

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${base(server.url)}/ui/`);
    await page.locator('#token-form').waitFor();
    assert.ok(await page.locator('#token-input').isVisible());
    console.log(`# ${await shot(page, shots, '7-token-form')}`);
    await page.locator('#token-input').fill(TOKEN);
    await page.keyboard.press('Enter');
    await page.locator('#sessions tbody tr').first().waitFor();
    assert.equal(await page.locator('#token-form').isVisible(), false);
    // No model gateway: no conversations panel.
    assert.equal(await page.locator('#conversations-view').isVisible(), false);

    const second = await browser.newPage();
    await second.goto(`${base(server.url)}/ui/#token=${TOKEN}`);
    await second.locator('#sessions-view').waitFor();
    assert.equal(await second.locator('#token-form').isVisible(), false);
    assert.ok(!second.url().includes(TOKEN), 'the token leaves the address bar');
  } finally {
    await browser.close();
    await server.stop();
    cleanup(dataDir);
  }
});
