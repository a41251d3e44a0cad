import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';

/** Lets every pending promise callback run. */
function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function track(promise: Promise<void>): {
  settled: () => 'pending' | 'resolved' | 'rejected';
  reason: () => unknown;
} {
  let state: 'pending' | 'resolved' | 'rejected' = 'pending';
  let reason: unknown;
  promise.then(
    () => {
      state = 'resolved';
    },
    (error: unknown) => {
      state = 'rejected';
      reason = error;
    },
  );
  return { settled: () => state, reason: () => reason };
}

describe('FakeClock', () => {
  it('starts at 2026-01-01T00:00:00Z by default, or at the given instant, with monotonic at 0', () => {
    expect(new FakeClock().now()).toBe(Date.UTC(2026, 0, 1));
    const clock = new FakeClock(1234);
    expect(clock.now()).toBe(1234);
    expect(clock.monotonic()).toBe(0);
  });

  it('does not move on its own', async () => {
    const clock = new FakeClock();
    const before = [clock.now(), clock.monotonic()];
    await flush();
    expect([clock.now(), clock.monotonic()]).toEqual(before);
  });

  it('advance moves both the wall clock and the monotonic clock', () => {
    const clock = new FakeClock(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
    expect(clock.monotonic()).toBe(250);
  });

  it('setNow moves only the wall clock, also backwards', () => {
    const clock = new FakeClock(1000);
    clock.advance(10);
    clock.setNow(500);
    expect(clock.now()).toBe(500);
    expect(clock.monotonic()).toBe(10);
    clock.advance(5);
    expect(clock.now()).toBe(505);
    expect(clock.monotonic()).toBe(15);
  });

  it('resolves sleep(0) and negative sleeps at once without registering a sleeper', async () => {
    const clock = new FakeClock();
    await clock.sleep(0);
    await clock.sleep(-5);
    expect(clock.pendingSleepers).toBe(0);
  });

  it('wakes a sleeper only once its time has come', async () => {
    const clock = new FakeClock();
    const sleep = track(clock.sleep(100));
    expect(clock.pendingSleepers).toBe(1);
    clock.advance(99);
    await flush();
    expect(sleep.settled()).toBe('pending');
    clock.advance(1);
    await flush();
    expect(sleep.settled()).toBe('resolved');
    expect(clock.pendingSleepers).toBe(0);
  });

  it('wakes only the due sleepers, measured from when each began sleeping', async () => {
    const clock = new FakeClock();
    const early = track(clock.sleep(10));
    clock.advance(5);
    const late = track(clock.sleep(10)); // due at monotonic 15
    clock.advance(5); // monotonic 10
    await flush();
    expect(early.settled()).toBe('resolved');
    expect(late.settled()).toBe('pending');
    expect(clock.pendingSleepers).toBe(1);
    clock.advance(5);
    await flush();
    expect(late.settled()).toBe('resolved');
  });

  it('wakes every overdue sleeper on one large advance', async () => {
    const clock = new FakeClock();
    const sleeps = [1, 50, 1000].map((ms) => track(clock.sleep(ms)));
    clock.advance(10_000);
    await flush();
    expect(sleeps.map((s) => s.settled())).toEqual(['resolved', 'resolved', 'resolved']);
  });

  it('rejects with the abort reason and forgets the sleeper when aborted', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const sleep = track(clock.sleep(100, { signal: controller.signal }));
    const reason = new Error('stop');
    controller.abort(reason);
    await flush();
    expect(sleep.settled()).toBe('rejected');
    expect(sleep.reason()).toBe(reason);
    expect(clock.pendingSleepers).toBe(0);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const clock = new FakeClock();
    const reason = new Error('already');
    await expect(clock.sleep(100, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await expect(clock.sleep(0, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(clock.pendingSleepers).toBe(0);
  });

  it('removes its abort listener once a sleep resolves', async () => {
    const clock = new FakeClock();
    const { signal } = new AbortController();
    for (let i = 0; i < 3; i += 1) {
      const sleeping = clock.sleep(10, { signal });
      clock.advance(10);
      await sleeping;
    }
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  });
});
