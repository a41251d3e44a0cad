/**
 * Where PostgreSQL's time goes, measured by hand (issue 27, third round; not part of `npm run
 * bench`): `npm run bench:split:pg` (builds the bench, then runs this). Every variant runs in this
 * one process, in alternating windows (the first round dropped), so all see the same minutes of the
 * machine; each line is the median of the other rounds, with every round's rate.
 *
 * - Replays at 1, 8 and 64 in flight: the naive SELECT; Idem's replay (lookups of one turn read
 *   together); Idem's replay on a store whose dialect has no `findMany` (one statement each).
 * - First executions at 1 and at 8 in flight: the naive transaction; the same with Idem's receipt
 *   row and table (the receipt storage floor); the same with Idem's guarded insert as the
 *   receipt's; Idem's protocol sent by hand without Idem's JavaScript (lookup, BEGIN with the
 *   advisory lock, note, guarded insert, COMMIT); Idem.
 *
 * Beside each rate, the CPU time a call costs, median of the windows: this Node process's (user +
 * system) and, on Linux, the PostgreSQL server's (every process named `postgres` in /proc: the
 * backends, the WAL writer, ...; so a machine whose PostgreSQL serves others too overstates it).
 * On a machine whose cores the two share, that is what decides throughput at 8 in flight.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor, type CallOutcome, type IdempotentOperation } from '../../packages/idem/src/index.js';
import {
  identityLockKey,
  openPostgres,
  PostgresStore,
  postgresDialect,
  postgresDriver,
  type PgClient,
  type PgPool,
} from '../../packages/idem/src/adapters/postgres/index.js';
import { SqlStore } from '../../packages/idem/src/adapters/sql/sql-store.js';
import { median } from '../lib/measure.js';
import { newKey, newNoteId, PRINCIPAL, WORKSPACE } from '../lib/notes.js';
import {
  inTransaction,
  INSERT_NOTE,
  insertIdemRow,
  naiveTransaction,
  NOTES_SQL,
  RECEIPTS_SQL,
  receiptFloorTransaction,
} from '../suites/postgres.js';

const KEYS = 200;
const ROUNDS = 8;
const BODY = 'a note of the split probe';

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/**
 * CPU time (µs) used so far by every process named `postgres`, from /proc; undefined where /proc
 * cannot be read (not Linux). Processes that end between two reads drop out of the sum, so a window
 * counts only servers that lived through it (the pool keeps its connections).
 */
function postgresCpuUs(): number | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  let ticks = 0;
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== 'postgres') continue;
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // The process ended meanwhile.
    }
  }
  return (ticks * 1_000_000) / TICKS_PER_SECOND;
}

/**
 * Runs `variants` in alternating windows of `windowMs` with `lanes` callers; prints, for each, the
 * median rate and the median CPU per call of this process and of the PostgreSQL server.
 */
async function alternate(
  label: string,
  lanes: number,
  windowMs: number,
  variants: Record<string, (i: number) => Promise<unknown>>,
): Promise<void> {
  const windows = new Map<string, { rate: number; nodeUs: number; postgresUs?: number }[]>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [name, call] of Object.entries(variants)) {
      let n = 0;
      const cpu = process.cpuUsage();
      const server = postgresCpuUs();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => {
          for (let i = lane * 25; performance.now() - t0 < windowMs; i += 1, n += 1) await call(i);
        }),
      );
      const seconds = (performance.now() - t0) / 1000;
      const used = process.cpuUsage(cpu);
      const serverNow = postgresCpuUs();
      if (round === 0) continue;
      windows.set(name, [
        ...(windows.get(name) ?? []),
        {
          rate: n / seconds,
          nodeUs: (used.user + used.system) / n,
          ...(server === undefined || serverNow === undefined
            ? {}
            : { postgresUs: (serverNow - server) / n }),
        },
      ]);
    }
  }
  for (const [name, all] of windows) {
    const rate = median(all.map((w) => w.rate));
    const nodeUs = median(all.map((w) => w.nodeUs));
    const serverUs = all.every((w) => w.postgresUs !== undefined)
      ? `${median(all.map((w) => w.postgresUs as number)).toFixed(0)} µs`
      : '-';
    const each = all.map((w) => w.rate.toFixed(0)).join(' ');
    console.log(
      `${label.padEnd(22)} ${rate.toFixed(0).padStart(7)}/s  ${name.padEnd(30)} CPU per call: Node ${nodeUs.toFixed(0)} µs, PostgreSQL ${serverUs}  (${each})`,
    );
  }
}

