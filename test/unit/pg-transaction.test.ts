import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_MAX_RETRIES,
  MAX_BACKOFF_MS,
  pgBackoffMs,
  pgIdentityLock,
  pgTransactionProtocol,
  runPgTransaction,
  type PgAttempt,
} from '../../packages/idem/src/adapters/postgres/pg-transaction.js';
import { identityLockKey } from '../../packages/idem/src/adapters/postgres/call-statements.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { IdemError } from '../../packages/idem/src/core/errors.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';

/** A node-postgres-shaped error with this SQLSTATE. */
function pgError(code: string, message = `pg ${code}`): Error & { code: string } {
  return Object.assign(new Error(message), { code });
}

/** The engine's reading of errors in these tests: anything with a string code is the driver's. */
const errors = {
  driverError: (error: unknown) =>
    typeof (error as { code?: unknown } | null)?.code === 'string' ? error : undefined,
};

/** Lets queued callbacks run (no timer). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Waits (in event-loop turns, bounded) until something sleeps on `clock`. */
async function untilSleeping(clock: FakeClock): Promise<void> {
  for (let i = 0; i < 1000 && clock.pendingSleepers === 0; i += 1) await turn();
  expect(clock.pendingSleepers).toBe(1);
}

describe('pgTransactionProtocol', () => {
  it('applies the defaults in one place: 5000 ms, 5 re-runs, the system clock', () => {
    expect(pgTransactionProtocol()).toEqual({
      lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS,
      maxRetries: DEFAULT_MAX_RETRIES,
      clock: systemClock,
    });
    expect(DEFAULT_LOCK_TIMEOUT_MS).toBe(5000);
    expect(DEFAULT_MAX_RETRIES).toBe(5);
  });

  it('rounds lockTimeoutMs to whole ms, at least 1 (0 would be no bound), and keeps the injected clock', () => {
    const clock = new FakeClock();
    expect(pgTransactionProtocol({ lockTimeoutMs: 0.2, maxRetries: 0, clock })).toEqual({
      lockTimeoutMs: 1,
      maxRetries: 0,
      clock,
    });
    expect(pgTransactionProtocol({ lockTimeoutMs: 1234.6 }).lockTimeoutMs).toBe(1235);
  });
});

describe('pgBackoffMs', () => {
  it('doubles from 2 ms up to MAX_BACKOFF_MS, with a jitter in [0.5, 1)', () => {
    const top = () => 1 - Number.EPSILON;
    const bottom = () => 0;
    expect([0, 1, 2, 3, 4, 5, 6, 7, 20].map((n) => pgBackoffMs(n, bottom))).toEqual([
      1, 2, 4, 8, 16, 32, 64, 100, 100,
    ]);
    expect(pgBackoffMs(0, top)).toBeCloseTo(2);
    expect(pgBackoffMs(6, top)).toBeCloseTo(128);
    expect(pgBackoffMs(7, top)).toBeCloseTo(MAX_BACKOFF_MS);
    expect(MAX_BACKOFF_MS).toBe(200);
  });
});

describe('pgIdentityLock', () => {
  const identity = { principal: 'p', workspace: 'w', operation: 'op', version: 2, key: 'k' };

  it('is the identity key in decimal digits, tried only when asked', () => {
    expect(pgIdentityLock({})).toBeUndefined();
    const lock = pgIdentityLock({ lock: { identity } });
    expect(lock).toEqual({ key: identityLockKey(identity).toString(), tryLock: false });
    expect(lock?.key).toMatch(/^-?\d+$/);
    expect(pgIdentityLock({ lock: { identity, tryLock: true } })?.tryLock).toBe(true);
  });
});

describe('runPgTransaction', () => {
  it('re-runs after a serialization failure, sleeping the back-off on the injected clock', async () => {
    const clock = new FakeClock();
    const protocol = pgTransactionProtocol({ clock });
    let runs = 0;
    const running = runPgTransaction(protocol, errors, undefined, async () => {
      runs += 1;
      if (runs === 1) throw pgError('40001');
      return 'committed';
    });
    await untilSleeping(clock);
    expect(runs).toBe(1); // waits on the fake clock: no second run before it moves
    clock.advance(MAX_BACKOFF_MS);
    await expect(running).resolves.toBe('committed');
    expect(runs).toBe(2);
  });

  it('runs at most maxRetries + 1 times, then answers busy (a deadlock, translated)', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const running = runPgTransaction(
      pgTransactionProtocol({ clock, maxRetries: 2 }),
      errors,
      undefined,
      async () => {
        runs += 1;
        throw pgError('40P01');
      },
    );
    const outcome = running.then(
      () => undefined,
      (error: unknown) => error,
    );
    for (let i = 0; i < 2; i += 1) {
      await untilSleeping(clock);
      clock.advance(MAX_BACKOFF_MS);
    }
    const error = await outcome;
    expect(runs).toBe(3);
    expect(error).toBeInstanceOf(IdemError);
    expect(error).toMatchObject({ code: 'busy', retryable: true });
  });

  it('never re-runs once the body returned: a connection lost then is outcome_unknown', async () => {
    let runs = 0;
    const running = runPgTransaction(pgTransactionProtocol(), errors, undefined, async (a: PgAttempt) => {
      runs += 1;
      a.bodyReturned();
      throw pgError('57P01', 'terminating connection due to administrator command');
    });
    await expect(running).rejects.toMatchObject({ code: 'outcome_unknown', retryable: true });
    expect(runs).toBe(1);
  });

  it('never re-runs after a serialization failure reported by COMMIT', async () => {
    let runs = 0;
    const running = runPgTransaction(pgTransactionProtocol(), errors, undefined, async (a) => {
      runs += 1;
      a.bodyReturned();
      throw pgError('40001');
    });
    await expect(running).rejects.toMatchObject({ code: 'busy' });
    expect(runs).toBe(1);
  });

  it("passes the body's own error (and an IdemError) out unchanged, without a re-run", async () => {
    const own = new Error('the effect failed');
    await expect(
      runPgTransaction(pgTransactionProtocol(), errors, undefined, async () => {
        throw own;
      }),
    ).rejects.toBe(own);
    const idem = new IdemError('busy', 'from below', { retryAfterMs: 5 });
    let runs = 0;
    await expect(
      runPgTransaction(pgTransactionProtocol(), errors, undefined, async () => {
        runs += 1;
        throw idem;
      }),
    ).rejects.toBe(idem);
    expect(runs).toBe(1);
  });

  it('names the server of an unavailable database when the engine knows it', async () => {
    const target = { server: 'db.example:5432', database: 'app' };
    await expect(
      runPgTransaction(pgTransactionProtocol(), { ...errors, target }, undefined, async () => {
        throw pgError('53100');
      }),
    ).rejects.toMatchObject({ code: 'unavailable', message: expect.stringContaining('db.example:5432') });
  });

  it('an abort ends the back-off with its reason, and an aborted signal runs nothing', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    let runs = 0;
    const running = runPgTransaction(
      pgTransactionProtocol({ clock }),
      errors,
      controller.signal,
      async () => {
        runs += 1;
        throw pgError('40001');
      },
    );
    await untilSleeping(clock);
    controller.abort(new Error('caller gave up'));
    await expect(running).rejects.toThrow('caller gave up');
    expect(runs).toBe(1);
    expect(clock.pendingSleepers).toBe(0);

    await expect(
      runPgTransaction(pgTransactionProtocol(), errors, controller.signal, async () => {
        runs += 1;
        return 1;
      }),
    ).rejects.toThrow('caller gave up');
    expect(runs).toBe(1);
  });
});
