import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import {
  CLI,
  REPO_ROOT,
  cleanEnv,
  cleanup,
  ensureBuilt,
  freePort,
  makeTempDir,
  track,
} from '../helpers/mcp-fixtures.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { mountTmpfs, reportNoTmpfs } from '../helpers/tmpfs.js';

// A database that cannot be used at start-up ends the process with one line on stderr that names
// the file or host:port and the cause, exit code 1, and no stack trace.

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI; a command that unexpectedly starts serving is killed after 20 s. */
function idem(args: string[]): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const proc = track(
      spawn(process.execPath, [CLI, ...args], {
        cwd: REPO_ROOT,
        env: cleanEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    let stdout = '';
    let stderr = '';
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    proc.once('error', reject);
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Exit 1, nothing on stdout, and exactly `line` on stderr. */
function expectOneLine(run: CliRun, line: string): void {
  expect(run.stderr).toBe(`${line}\n`);
  expect(run.code).toBe(1);
  expect(run.stdout).toBe('');
}

beforeAll(ensureBuilt);
afterEach(cleanup);

describe('start-up with a SQLite file that cannot be used', () => {
  it('a missing directory names the path (serve, migrate)', async () => {
    const dir = join(makeTempDir(), 'no', 'such', 'dir');
    const file = join(dir, 'x.sqlite');
    const line = `idem: unavailable: cannot open the SQLite database at ${file}: the directory ${dir} does not exist`;
    expectOneLine(await idem(['serve', '--db', file, '--port', '0']), line);
    expectOneLine(await idem(['migrate', '--db', file]), line);
  });

  it('a directory where the file should be', async () => {
    const dir = makeTempDir();
    expectOneLine(
      await idem(['serve', '--db', dir, '--port', '0']),
      `idem: unavailable: cannot open the SQLite database at ${dir}: it is a directory`,
    );
  });
});

const tmpfs = mountTmpfs(1024);
afterAll(() => {
  if ('dir' in tmpfs) tmpfs.unmount();
});

if ('dir' in tmpfs) {
  describe('start-up on a read-only or full file system (a tmpfs)', () => {
    it('a read-only mount: EROFS, for a new file and for an existing database', async () => {
      const existing = join(tmpfs.dir, 'existing.sqlite');
      openSqlite(existing).close();
      tmpfs.remount('ro');
      try {
        for (const file of [existing, join(tmpfs.dir, 'new.sqlite')]) {
          expectOneLine(
            await idem(['serve', '--db', file, '--port', '0']),
            `idem: unavailable: cannot open the SQLite database at ${file}: the file system is read-only (EROFS)`,
          );
        }
      } finally {
        tmpfs.remount('rw');
      }
    });

    it('a full disk: SQLITE_FULL, naming the file', async () => {
      const filler = tmpfs.fill();
      try {
        const file = join(tmpfs.dir, 'full.sqlite');
        expectOneLine(
          await idem(['serve', '--db', file, '--port', '0']),
          `idem: unavailable: the database disk is full (SQLITE_FULL) at ${file}; nothing was committed`,
        );
      } finally {
        tmpfs.free(filler);
      }
    });
  });
} else {
  reportNoTmpfs('the read-only and full start-up tests', tmpfs.reason);
  describe('start-up on a read-only or full file system (a tmpfs)', () => {
    it('is not run: no tmpfs could be mounted (see stderr)', () => expect(tmpfs.reason).not.toBe(''));
  });
}

describe('start-up with a PostgreSQL that cannot be used', () => {
  it('a server that is not listening names host:port (never busy)', async () => {
    const port = await freePort();
    const line = `idem: unavailable: PostgreSQL at 127.0.0.1:${port} refused the connection (ECONNREFUSED)`;
    const url = `postgres://postgres@127.0.0.1:${port}/test`;
    expectOneLine(await idem(['serve', '--db', url, '--port', '0']), line);
    expectOneLine(await idem(['serve', '--db', url, '--db-schema', 'idem_x', '--port', '0']), line);
    expectOneLine(await idem(['migrate', '--db', url]), line);
  });

  it.runIf(postgresAvailable)('a database that does not exist names it and the server', async () => {
    const url = new URL(POSTGRES_URL);
    url.pathname = '/idem_no_such_database';
    expectOneLine(
      await idem(['serve', '--db', url.href, '--port', '0']),
      `idem: unavailable: PostgreSQL at ${url.hostname}:${url.port || 5432} has no database "idem_no_such_database" (3D000)`,
    );
  });
});