/** Idem's first-execution protocol sent by hand: what it costs without Idem's JavaScript. */
function byHand(pool: PgPool) {
  return async (key: string): Promise<void> => {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify({ body: BODY }))
      .digest('hex');
    const identity = {
      principal: PRINCIPAL,
      workspace: WORKSPACE,
      operation: 'create_note',
      version: 1,
      key,
    };
    // As the store reads: a pooled client, the prepared lookup, the client back.
    const reader = await pool.connect();
    const { rows } = await reader
      .query<{ found: string | null }>({
        name: 'split_find',
        text: 'SELECT idem_find($1, $2, $3, $4, $5) AS found',
        values: [PRINCIPAL, WORKSPACE, 'create_note', 1, key],
      })
      .finally(() => reader.release());
    if (rows[0]?.found !== null) throw new Error('a fresh key was found');
    await inTransaction(
      pool,
      `BEGIN; SELECT pg_try_advisory_xact_lock(${identityLockKey(identity)}) AS free`,
      async (client) => {
        const noteId = newNoteId();
        const now = Date.now();
        await client.query(INSERT_NOTE, [noteId, WORKSPACE, BODY, now]);
        await insertIdemRow(client, 'guarded', key, fingerprint, noteId, now);
      },
    );
  };
}

async function main(url: string): Promise<void> {
  const schema = `idem_split_${randomBytes(6).toString('hex')}`;
  const pool = await openPostgres(url, { schema, max: 10, lockTimeoutMs: 5000 });
  try {
    await pool.query(NOTES_SQL);
    await pool.query(RECEIPTS_SQL);
    const store = await PostgresStore.create(pool);
    // The same store with a dialect that cannot read several keys at once: one statement a lookup.
    const driver = postgresDriver(pool, {});
    const alone = new SqlStore({
      ...driver,
      dialect: { ...postgresDialect, call: { ...postgresDialect.call, findMany: undefined } },
    });
    const createNote: IdempotentOperation<PgClient, { body: string }> = {
      name: 'create_note',
      version: 1,
      effect: async (client, args, ctx) => {
        const noteId = newNoteId();
        await client.query(INSERT_NOTE, [noteId, ctx.identity.workspace, args.body, Date.now()]);
        return { resource_id: noteId, note_id: noteId };
      },
    };
    const together = new Executor<PgClient>({ store, authorize: () => true, logger: silentLogger });
    const oneEach = new Executor<PgClient>({ store: alone, authorize: () => true, logger: silentLogger });
    const run = async (executor: Executor<PgClient>, key: string, replayed: boolean) => {
      const outcome: CallOutcome = await executor.run(createNote, {
        principal: PRINCIPAL,
        workspace: WORKSPACE,
        key,
        args: { body: BODY },
      });
      if (!outcome.ok || outcome.replayed !== replayed)
        throw new Error(`unexpected: ${JSON.stringify(outcome)}`);
    };
    const keys = Array.from({ length: KEYS }, () => newKey());
    const naive = naiveTransaction(pool);
    for (const key of keys) {
      await run(together, key, false);
      await naive(key, BODY);
    }
    const key = (i: number) => keys[i % KEYS] as string;
    const floor = receiptFloorTransaction(pool, 'plain');
    const handMade = byHand(pool);
    const guarded = receiptFloorTransaction(pool, 'guarded');
    for (const lanes of [1, 8, 64]) {
      await alternate(`replay, ${lanes} in flight`, lanes, 500, {
        'naive SELECT': (i) => pool.query('SELECT result_json FROM receipts WHERE idem_key = $1', [key(i)]),
        'Idem, lookups read together': (i) => run(together, key(i), true),
        'Idem, one statement each': (i) => run(oneEach, key(i), true),
      });
    }
    for (const lanes of [1, 8]) {
      await alternate(`first, ${lanes} in flight`, lanes, 700, {
        'naive transaction': () => naive(newKey(), BODY),
        'with Idem’s row and table': () => floor(newKey(), BODY),
        'with Idem’s guarded insert': () => guarded(newKey(), BODY),
        'Idem’s protocol by hand': () => handMade(newKey()),
        Idem: () => run(together, newKey(), false),
      });
    }
    await store.close();
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

await main(process.env.IDEM_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
