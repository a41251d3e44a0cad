import { describe, expect, it } from 'vitest';
import { MIN_SWEEP_BATCH_ROWS } from '../../packages/idem/src/core/batch-sizer.js';
import type { Clock } from '../../packages/idem/src/core/clock.js';
import { sharedSql } from '../../packages/idem/src/adapters/sql/shared-sql.js';
import type {
  SqlConnection,
  SqlDriver,
  SqlStatement,
} from '../../packages/idem/src/adapters/sql/sql-driver.js';
import { SqlHousekeeping } from '../../packages/idem/src/adapters/sql/sql-housekeeping.js';
import { sqliteDialect } from '../../packages/idem/src/adapters/sqlite/sqlite-dialect.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';

// Issue 22, point 5: the sweep's pacing on a store whose batches block callers (SQLite), on a fake
// clock. Each batch first waits WAIT_MS in the write queue behind callers' commits, then holds the
// lock PER_ROW_MS a row. Before the fix the pause after a batch counted the wait too, so the
// busier the callers, the slower the sweep (340 rows/s beside 950 inserts/s).

const WAIT_MS = 40;
const PER_ROW_MS = 0.005;

function pacedSweep(options: { expired: number; callersWaiting?: () => number }) {
  const fake = new FakeClock();
  let mono = 0;
  const pauses: number[] = [];
  const sizes: number[] = [];
  const picks: number[] = [];
  const clock: Clock = {
    now: () => fake.now(),
    monotonic: () => mono,
    sleep: (ms) => {
      pauses.push(ms);
      mono += ms;
      return Promise.resolve();
    },
  };
  const sql = sharedSql(sqliteDialect);
  let left = options.expired;
  let picked = 0;
  const conn: SqlConnection = {
    all: <Row>(statement: SqlStatement, params: readonly unknown[]) => {
      if (statement !== sql.expired) return [] as Row[];
      const rows = Number(params[1]);
      sizes.push(rows);
      picked = Math.min(rows, left);
      picks.push(picked);
      mono += picked * PER_ROW_MS;
      return Array.from({ length: picked }, (_, i) => ({ operation_id: `op_${left - i}` })) as Row[];
    },
    run: (statement) => {
      // The third statement of an expired batch deletes the records: it reports the batch's count.
      if (!statement.text.startsWith('DELETE FROM idem_operations')) return 0;
      left -= picked;
      return picked;
    },
  };
  const driver: SqlDriver<unknown> = {
    dialect: sqliteDialect,
    capabilities: {
      engine: 'sqlite',
      synchronous: true,
      optimisticInsert: false,
      multiProcess: true,
      durable: true,
    },
    sweepPacing: {
      blocksWriters: true,
      ...(options.callersWaiting === undefined ? {} : { callersWaiting: options.callersWaiting }),
    },
    read: async (body) => body(conn),
    transaction: async (body) => {
      mono += WAIT_MS; // queued behind callers' commits
      return body(conn, undefined, false);
    },
    close: async () => undefined,
  };
  const housekeeping = new SqlHousekeeping(driver, sql, clock);
  return {
    sweep: (maxDuty?: number) =>
      housekeeping.sweep({
        now: fake.now(),
        tombstoneTtlMs: 1000,
        batchSize: 500,
        ...(maxDuty === undefined ? {} : { maxDuty }),
      }),
    pauses,
    sizes,
    picks,
    elapsedMs: () => mono,
  };
}

describe('the sweep pacing (SqlHousekeeping on a store whose batches block callers)', () => {
  it('pauses after a batch for the time it held the lock, not for its wait behind callers', async () => {
    const t = pacedSweep({ expired: 2000, callersWaiting: () => 1 });
    const result = await t.sweep(0.5);
    expect(result.tombstoned).toBe(2000);
    expect(t.pauses).toHaveLength(result.batches);
    // Each pause is as long as the batch's own rows took (duty 0.5): far less than the wait.
    for (const [i, ms] of t.pauses.entries()) {
      expect(ms).toBeCloseTo((t.picks[i] as number) * PER_ROW_MS, 6);
      expect(ms).toBeLessThan(WAIT_MS / 4);
    }
  });

  it('keeps batches of at least MIN_SWEEP_BATCH_ROWS, so a slow machine still sweeps in bulk', async () => {
    const t = pacedSweep({ expired: 500, callersWaiting: () => 1 });
    // A row takes 5 µs, so 50 rows fit 0.25 ms; the pacer never goes below the floor either way.
    await t.sweep();
    expect(Math.min(...t.sizes)).toBeGreaterThanOrEqual(MIN_SWEEP_BATCH_ROWS);
  });

  it('takes longer batches while a backlog is left and no caller waits, short ones while callers wait', async () => {
    const idle = pacedSweep({ expired: 20_000, callersWaiting: () => 0 });
    await idle.sweep();
    const busy = pacedSweep({ expired: 20_000, callersWaiting: () => 2 });
    await busy.sweep();
    const settled = (sizes: number[]) => sizes[Math.floor(sizes.length / 2)] as number;
    expect(settled(busy.sizes)).toBe(50); // 0.25 ms of 5 µs rows
    expect(settled(idle.sizes)).toBe(200); // 1 ms: the budget stretched fourfold
    // 400 batches of 50 rows, each waiting 40 ms behind callers and pausing 0.25 ms: about 16 s of
    // fake time. Counting the wait in the pause (before the fix) doubled it.
    expect(busy.elapsedMs()).toBeLessThan(20_000);
  });
});
