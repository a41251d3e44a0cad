import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { openTestStore } from '../helpers/store-fixtures.js';

const ROOT = fileURLToPath(new URL('../../packages/idem/', import.meta.url));
const CHILD = fileURLToPath(new URL('../helpers/child-caller.mjs', import.meta.url));
// What the child process loads (through `idem`: node_modules/idem is packages/idem); each must be
// compiled from the current packages/idem/src/.
const BUILT = ['adapters/sqlite/index.js', 'adapters/sqlite/sqlite-store.js', 'executor/executor.js'].map(
  (file) => path.join(ROOT, 'dist', file),
);
const PROCESSES = 8;

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

/** Children run the compiled library: build dist/ when it is missing or older than src/. */
function ensureBuilt(): void {
  const newest = newestSource(path.join(ROOT, 'src'));
  const fresh = () => BUILT.every((file) => fs.existsSync(file) && fs.statSync(file).mtimeMs >= newest);
  if (fresh()) return;
  // Wherever npm put TypeScript (hoisted to the workspace root, or in the package's own node_modules).
  const tsc = createRequire(path.join(ROOT, 'package.json')).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'pipe' });
  } catch (error) {
    // tsc still emits when a file elsewhere in src/ does not typecheck (noEmitOnError is off); type
    // errors are `npm run typecheck`'s business. Only a missing or stale emit of what the child loads is.
    if (fresh()) return;
    const output = String((error as { stdout?: unknown }).stdout ?? '');
    throw new Error(`building dist/ for the child processes failed:\n${output}`, { cause: error });
  }
}

interface ChildReport {
  pid: number;
  ok: boolean;
  replayed?: boolean;
  operationId?: string;
  result?: Record<string, unknown>;
  code?: string;
}

interface Child {
  process: ChildProcess;
  ready: Promise<void>;
  exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

function spawnCaller(dbPath: string, key: string, body: string): Child {
  const child = fork(CHILD, [dbPath, key, body], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ready = new Promise<void>((resolve, reject) => {
    child.once('message', (message) =>
      message === 'ready' ? resolve() : reject(new Error(String(message))),
    );
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before ready: ${stderr}`)));
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  );
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { process: child, ready, exited };
}

describe('one key from 8 OS processes at once', () => {
  beforeAll(() => {
    ensureBuilt();
  });

  it('runs the effect exactly once and every process gets the same operation', async () => {
    // The parent creates the schema and the notes table, then only observes.
    const t = openTestStore();
    onTestFinished(() => t.close());

    const children = Array.from({ length: PROCESSES }, () => spawnCaller(t.path, 'shared-key', 'from many'));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.process.send('go'); // the barrier: all are open and waiting
    const exits = await Promise.all(children.map((c) => c.exited));

    for (const exit of exits) expect(exit.code, exit.stderr).toBe(0);
    const reports = exits.map((exit) => JSON.parse(exit.stdout.trim()) as ChildReport);
    expect(new Set(reports.map((r) => r.pid)).size).toBe(PROCESSES);
    for (const report of reports) expect(report, JSON.stringify(report)).toMatchObject({ ok: true });

    expect(await t.countNotes()).toBe(1);
    expect(await t.countReceipts()).toBe(1);
    const [note] = await t.listNotes();
    const [receipt] = await t.store.ledger.list();
    expect(reports.filter((r) => r.replayed === false)).toHaveLength(1);
    for (const report of reports) {
      expect(report.operationId).toBe(receipt?.operationId);
      expect(report.result).toEqual(receipt?.result);
      expect(report.result?.resource_id).toBe(note?.note_id);
    }
  });

  it('runs distinct keys from 8 processes once each', async () => {
    const t = openTestStore();
    onTestFinished(() => t.close());

    const children = Array.from({ length: PROCESSES }, (_, i) =>
      spawnCaller(t.path, `key-${i}`, `body-${i}`),
    );
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.process.send('go');
    const exits = await Promise.all(children.map((c) => c.exited));

    for (const exit of exits) expect(exit.code, exit.stderr).toBe(0);
    const reports = exits.map((exit) => JSON.parse(exit.stdout.trim()) as ChildReport);
    expect(reports.every((r) => r.ok && r.replayed === false)).toBe(true);
    expect(new Set(reports.map((r) => r.operationId)).size).toBe(PROCESSES);
    expect(await t.countNotes()).toBe(PROCESSES);
    expect((await t.listNotes()).map((n) => n.body).sort()).toEqual(
      Array.from({ length: PROCESSES }, (_, i) => `body-${i}`).sort(),
    );
  });
});
