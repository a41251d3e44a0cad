import { describe, expect, it } from 'vitest';
import { abandonOnAbort } from '../../packages/idem/src/core/abandon-on-abort.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('abandonOnAbort', () => {
  it('rejects with the reason at once, and hands a late value to onLate, not to the caller', async () => {
    const pending = deferred<string>();
    const controller = new AbortController();
    const late: string[] = [];
    const waited = abandonOnAbort(pending.promise, controller.signal, { onLate: (v) => late.push(v) });
    controller.abort(new Error('gave up'));
    await expect(waited).rejects.toThrow('gave up');
    pending.resolve('connection');
    await pending.promise;
    await new Promise((r) => setImmediate(r));
    expect(late).toEqual(['connection']);
  });

  it('an already aborted signal rejects before anything settles', async () => {
    const pending = deferred<number>();
    const late: number[] = [];
    const waited = abandonOnAbort(pending.promise, AbortSignal.abort('no'), { onLate: (v) => late.push(v) });
    await expect(waited).rejects.toBe('no');
    pending.resolve(1);
    await new Promise((r) => setImmediate(r));
    expect(late).toEqual([1]);
  });

  it('once no longer abandonable, an abort is ignored and the real outcome reaches the caller', async () => {
    const pending = deferred<string>();
    const controller = new AbortController();
    const late: string[] = [];
    const waited = abandonOnAbort(pending.promise, controller.signal, {
      abandonable: () => false,
      onLate: (v) => late.push(v),
    });
    controller.abort();
    pending.resolve('committed');
    await expect(waited).resolves.toBe('committed');
    expect(late).toEqual([]);
  });

  it('without a signal, or when pending settles first, it is pending itself', async () => {
    await expect(abandonOnAbort(Promise.resolve(3), undefined)).resolves.toBe(3);
    const controller = new AbortController();
    const failing = abandonOnAbort(Promise.reject(new Error('db down')), controller.signal);
    await expect(failing).rejects.toThrow('db down');
    controller.abort();
  });
});
