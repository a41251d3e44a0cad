import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  openPostgres,
  PostgresStore,
  type PgClient,
  type PgPool,
} from '../../packages/idem/src/adapters/postgres/index.js';
import { Executor, type IdempotentOperation } from '../../packages/idem/src/index.js';
import { callStatements } from '../../packages/idem/src/adapters/postgres/call-statements.js';
import { OPERATION_COLUMNS } from '../../packages/idem/src/adapters/operation-rows.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import type { Op } from '../lib/measure.js';
import { newKey, newNoteId, noteBody, PRINCIPAL, WORKSPACE } from '../lib/notes.js';
import { measureRows, skippedRow, type PlannedRow, type RowSpec } from '../lib/rows.js';
import type { RowResult, SuiteContext } from '../lib/types.js';

const POOL_MAX = 10;
const GROUP = 'PostgreSQL 15, synchronous_commit=on';

export const NOTES_SQL = `CREATE TABLE IF NOT EXISTS notes (
  note_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, body TEXT NOT NULL, created_at BIGINT NOT NULL)`;
export const INSERT_NOTE = 'INSERT INTO notes (note_id, workspace, body, created_at) VALUES ($1, $2, $3, $4)';
/** The naive transaction's receipts: one primary key. */
export const RECEIPTS_SQL = `CREATE TABLE receipts (
  idem_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, result_json TEXT NOT NULL, created_at BIGINT NOT NULL)`;
const INSERT_NEW = callStatements().insertNew;

