/**
 * SQLite replays and first executions through this checkout's library and another commit's, in
 * alternating windows of one process, beside the naive idempotent transaction (issue 27; not part
 * of `npm run bench`): `npm run bench:ab -- REV` (default `HEAD`), with `LEVELS=1,8` (calls in
 * flight), `ROUNDS=15`, `WINDOW=400` (ms), `MODE=replay|first`, `SYNC=FULL|NORMAL`. REV's library is built by
 * `buildBaseline` into .tmp/bench-baseline/<sha>, as `npm run bench -- --baseline REV` does; both
 * builds run on the same better-sqlite3, each on a database of its own (synchronous=FULL unless told, 1,000 keys
 * to replay, 5,000 more receipts). Runs of separate processes differ here by up to a tenth from one
 * to the next; windows that take turns in one process share the machine's minutes, so a change of a
 * few percent shows. Prints the median calls/s of each side and their ratios.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildBaseline } from '../lib/baseline.js';
import { median } from '../lib/measure.js';
import { INSERT_NOTE_SQL, NOTES_SQL, noteBody, openRaw, type Synchronous } from '../lib/notes.js';
import { naiveSqlite } from '../suites/sqlite.js';

/** What this probe uses of a build's library (its own types are those of its own commit). */
interface Library {
  Executor: new (options: { store: unknown; authorize: () => boolean; logger: unknown }) => {
    run(operation: unknown, request: unknown): Promise<{ ok: boolean; replayed?: boolean }>;
  };
}
interface SqliteLibrary {
  openSqlite(
    path: string,
    options: { synchronous: Synchronous },
  ): {
    exec(sql: string): unknown;
    prepare(sql: string): { run(...params: unknown[]): unknown };
  };
  SqliteStore: new (db: unknown) => { close(): Promise<void> };
}

interface Side {
  readonly name: string;
  readonly keys: readonly string[];
  call(key: string, body: string, replayed: boolean): Promise<void>;
  close(): Promise<void>;
}

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** Idem from the compiled bench tree `distBench` (its packages/idem/src), on a new database. */
async function idemSide(name: string, distBench: string, dir: string): Promise<Side> {
  const load = async <T>(path: string) =>
    (await import(pathToFileURL(join(distBench, 'packages', 'idem', 'src', path)).href)) as T;
  const lib = await load<Library>('index.js');
  const sqlite = await load<SqliteLibrary>(join('adapters', 'sqlite', 'index.js'));
  const { silentLogger } = await load<{ silentLogger: unknown }>(join('core', 'logger.js'));
  const db = sqlite.openSqlite(join(dir, `${name}.sqlite`), { synchronous });
  db.exec(NOTES_SQL);
  const insert = db.prepare(INSERT_NOTE_SQL);
  const store = new sqlite.SqliteStore(db);
  const executor = new lib.Executor({ store, authorize: () => true, logger: silentLogger });
  const createNote = {
    name: 'create_note',
    version: 1,
    effect: (_db: unknown, args: { body: string }, ctx: { identity: { workspace: string } }) => {
      const noteId = `note_${randomUUID()}`;
      insert.run(noteId, ctx.identity.workspace, args.body, Date.now());
      return { resource_id: noteId, note_id: noteId };
    },
  };
  const call = async (key: string, body: string, replayed: boolean) => {
    const outcome = await executor.run(createNote, {
      principal: 'bench',
      workspace: 'default',
      key,
      args: { body },
    });
    if (!outcome.ok || outcome.replayed !== replayed) throw new Error(`${name}: ${JSON.stringify(outcome)}`);
  };
  const keys = await prefill((key, body) => call(key, body, false));
  return { name, keys, call, close: () => store.close() };
}

/** 1,000 keys to replay and 5,000 more receipts, so that both tables are past their first pages. */
async function prefill(call: (key: string, body: string) => unknown): Promise<string[]> {
  const keys = Array.from({ length: 1000 }, () => randomUUID());
  for (const [i, key] of keys.entries()) await call(key, noteBody(i));
  for (let i = 0; i < 5000; i += 1) await call(randomUUID(), noteBody(i));
  return keys;
}

const rev = process.argv[2] ?? 'HEAD';
const synchronous: Synchronous = process.env.SYNC === 'NORMAL' ? 'NORMAL' : 'FULL';
const mode = process.env.MODE === 'first' ? 'first' : 'replay';
const levels = (process.env.LEVELS ?? '1,8').split(',').map(Number);
const rounds = Number(process.env.ROUNDS ?? 15);
const windowMs = Number(process.env.WINDOW ?? 400);

const { sha, worker } = buildBaseline(ROOT, rev);
const dir = mkdtempSync(join(tmpdir(), 'idem-ab-'));
try {
  const naiveDb = openRaw(join(dir, 'naive.sqlite'), synchronous);
  const naive = naiveSqlite(naiveDb);
  const sides: Side[] = [
    await idemSide('that', join(worker, '..', '..'), dir),
    await idemSide('this', join(ROOT, 'dist-bench'), dir),
    {
      name: 'naive',
      keys: await prefill((key, body) => naive(key, body)),
      call: async (key, body, replayed) => {
        if (naive(key, body).replayed !== replayed) throw new Error('naive: unexpected answer');
      },
      close: async () => {
        naiveDb.close();
      },
    },
  ];
  const rates = new Map<string, number[]>();
  for (let round = 0; round < rounds; round += 1) {
    // Each round in another order, so that no side always follows the same one.
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const c of levels) {
      for (const side of order) {
        let calls = 0;
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: c }, async (_, lane) => {
            for (let i = lane * 97; performance.now() - t0 < windowMs; i += 1, calls += 1) {
              const j = i % side.keys.length;
              if (mode === 'replay') await side.call(side.keys[j] as string, noteBody(j), true);
              else await side.call(randomUUID(), noteBody(j), false);
            }
          }),
        );
        const key = `${side.name}/c${c}`;
        rates.set(key, [...(rates.get(key) ?? []), calls / ((performance.now() - t0) / 1000)]);
      }
    }
  }
  console.log(
    `SQLite ${synchronous}, ${mode}; this checkout against ${rev} (${sha.slice(0, 12)}); medians of ${rounds}`,
  );
  for (const c of levels) {
    const [that, self, plain] = ['that', 'this', 'naive'].map((s) => median(rates.get(`${s}/c${c}`) ?? []));
    const fmt = (n = Number.NaN) => n.toFixed(0).padStart(8);
    console.log(
      `c${c}: ${rev} ${fmt(that)}/s  this ${fmt(self)}/s (${((self as number) / (that as number)).toFixed(3)}x)  naive ${fmt(plain)}/s  ` +
        `÷ naive: ${rev} ${((that as number) / (plain as number)).toFixed(3)}, this ${((self as number) / (plain as number)).toFixed(3)}`,
    );
  }
  for (const side of sides) await side.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
