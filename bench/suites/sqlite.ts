import { createHash, randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { migrateSqlite, type SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/index.js';
import {
  idemCall,
  INSERT_NOTE_SQL,
  newKey,
  newNoteId,
  noteBody,
  openIdemSqlite,
  openRaw,
  PRINCIPAL,
  WORKSPACE,
  type IdemSqlite,
  type Synchronous,
} from '../lib/notes.js';
import type { Op } from '../lib/measure.js';
import { measureRows, type PlannedRow, type RowSpec } from '../lib/rows.js';
import type { RowResult, SuiteContext } from '../lib/types.js';

const STORM_CALLERS = 64;

/**
 * The naive idempotent transaction, straight on the driver: BEGIN IMMEDIATE; look the receipt up;
 * insert the note; insert the receipt; COMMIT. A replay takes the write lock too (it reads inside
 * BEGIN IMMEDIATE), which is what Idem's lock-free replay avoids.
 */
export function naiveSqlite(db: Database.Database): (key: string, body: string) => { replayed: boolean } {
  db.exec(`CREATE TABLE IF NOT EXISTS receipts (
    idem_key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, result_json TEXT NOT NULL, created_at INTEGER NOT NULL)`);
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');
  const find = db.prepare('SELECT fingerprint, result_json FROM receipts WHERE idem_key = ?');
  const insertNote = db.prepare(INSERT_NOTE_SQL);
  const insertReceipt = db.prepare('INSERT INTO receipts VALUES (?, ?, ?, ?)');
  return (key, body) => {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify({ workspace: WORKSPACE, body }))
      .digest('hex');
    begin.run();
    try {
      const row = find.get(key) as { fingerprint: string; result_json: string } | undefined;
      if (row !== undefined) {
        commit.run();
        if (row.fingerprint !== fingerprint) throw new Error('payload_conflict');
        JSON.parse(row.result_json);
        return { replayed: true };
      }
      const noteId = newNoteId();
      const now = Date.now();
      insertNote.run(noteId, WORKSPACE, body, now);
      insertReceipt.run(key, fingerprint, JSON.stringify({ status: 'succeeded', note_id: noteId }), now);
      commit.run();
      return { replayed: false };
    } catch (error) {
      if (db.inTransaction) rollback.run();
      throw error;
    }
  };
}

export function sqliteSuite(synchronous: Synchronous) {
  return async (context: SuiteContext): Promise<RowResult[]> => {
    const replayKeyCount = context.quick ? 200 : 1000;
    const s = synchronous.toLowerCase();
    const group = `SQLite WAL, synchronous=${synchronous}`;
    const id = (...parts: string[]) => [`sqlite-${s}`, ...parts].join('/');
    const full = synchronous === 'FULL';

    // The floor: the note insert alone, one bare transaction per call, no idempotency.
    const floorDb = openRaw(join(context.tmpDir, 'floor.sqlite'), synchronous);
    const insert = floorDb.prepare(INSERT_NOTE_SQL);
    const floor = async (_lane: number, seq: number) => {
      insert.run(newNoteId(), WORKSPACE, noteBody(seq), Date.now());
    };

    // The naive idempotent transaction on the driver.
    const naiveDb = openRaw(join(context.tmpDir, 'naive.sqlite'), synchronous);
    const naive = naiveSqlite(naiveDb);
    const naiveKeys = Array.from({ length: replayKeyCount }, () => newKey());
    naiveKeys.forEach((key, i) => naive(key, noteBody(i)));

    // The storage floor of a receipt: the note and a receipt row in Idem's own schema, written
    // straight in one transaction, without any of Idem's code (what the receipt's B-trees cost).
    const receiptDb = openRaw(join(context.tmpDir, 'receipt-floor.sqlite'), synchronous);
    migrateSqlite(receiptDb as unknown as SqliteDatabase);
    const receiptFloor = receiptFloorWriter(receiptDb);

    // Idem through its library API with the store's default group commit (FULL: a batch waits one
    // event-loop turn for companions; NORMAL: adaptive), and the other settings for comparison.
    const idem = openIdemSqlite(join(context.tmpDir, 'idem.sqlite'), synchronous);
    const variants: { name: string; system: string; idem: IdemSqlite; levels: number[] }[] = [
      {
        name: 'idem-nogc',
        system: 'Idem, group commit off',
        idem: openIdemSqlite(join(context.tmpDir, 'idem-nogc.sqlite'), synchronous, { groupCommit: false }),
        levels: full ? [8, 64] : [1, 8, 64],
      },
      // The checkpoint modes that are not this level's default (FULL: adaptive; NORMAL: background).
      ...(full
        ? [
            {
              name: 'idem-bg',
              system: "Idem, checkpoint: 'background' (a worker thread checkpoints every 4,000 pages)",
              idem: openIdemSqlite(join(context.tmpDir, 'idem-bg.sqlite'), synchronous, {
                checkpoint: 'background',
              }),
              levels: [1, 64],
            },
          ]
        : []),
      {
        name: 'idem-inline',
        system: "Idem, checkpoint: 'inline' (SQLite's automatic checkpoint on the caller's thread)",
        idem: openIdemSqlite(join(context.tmpDir, 'idem-inline.sqlite'), synchronous, {
          checkpoint: 'inline',
        }),
        levels: [1, 64],
      },
      ...(full
        ? []
        : [
            {
              name: 'idem-turn',
              system: 'Idem, group commit waiting a turn (the FULL default)',
              idem: openIdemSqlite(join(context.tmpDir, 'idem-turn.sqlite'), synchronous, {
                groupCommit: true,
              }),
              levels: [1, 8, 64],
            },
          ]),
    ];
    const idemKeys = Array.from({ length: replayKeyCount }, () => newKey());
    for (const [i, key] of idemKeys.entries()) await idemCall(idem, key, noteBody(i), 'executed');

    // The same store on Node's built-in SQLite (node:sqlite, Node 22.16 or later), beside
    // better-sqlite3: the engine comparison. Absent on a Node without it (the bench then says so).
    const onNode = nodeSqliteAvailable()
      ? openIdemSqlite(join(context.tmpDir, 'idem-node.sqlite'), synchronous, {}, 'node:sqlite')
      : undefined;
    const nodeKeys = Array.from({ length: onNode === undefined ? 0 : replayKeyCount }, () => newKey());
    if (onNode !== undefined) {
      for (const [i, key] of nodeKeys.entries()) await idemCall(onNode, key, noteBody(i), 'executed');
    } else {
      process.stderr.write(
        `bench: no node:sqlite on Node ${process.version}: the sqlite-engine rows are left out\n`,
      );
    }

    // Pages each call appends to the WAL (what a COMMIT writes, and what checkpoints write back).
    const walPages = {
      floor: walPagesPerCall(floorDb, (i) => insert.run(newNoteId(), WORKSPACE, noteBody(i), Date.now())),
      naive: walPagesPerCall(naiveDb, (i) => naive(newKey(), noteBody(i))),
      receipt: walPagesPerCall(receiptDb, (i) => receiptFloor([noteBody(i)])),
      idem: await walPagesPerCallAsync(idem.db, (i) => idemCall(idem, newKey(), noteBody(i), 'executed')),
    };

    const idemSystem = `Idem: Executor + SqliteStore (${full ? 'group commit, a batch waits one event-loop turn' : 'adaptive group commit'}: the default)`;
    const planned: PlannedRow[] = [];
    for (const c of [1, 8, 64]) {
      const first = (
        system: string,
        name: string,
        op: Op,
        extra: Partial<RowSpec> = {},
        after?: () => void,
      ): PlannedRow => ({
        spec: {
          id: id(name, 'first', `c${c}`),
          group,
          system,
          scenario: 'first execution',
          concurrency: c,
          ...(name === 'floor' ? {} : { baseline: id('floor', 'first', `c${c}`), ratioOf: 'ops' as const }),
          ...extra,
        },
        op,
        ...(after === undefined ? {} : { after }),
      });
      planned.push(
        first('floor: note INSERT, one transaction per call', 'floor', floor, {
          extra: { walPagesPerCall: walPages.floor },
        }),
      );
      planned.push(
        first(
          'naive idempotent transaction (driver)',
          'naive',
          async (_lane, seq) => {
            if (naive(newKey(), noteBody(seq)).replayed) throw new Error('a fresh key replayed');
          },
          { extra: { walPagesPerCall: walPages.naive } },
        ),
      );
      if (c === 1) {
        planned.push(
          first(
            "receipt storage floor: note + receipt row in Idem's schema, one transaction, no Idem code",
            'receipt-floor',
            async (_lane, seq) => receiptFloor([noteBody(seq)]),
            { extra: { walPagesPerCall: walPages.receipt } },
          ),
        );
      }
      if (c === 64) {
        // The same storage writes committed 64 at a time: what group commit could reach at best.
        planned.push({
          spec: {
            id: id('receipt-floor', 'first', 'c64'),
            group,
            system: 'receipt storage floor, 64 calls per transaction (the best group commit can do)',
            scenario: 'first execution',
            concurrency: 1,
            baseline: id('floor', 'first', 'c1'),
            ratioOf: 'ops',
          },
          op: async (_lane, seq) =>
            receiptFloor(Array.from({ length: 64 }, (_, i) => noteBody(seq * 64 + i))),
          finish: (row) => ({
            ...row,
            concurrency: 64,
            ...(row.measurement === undefined
              ? {}
              : { measurement: { ...row.measurement, opsPerSec: row.measurement.opsPerSec * 64 } }),
            notes: ['throughput = calls per second (64 per transaction); p50/p99 per transaction'],
          }),
        });
      }
      planned.push(
        first(
          idemSystem,
          'idem',
          async (_lane, seq) => {
            await idemCall(idem, newKey(), noteBody(seq), 'executed');
          },
          { extra: { walPagesPerCall: walPages.idem, maxCommitBatch: idem.store.maxCommitBatch } },
          () => checkOneNotePerReceipt(idem),
        ),
      );
      if (onNode !== undefined && c !== 8) {
        planned.push(
          first(
            `Idem on node:sqlite (Node ${process.versions.node}), the same defaults; ratio to better-sqlite3's row`,
            'idem-node-sqlite',
            async (_lane, seq) => {
              await idemCall(onNode, newKey(), noteBody(seq), 'executed');
            },
            {
              baseline: id('idem', 'first', `c${c}`),
              extra: { maxCommitBatch: onNode.store.maxCommitBatch },
            },
            () => checkOneNotePerReceipt(onNode),
          ),
          {
            spec: {
              id: id('idem-node-sqlite', 'replay', `c${c}`),
              group,
              system: `Idem on node:sqlite (Node ${process.versions.node}); ratio to better-sqlite3's replay row`,
              scenario: 'replay',
              concurrency: c,
              baseline: id('idem', 'replay', `c${c}`),
              ratioOf: 'ops',
            },
            op: idemReplay(onNode, nodeKeys),
          },
        );
      }
      for (const variant of variants) {
        // Other settings for comparison only: --quick leaves them out to stay under a minute.
        if (context.quick || !variant.levels.includes(c)) continue;
        planned.push(
          first(
            variant.system,
            variant.name,
            async (_lane, seq) => {
              await idemCall(variant.idem, newKey(), noteBody(seq), 'executed');
            },
            { extra: { maxCommitBatch: variant.idem.store.maxCommitBatch } },
            () => checkOneNotePerReceipt(variant.idem),
          ),
        );
      }
      if (c <= 8) {
        planned.push({
          spec: {
            id: id('naive', 'replay', `c${c}`),
            group,
            system: 'naive idempotent transaction (driver)',
            scenario: 'replay',
            concurrency: c,
            baseline: id('naive', 'first', `c${c}`),
            ratioOf: 'ops',
          },
          op: async (_lane, seq) => {
            const i = seq % replayKeyCount;
            if (!naive(naiveKeys[i] as string, noteBody(i)).replayed) throw new Error('a replay executed');
          },
        });
      }
      planned.push({
        spec: {
          id: id('idem', 'replay', `c${c}`),
          group,
          system: 'Idem: Executor + SqliteStore',
          scenario: 'replay',
          concurrency: c,
          baseline: id('idem', 'first', `c${c}`),
          ratioOf: 'ops',
        },
        op: idemReplay(idem, idemKeys),
      });
    }

    if (full) {
      // Replays take no write lock: they go on at full speed while another connection holds it.
      const holder = new Database(idem.path);
      planned.push({
        spec: {
          id: id('idem', 'replay-locked', 'c1'),
          group,
          system: 'Idem: Executor + SqliteStore',
          scenario: 'replay while another connection holds the write lock',
          concurrency: 1,
          baseline: id('idem', 'replay', 'c1'),
          ratioOf: 'ops',
        },
        op: idemReplay(idem, idemKeys),
        before: () => {
          holder.exec('BEGIN IMMEDIATE');
        },
        after: () => {
          holder.exec('ROLLBACK');
        },
      });
      planned.push(
        stormRow(
          {
            id: id('naive', 'storm', `c${STORM_CALLERS}`),
            group,
            system: 'naive idempotent transaction (driver)',
            scenario: `same-key storm (${STORM_CALLERS} callers, one key)`,
            concurrency: STORM_CALLERS,
          },
          async (key, body) => naive(key, body).replayed,
        ),
        stormRow(
          {
            id: id('idem', 'storm', `c${STORM_CALLERS}`),
            group,
            system: 'Idem: Executor + SqliteStore',
            scenario: `same-key storm (${STORM_CALLERS} callers, one key)`,
            concurrency: STORM_CALLERS,
            baseline: id('naive', 'storm', `c${STORM_CALLERS}`),
            ratioOf: 'ops',
          },
          async (key, body) => {
            const outcome = await idem.executor.run(idem.createNote, {
              principal: 'bench',
              workspace: 'default',
              key,
              args: { body },
            });
            if (!outcome.ok) throw new Error(`storm call failed: ${outcome.error.code}`);
            return outcome.replayed;
          },
        ),
      );
    }

    try {
      return await measureRows(context, planned);
    } finally {
      floorDb.close();
      naiveDb.close();
      receiptDb.close();
      await idem.close();
      await onNode?.close();
      for (const variant of variants) await variant.idem.close();
    }
  };
}

/** Writes a note and its receipt row (all of Idem's columns that a first execution fills). */
function receiptFloorWriter(db: Database.Database): (bodies: readonly string[]) => void {
  const insertNote = db.prepare(INSERT_NOTE_SQL);
  const insertReceipt =
    db.prepare(`INSERT INTO idem_operations (operation_id, principal, workspace, operation,
    version, idem_key, fingerprint, kind, status, resource_id, result_json, created_at, updated_at, expires_at,
    attempt_count, dispatched) VALUES (?, ?, ?, 'create_note', 1, ?, ?, 'local', 'succeeded', ?, ?, ?, ?, ?, 1, 0)`);
  const write = db.transaction((bodies: readonly string[]) => {
    for (const body of bodies) {
      const noteId = newNoteId();
      const operationId = `op_${randomUUID().replaceAll('-', '')}`;
      const now = Date.now();
      insertNote.run(noteId, WORKSPACE, body, now);
      const fingerprint = createHash('sha256').update(JSON.stringify({ body })).digest('hex');
      const result = JSON.stringify({
        status: 'succeeded',
        operation_id: operationId,
        resource_id: noteId,
        note_id: noteId,
      });
      insertReceipt.run(
        operationId,
        PRINCIPAL,
        WORKSPACE,
        newKey(),
        fingerprint,
        noteId,
        result,
        now,
        now,
        now + 86_400_000,
      );
    }
  });
  return (bodies) => write(bodies);
}

/** Checkpoints, then appends `calls` calls to the WAL with checkpoints off: frames per call. */
function walPagesPerCall(db: WalDb, call: (i: number) => unknown, calls = 300): number {
  const own = startWalCount(db);
  for (let i = 0; i < calls; i += 1) call(i);
  return endWalCount(db, calls, own);
}

async function walPagesPerCallAsync(
  db: WalDb,
  call: (i: number) => Promise<unknown>,
  calls = 300,
): Promise<number> {
  const own = startWalCount(db);
  for (let i = 0; i < calls; i += 1) await call(i);
  return endWalCount(db, calls, own);
}

interface WalDb {
  pragma(source: string, options?: { simple?: boolean }): unknown;
}

/** Returns the connection's automatic-checkpoint setting, to be given back to endWalCount. */
function startWalCount(db: WalDb): number {
  const own = Number(db.pragma('wal_autocheckpoint', { simple: true }));
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.pragma('wal_autocheckpoint = 0');
  return own;
}

function endWalCount(db: WalDb, calls: number, own: number): number {
  // wal_checkpoint returns [busy, frames in the WAL, frames checkpointed].
  const [row] = db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
  db.pragma(`wal_autocheckpoint = ${own}`);
  db.pragma('wal_checkpoint(TRUNCATE)');
  return Math.round(((row?.log ?? 0) / calls) * 10) / 10;
}

function idemReplay(idem: IdemSqlite, keys: readonly string[]): Op {
  return async (_lane, seq) => {
    const i = seq % keys.length;
    await idemCall(idem, keys[i] as string, noteBody(i), 'replayed');
  };
}

/**
 * Rounds of STORM_CALLERS concurrent calls with one fresh key each: exactly one may execute. The
 * row's throughput is callers answered per second; its latencies are per round (all answered).
 */
function stormRow(spec: RowSpec, call: (key: string, body: string) => Promise<boolean>): PlannedRow {
  let rounds = 0;
  return {
    spec: { ...spec, concurrency: 1 },
    op: async (_lane, seq) => {
      const key = newKey();
      const body = noteBody(seq);
      const replayed = await Promise.all(Array.from({ length: STORM_CALLERS }, () => call(key, body)));
      const executed = replayed.filter((r) => !r).length;
      if (executed !== 1) throw new Error(`storm: ${executed} executions for one key`);
      rounds += 1;
    },
    finish: (row) => ({
      ...row,
      concurrency: spec.concurrency,
      ...(row.measurement === undefined
        ? {}
        : { measurement: { ...row.measurement, opsPerSec: row.measurement.opsPerSec * STORM_CALLERS } }),
      notes: [
        `throughput = callers answered per second; p50/p99 = time until all ${STORM_CALLERS} callers of a round are answered; exactly one execution per key checked (${rounds} rounds)`,
      ],
    }),
  };
}

function checkOneNotePerReceipt(idem: IdemSqlite): void {
  const notes = (idem.db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n;
  const receipts = (idem.db.prepare('SELECT count(*) AS n FROM idem_operations').get() as { n: number }).n;
  if (notes !== receipts) throw new Error(`${notes} notes but ${receipts} receipts`);
}

/** Whether this Node has a node:sqlite that Idem runs on (22.16 or later). */
function nodeSqliteAvailable(): boolean {
  try {
    const { DatabaseSync } = createRequire(import.meta.url)('node:sqlite') as {
      DatabaseSync: new (path: string) => { isTransaction?: unknown; close(): void };
    };
    const db = new DatabaseSync(':memory:');
    const has = typeof db.isTransaction === 'boolean';
    db.close();
    return has;
  } catch {
    return false;
  }
}