/** `begin` (BEGIN, with whatever else its round trip takes), `body`, COMMIT; ROLLBACK on a failure. */
export async function inTransaction<T>(
  pool: PgPool,
  begin: string,
  body: (client: PgClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const value = await body(client);
    await client.query('COMMIT');
    return value;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The naive idempotent transaction: BEGIN; SELECT receipt FOR UPDATE; INSERT note; INSERT receipt;
 * COMMIT. Resolves true when the key had a receipt (a replay: nothing written).
 */
export function naiveTransaction(pool: PgPool): (key: string, body: string) => Promise<boolean> {
  return (key, body) => {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify({ workspace: WORKSPACE, body }))
      .digest('hex');
    return inTransaction(pool, 'BEGIN', async (client) => {
      const found = await client.query<{ fingerprint: string }>(
        'SELECT fingerprint FROM receipts WHERE idem_key = $1 FOR UPDATE',
        [key],
      );
      if (found.rows[0] !== undefined) return true;
      const noteId = newNoteId();
      await client.query(INSERT_NOTE, [noteId, WORKSPACE, body, Date.now()]);
      await client.query('INSERT INTO receipts VALUES ($1, $2, $3, $4)', [
        key,
        fingerprint,
        JSON.stringify({ status: 'succeeded', note_id: noteId }),
        Date.now(),
      ]);
      return false;
    });
  };
}

/**
 * The storage floor of a receipt: the naive transaction's five round trips, but its lookup and
 * receipt in Idem's own table (the row a receipt writes, its four B-trees), without any of Idem's
 * code: what the receipt's storage costs, apart from the library. `guarded`: the receipt written
 * with Idem's own guarded insert instead of a plain one.
 */
export function receiptFloorTransaction(
  pool: PgPool,
  insert: 'plain' | 'guarded',
): (key: string, body: string) => Promise<void> {
  return (key, body) => {
    const fingerprint = createHash('sha256').update(JSON.stringify({ body })).digest('hex');
    return inTransaction(pool, 'BEGIN', async (client) => {
      const found = await client.query({
        name: 'bench_receipt_floor_find',
        text: `SELECT fingerprint FROM idem_operations WHERE principal = $1 AND workspace = $2
                 AND operation = 'create_note' AND idem_key = $3 AND version = 1 FOR UPDATE`,
        values: [PRINCIPAL, WORKSPACE, key],
      });
      if (found.rows[0] !== undefined) throw new Error('a fresh key replayed');
      const noteId = newNoteId();
      const now = Date.now();
      await client.query(INSERT_NOTE, [noteId, WORKSPACE, body, now]);
      await insertIdemRow(client, insert, key, fingerprint, noteId, now);
    });
  };
}

/** A first execution's receipt row as Idem writes it, with a plain INSERT or Idem's guarded one. */
export async function insertIdemRow(
  client: PgClient,
  insert: 'plain' | 'guarded',
  key: string,
  fingerprint: string,
  noteId: string,
  now: number,
): Promise<void> {
  const operationId = `op_${randomBytes(16).toString('hex')}`;
  const result = { status: 'succeeded', operation_id: operationId, resource_id: noteId, note_id: noteId };
  const row: Record<string, string | number | boolean> = {
    operation_id: operationId,
    principal: PRINCIPAL,
    workspace: WORKSPACE,
    operation: 'create_note',
    version: 1,
    idem_key: key,
    fingerprint,
    kind: 'local',
    status: 'succeeded',
    resource_id: noteId,
    result_json: JSON.stringify(result),
    created_at: now,
    updated_at: now,
    expires_at: now + 86_400_000,
    attempt_count: 1,
    dispatched: false,
  };
  if (insert === 'guarded') {
    const values = OPERATION_COLUMNS.map((column) => row[column] ?? null);
    const { rowCount } = await client.query({ ...INSERT_NEW, values });
    if (rowCount !== 1) throw new Error('the guarded insert wrote nothing');
    return;
  }
  const columns = Object.keys(row);
  await client.query({
    name: 'bench_receipt_floor_insert',
    text: `INSERT INTO idem_operations (${columns.join(', ')})
             VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
    values: columns.map((column) => row[column]),
  });
}

/** Counts statements sent to the server (each is one round trip with node-postgres). */
class RoundTrips {
  count = 0;

  wrap(pool: PgPool): PgPool {
    const count = () => {
      this.count += 1;
    };
    const wrapClient = (client: PgClient): PgClient => ({
      query: (text, values) => {
        count();
        return client.query(text, values);
      },
      release: (error) => client.release(error),
    });
    return {
      connect: async () => wrapClient(await pool.connect()),
      query: (text, values) => {
        count();
        return pool.query(text, values);
      },
      end: () => pool.end(),
    };
  }
}

async function reachable(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${url} cannot be reached: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function postgresSuite(context: SuiteContext): Promise<RowResult[]> {
  const replayKeyCount = context.quick ? 200 : 1000;
  const id = (...parts: string[]) => ['pg', ...parts].join('/');
  const unreachable = await reachable(context.pgUrl);
  if (unreachable !== undefined) {
    context.log(`skipping PostgreSQL rows: ${unreachable}`);
    return [1, 8, 64].map((c) =>
      skippedRow(
        {
          id: id('idem', 'first', `c${c}`),
          group: GROUP,
          system: 'Idem',
          scenario: 'first execution',
          concurrency: c,
        },
        unreachable,
      ),
    );
  }
  // A throwaway schema, dropped at the end.
  const schema = `idem_bench_${randomBytes(6).toString('hex')}`;
  const rawPool = await openPostgres(context.pgUrl, {
    schema,
    max: POOL_MAX,
    // As `idem serve` opens its pool: sessions bound lock waits, so reads need no transaction.
    lockTimeoutMs: 5_000,
  });
  const trips = new RoundTrips();
  const pool = trips.wrap(rawPool);
  try {
    await rawPool.query(NOTES_SQL);
    await rawPool.query(RECEIPTS_SQL);
    const store = await PostgresStore.create(pool);
    const executor = new Executor<PgClient>({ store, authorize: () => true, logger: silentLogger });
    // The same tables without named prepared statements: every statement parsed and planned anew.
    const unpreparedStore = await PostgresStore.create(pool, { migrate: false, preparedStatements: false });
    const unprepared = new Executor<PgClient>({
      store: unpreparedStore,
      authorize: () => true,
      logger: silentLogger,
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
    const idemCall = async (
      key: string,
      body: string,
      expect: 'executed' | 'replayed',
      through: Executor<PgClient> = executor,
    ) => {
      const outcome = await through.run(createNote, {
        principal: PRINCIPAL,
        workspace: WORKSPACE,
        key,
        args: { body },
      });
      if (!outcome.ok) throw new Error(`create_note failed: ${outcome.error.code}: ${outcome.error.message}`);
      if (outcome.replayed !== (expect === 'replayed')) throw new Error(`expected ${expect}`);
    };

    // The floor: one autocommit INSERT (one round trip, one transaction).
    const floor: Op = async (_lane, seq) => {
      await pool.query(INSERT_NOTE, [newNoteId(), WORKSPACE, noteBody(seq), Date.now()]);
    };
    // The same insert in an explicit transaction: BEGIN; INSERT; COMMIT.
    const floorTx: Op = (_lane, seq) =>
      inTransaction(pool, 'BEGIN', async (client) => {
        await client.query(INSERT_NOTE, [newNoteId(), WORKSPACE, noteBody(seq), Date.now()]);
      });
    const naive = naiveTransaction(pool);
    const receiptFloor = receiptFloorTransaction(pool, 'plain');
    // The naive replay: a plain read, no lock.
    const naiveReplay = async (key: string): Promise<void> => {
      const found = await pool.query('SELECT result_json FROM receipts WHERE idem_key = $1', [key]);
      if (found.rows[0] === undefined) throw new Error('no receipt');
    };

    const naiveKeys = Array.from({ length: replayKeyCount }, () => newKey());
    for (const [i, key] of naiveKeys.entries()) await naive(key, noteBody(i));
    const idemKeys = Array.from({ length: replayKeyCount }, () => newKey());
    for (const [i, key] of idemKeys.entries()) await idemCall(key, noteBody(i), 'executed');

    // Round trips per call, counted around each row.
    const countTrips = (row: RowResult): RowResult =>
      row.measurement === undefined
        ? row
        : { ...row, extra: { ...row.extra, roundTripsPerCall: tripsPerCall.get(row.id) ?? 0 } };
    const tripsPerCall = new Map<string, number>();
    const counted = (spec: RowSpec, op: Op): PlannedRow => {
      let calls = 0;
      let trips0 = 0;
      return {
        spec,
        op: async (lane, seq) => {
          calls += 1;
          await op(lane, seq);
        },
        before: () => {
          calls = 0;
          trips0 = trips.count;
        },
        after: () => {
          tripsPerCall.set(spec.id, Math.round(((trips.count - trips0) / Math.max(1, calls)) * 10) / 10);
        },
        finish: countTrips,
      };
    };

    const planned: PlannedRow[] = [];
    for (const c of [1, 8, 64]) {
      const spec = (name: string, system: string, scenario: string, baseline?: string): RowSpec => ({
        id: id(name, scenario === 'first execution' ? 'first' : 'replay', `c${c}`),
        group: GROUP,
        system,
        scenario,
        concurrency: c,
        ...(baseline === undefined ? {} : { baseline, ratioOf: 'ops' as const }),
      });
      planned.push(
        counted(spec('floor', 'floor: note INSERT, autocommit (1 round trip)', 'first execution'), floor),
      );
      planned.push(
        counted(
          spec(
            'floor-tx',
            'note INSERT in BEGIN ... COMMIT (3 round trips)',
            'first execution',
            id('floor', 'first', `c${c}`),
          ),
          floorTx,
        ),
      );
      planned.push(
        counted(
          spec(
            'naive',
            'naive idempotent transaction (driver)',
            'first execution',
            id('floor', 'first', `c${c}`),
          ),
          async (_lane, seq) => {
            if (await naive(newKey(), noteBody(seq))) throw new Error('a fresh key replayed');
          },
        ),
      );
      planned.push(
        counted(
          spec(
            'receipt-floor',
            "receipt storage floor: the naive transaction with Idem's receipt row and table, no Idem code",
            'first execution',
            id('floor', 'first', `c${c}`),
          ),
          async (_lane, seq) => receiptFloor(newKey(), noteBody(seq)),
        ),
      );
      planned.push(
        counted(
          spec(
            'idem',
            `Idem: Executor + PostgresStore (pool ${POOL_MAX})`,
            'first execution',
            id('floor', 'first', `c${c}`),
          ),
          async (_lane, seq) => idemCall(newKey(), noteBody(seq), 'executed'),
        ),
      );
      if (c === 8 && !context.quick) {
        const system = 'Idem, preparedStatements: false (every statement parsed and planned)';
        planned.push(
          counted(
            spec('idem-unprepared', system, 'first execution', id('floor', 'first', `c${c}`)),
            async (_l, seq) => idemCall(newKey(), noteBody(seq), 'executed', unprepared),
          ),
          counted(
            spec('idem-unprepared', system, 'replay', id('idem-unprepared', 'first', `c${c}`)),
            async (_lane, seq) => {
              const i = seq % replayKeyCount;
              await idemCall(idemKeys[i] as string, noteBody(i), 'replayed', unprepared);
            },
          ),
        );
      }
      planned.push(
        counted(
          spec(
            'naive',
            'naive idempotent transaction (driver), replay = plain SELECT',
            'replay',
            id('naive', 'first', `c${c}`),
          ),
          async (_lane, seq) => naiveReplay(naiveKeys[seq % replayKeyCount] as string),
        ),
      );
      planned.push(
        counted(
          spec('idem', 'Idem: Executor + PostgresStore', 'replay', id('idem', 'first', `c${c}`)),
          async (_lane, seq) => {
            const i = seq % replayKeyCount;
            await idemCall(idemKeys[i] as string, noteBody(i), 'replayed');
          },
        ),
      );
    }
    const rows = await measureRows(context, planned);
    const notes = await rawPool.query<{ n: string }>('SELECT count(*) AS n FROM notes');
    context.log(`postgres: ${notes.rows[0]?.n ?? '?'} notes written in schema ${schema}`);
    await store.close();
    await unpreparedStore.close();
    return rows;
  } finally {
    await rawPool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined);
    await rawPool.end();
  }
}
