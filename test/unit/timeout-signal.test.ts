import { describe, expect, it } from 'vitest';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { timeoutSignal } from '../../packages/idem/src/core/timeout-signal.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { underForcedGc } from '../helpers/forced-gc.js';

/** Resolves with the signal's reason and the ms it took, or 'not aborted' after `capMs`. */
function abortedWithin(signal: AbortSignal, capMs: number): Promise<unknown> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('not aborted'), capMs);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve(signal.reason);
    });
  });
}

describe('timeoutSignal', () => {
  it('aborts on time with a TimeoutError while collections run, when only its timer holds it', async () => {
    // Nothing but the helper's own timer holds the signal: a WeakRef is all the test keeps.
    const other = new AbortController();
    let fired: unknown;
    const watch = (signal: AbortSignal) => {
      const ref = new WeakRef(signal);
      // Once it has fired the signal may rightly be collected before the next poll: the listener
      // (which holds nothing of the signal) records the firing itself.
      signal.addEventListener('abort', (event) => {
        fired ??= (event.target as AbortSignal).reason;
      });
      return new Promise<void>((resolve) => {
        const poll = setInterval(() => {
          const s = ref.deref();
          if (s === undefined || s.aborted) {
            fired ??= s?.reason ?? 'collected before it fired';
            clearInterval(poll);
            resolve();
          }
        }, 10);
        setTimeout(() => {
          clearInterval(poll);
          resolve();
        }, 3_000);
      });
    };
    const { ms } = await underForcedGc(() => watch(timeoutSignal(300, { signal: other.signal }).signal));
    expect((fired as Error | undefined)?.name).toBe('TimeoutError');
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });

  it('aborts on time with a listener attached while collections run', async () => {
    const other = new AbortController();
    const { value, ms } = await underForcedGc(() =>
      abortedWithin(timeoutSignal(300, { signal: other.signal }).signal, 3_000),
    );
    expect((value as Error).name).toBe('TimeoutError');
    expect(ms).toBeLessThan(3_000);
  });

  it("aborts with a parent's reason, from any parent, and then releases the timer", async () => {
    const a = new AbortController();
    const b = new AbortController();
    const t = timeoutSignal(60_000, { signal: [a.signal, undefined, b.signal] });
    const reason = new Error('lease lost');
    b.abort(reason);
    expect(t.signal.aborted).toBe(true);
    expect(t.signal.reason).toBe(reason);
    a.abort(new Error('later'));
    expect(t.signal.reason).toBe(reason);
  });

  it('is aborted at once by an aborted parent', () => {
    const a = new AbortController();
    a.abort(new Error('already'));
    const t = timeoutSignal(10, { signal: a.signal });
    expect(t.signal.aborted).toBe(true);
    expect((t.signal.reason as Error).message).toBe('already');
  });

  it('dispose clears the timer and the parent listener: the signal never aborts', async () => {
    const parent = new AbortController();
    const t = timeoutSignal(30, { signal: parent.signal });
    t.dispose();
    t.dispose();
    parent.abort();
    expect(await abortedWithin(t.signal, 200)).toBe('not aborted');
    const scoped = timeoutSignal(30);
    scoped[Symbol.dispose]();
    expect(await abortedWithin(scoped.signal, 200)).toBe('not aborted');
  });

  it('Infinity means no timeout: only a parent aborts it', async () => {
    const parent = new AbortController();
    const t = timeoutSignal(Number.POSITIVE_INFINITY, { signal: parent.signal });
    expect(await abortedWithin(t.signal, 100)).toBe('not aborted');
    parent.abort(new Error('stop'));
    expect((t.signal.reason as Error).message).toBe('stop');
  });

  it('a wait longer than setTimeout takes does not fire early (setTimeout would overflow to 1 ms)', async () => {
    const t = timeoutSignal(2 ** 31 + 5);
    expect(await abortedWithin(t.signal, 100)).toBe('not aborted');
    t.dispose();
  });

  it('on an injected clock it fires when the clock reaches ms, and dispose drops its sleeper', async () => {
    const clock = new FakeClock();
    const t = timeoutSignal(1_000, { clock });
    clock.advance(999);
    await Promise.resolve();
    expect(t.signal.aborted).toBe(false);
    clock.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect((t.signal.reason as Error).name).toBe('TimeoutError');
    const disposed = timeoutSignal(1_000, { clock });
    expect(clock.pendingSleepers).toBe(1);
    disposed.dispose();
    expect(clock.pendingSleepers).toBe(0);
  });

  it('refuses NaN', () => {
    expect(() => timeoutSignal(Number.NaN)).toThrow(RangeError);
  });
});

describe('systemClock.sleep', () => {
  it('resolves on time while collections run', async () => {
    const { ms } = await underForcedGc(() => systemClock.sleep(300));
    expect(ms).toBeGreaterThanOrEqual(290);
    expect(ms).toBeLessThan(3_000);
  });
});
