// A throwaway PostgreSQL server for the agent tests that need contextd's shared store (decision
// 0023: no start-up recovery, MCP sessions and branches outlive an instance): the Debian binaries
// (/usr/lib/postgresql/<N>/bin, or $CONTEXTD_PG_BIN), a temp directory, 127.0.0.1 on a free port,
// durability off. As root (CI), initdb and postgres run as `nobody`, since PostgreSQL refuses
// root (as src/store/testing/pg_test_server does). Not thread-safe: one server per call.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

// The directory holding initdb and postgres, or null.
export function pgBinDir() {
  if (process.env.CONTEXTD_PG_BIN) return existsSync(join(process.env.CONTEXTD_PG_BIN, 'initdb')) ? process.env.CONTEXTD_PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], 'bin') : null;
}

// Why a PostgreSQL server cannot be started here, or null.
export function postgresMissing() {
  return pgBinDir() ? null : 'PostgreSQL is not installed (initdb not found; scripts/install-deps.sh installs it)';
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// Starts a server with one empty database `contextd`. Resolves with {url (postgresql:// over TCP),
// stop()}; rejects with the log's tail when it cannot start.
export async function startPostgres({ timeoutMs = 30000 } = {}) {
  const bin = pgBinDir();
  if (!bin) throw new Error(postgresMissing());
  const dir = mkdtempSync(join(tmpdir(), 'contextd-pg-'));
  const as = {};
  if (userInfo().uid === 0) {
    const nobody = spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' });
    as.uid = Number(nobody.stdout.trim());
    as.gid = Number(spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, as.uid, as.gid);
  }
  const data = join(dir, 'data');
  const env = { PATH: process.env.PATH, LC_ALL: 'C', HOME: dir };
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
    { ...as, env, encoding: 'utf8', timeout: timeoutMs });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${init.error ?? ''}\n${(init.stderr ?? '').slice(-1500)}`);
  }
  const port = await freePort();
  const proc = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', dir,
    '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'synchronous_commit=off',
    '-c', 'full_page_writes=off', '-c', 'max_connections=100', '-c', 'shared_buffers=32MB'],
  { ...as, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`postgres did not start:\n${log.slice(-1500)}`)), timeoutMs);
      const onData = (c) => {
        log += c;
        if (log.includes('ready to accept connections')) { clearTimeout(timer); resolve(); }
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`postgres exited ${code}:\n${log.slice(-1500)}`)); });
    });
    const created = spawnSync(join(bin, 'createdb'), ['-h', dir, '-p', String(port), '-U', 'postgres', 'contextd'],
      { ...as, env, encoding: 'utf8', timeout: timeoutMs });
    if (created.status !== 0) throw new Error(`createdb failed: ${created.stderr}`);
  } catch (e) {
    proc.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/contextd`,
    log: () => log,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');   // fast shutdown
      const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
