/**
 * Where a replay's time goes, measured by hand (issue 27; not part of `npm run bench`):
 * `npm run bench:split` (builds the bench, then runs this). SQLite (synchronous=FULL, one process,
 * one caller): the naive replay, Idem's replay, Idem's lookup alone, and the executor with its
 * lookup answered from memory (the JavaScript around the statement); a storm of 64 callers on one
 * new key, naive and Idem. PostgreSQL (when reachable; 8 in flight, pool of 10): throughput and the
 * Node process's CPU per call for the naive replay, Idem's lookup alone and Idem's replay, and for
 * the lookup after a busy wait of 3 µs (what 3 µs of JavaScript per call costs on a machine whose
 * cores Node shares with the backends).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Existing } from '../../packages/idem/src/core/receipt.js';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor, type CallOutcome, type IdempotentOperation } from '../../packages/idem/src/index.js';
import {
  openPostgres,
  PostgresStore,
  type PgClient,
} from '../../packages/idem/src/adapters/postgres/index.js';
import { idemCall, newKey, noteBody, openIdemSqlite, openRaw, PRINCIPAL, WORKSPACE } from '../lib/notes.js';
import { INSERT_NOTE, NOTES_SQL } from '../suites/postgres.js';
import { naiveSqlite } from '../suites/sqlite.js';

const KEYS = 200;
const identity = (key: string): OperationIdentity => ({
  principal: PRINCIPAL,
  workspace: WORKSPACE,
  operation: 'create_note',
  version: 1,
  key,
});

/** µs per call of `f`, the faster of two rounds of `n` sequential calls. */
async function perCall(n: number, f: (i: number) => unknown): Promise<number> {
  let best = Infinity;
  for (let round = 0; round < 2; round += 1) {
    const t0 = performance.now();
    for (let i = 0; i < n; i += 1) await f(i);
    best = Math.min(best, ((performance.now() - t0) * 1000) / n);
  }
  return best;
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'idem-split-'));
  try {
    const naiveDb = openRaw(join(dir, 'naive.sqlite'), 'FULL');
    const naive = naiveSqlite(naiveDb);
    const idem = openIdemSqlite(join(dir, 'idem.sqlite'), 'FULL');
    const keys = Array.from({ length: KEYS }, () => newKey());
    for (const [i, key] of keys.entries()) {
      naive(key, noteBody(i));
      await idemCall(idem, key, noteBody(i), 'executed');
    }
    const key = (i: number) => keys[i % KEYS] as string;
    const body = (i: number) => noteBody(i % KEYS);
    const n = 200_000;
    const rows: [string, number][] = [
      [
        'naive replay (BEGIN IMMEDIATE, SELECT, COMMIT, SHA-256, JSON.parse)',
        await perCall(n, (i) => naive(key(i), body(i))),
      ],
      ['Idem replay (Executor.run)', await perCall(n, (i) => idemCall(idem, key(i), body(i), 'replayed'))],
      [
        'Idem lookup alone (receipts.lookup)',
        await perCall(n, (i) => idem.store.receipts.lookup(identity(key(i)))),
      ],
    ];
    const answers = new Map<string, Existing | undefined>();
    for (const k of keys) answers.set(k, await idem.store.receipts.lookup(identity(k)));
    const lookup = idem.store.receipts.lookup.bind(idem.store.receipts);
    idem.store.receipts.lookup = async (id) => answers.get(id.key);
    rows.push([
      'Idem replay, lookup answered from memory (the JavaScript)',
      await perCall(n, (i) => idemCall(idem, key(i), body(i), 'replayed')),
    ]);
    idem.store.receipts.lookup = lookup;
    for (const [label, us] of rows) console.log(`sqlite  ${us.toFixed(2).padStart(7)} µs  ${label}`);

    const storms = 1000;
    const storm = async (call: (key: string) => Promise<unknown>) =>
      perCall(storms, async (i) => {
        const k = `storm-${i}-${randomBytes(6).toString('hex')}`;
        await Promise.all(Array.from({ length: 64 }, () => call(k)));
      });
    const naiveStorm = await storm(async (k) => naive(k, 'storm body'));
    const idemStorm = await storm((k) => idemCall(idem, k, 'storm body', 'any'));
    console.log(`sqlite  ${naiveStorm.toFixed(0).padStart(7)} µs  naive storm of 64 callers on one new key`);
    console.log(`sqlite  ${idemStorm.toFixed(0).padStart(7)} µs  Idem storm of 64 callers on one new key`);
    naiveDb.close();
    await idem.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function postgres(url: string): Promise<void> {
  const schema = `idem_split_${randomBytes(6).toString('hex')}`;
  const pool = await openPostgres(url, { schema, max: 10, lockTimeoutMs: 5000 });
  try {
    await pool.query(NOTES_SQL);
    await pool.query(
      'CREATE TABLE receipts (idem_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, result_json TEXT NOT NULL)',
    );
    const store = await PostgresStore.create(pool);
    const executor = new Executor<PgClient>({ store, authorize: () => true, logger: silentLogger });
    const createNote: IdempotentOperation<PgClient, { body: string }> = {
      name: 'create_note',
      version: 1,
      effect: async (client, args, ctx) => {
        const noteId = `note_${randomBytes(8).toString('hex')}`;
        await client.query(INSERT_NOTE, [noteId, ctx.identity.workspace, args.body, Date.now()]);
        return { resource_id: noteId, note_id: noteId };
      },
    };
    const keys = Array.from({ length: KEYS }, () => newKey());
    const expect = (outcome: CallOutcome, replayed: boolean) => {
      if (!outcome.ok || outcome.replayed !== replayed)
        throw new Error(`expected ${replayed ? 'a replay' : 'an execution'}, got ${JSON.stringify(outcome)}`);
    };
    for (const [i, key] of keys.entries()) {
      expect(
        await executor.run(createNote, {
          principal: PRINCIPAL,
          workspace: WORKSPACE,
          key,
          args: { body: noteBody(i) },
        }),
        false,
      );
      await pool.query('INSERT INTO receipts VALUES ($1, $2, $3)', [
        key,
        'f'.repeat(64),
        '{"status":"succeeded"}',
      ]);
    }
    const spin = (us: number) => {
      const end = performance.now() + us / 1000;
      while (performance.now() < end);
    };
    const calls: [string, (i: number) => Promise<unknown>][] = [
      [
        'naive replay (one unprepared SELECT)',
        (i) => pool.query('SELECT result_json FROM receipts WHERE idem_key = $1', [keys[i % KEYS]]),
      ],
      ['Idem lookup alone', (i) => store.receipts.lookup(identity(keys[i % KEYS] as string))],
      [
        'Idem lookup after 3 µs of busy JavaScript',
        (i) => (spin(3), store.receipts.lookup(identity(keys[i % KEYS] as string))),
      ],
      [
        'Idem replay (Executor.run)',
        async (i) =>
          expect(
            await executor.run(createNote, {
              principal: PRINCIPAL,
              workspace: WORKSPACE,
              key: keys[i % KEYS],
              args: { body: noteBody(i % KEYS) },
            }),
            true,
          ),
      ],
    ];
    for (let round = 0; round < 3; round += 1) {
      for (const [label, call] of calls) {
        let n = 0;
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        await Promise.all(
          Array.from({ length: 8 }, async (_, lane) => {
            for (let i = lane * 25; performance.now() - t0 < 1500; i += 1, n += 1) await call(i);
          }),
        );
        const cpu = process.cpuUsage(cpu0);
        const seconds = (performance.now() - t0) / 1000;
        if (round === 2) {
          console.log(
            `pg c8   ${(n / seconds).toFixed(0).padStart(7)}/s  ${((cpu.user + cpu.system) / n).toFixed(1).padStart(5)} µs Node CPU per call  ${label}`,
          );
        }
      }
    }
    await store.close();
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

if (process.env.SPLIT_SKIP_SQLITE === undefined) await sqlite();
await postgres(process.env.IDEM_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test').catch(
  (error: unknown) => {
    console.log(`pg: not measured (${(error as Error).message})`);
  },
);
