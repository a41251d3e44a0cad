import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  IdemError,
  isIdemError,
  toIdemError,
  type ErrorCode,
} from '../../packages/idem/src/core/errors.js';

describe('IdemError', () => {
  it('carries code, message, name and options', () => {
    const cause = new Error('driver');
    const error = new IdemError('busy', 'try later', {
      retryAfterMs: 250,
      operationId: 'op_1',
      nextAction: 'Retry the same call.',
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('IdemError');
    expect(error.code).toBe('busy');
    expect(error.message).toBe('try later');
    expect(error.retryAfterMs).toBe(250);
    expect(error.operationId).toBe('op_1');
    expect(error.nextAction).toBe('Retry the same call.');
    expect(error.cause).toBe(cause);
  });

  it('leaves optional fields undefined and sets no cause when none is given', () => {
    const error = new IdemError('internal', 'oops');
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.operationId).toBeUndefined();
    expect(error.nextAction).toBeUndefined();
    expect('cause' in error).toBe(false);
  });

  it('is retryable by default only for busy, in_progress and aborted', () => {
    const retryable = ERROR_CODES.filter((code) => new IdemError(code, 'x').retryable);
    expect(retryable.sort()).toEqual(['aborted', 'busy', 'in_progress']);
    const expected: Record<ErrorCode, boolean> = {
      invalid_argument: false,
      payload_conflict: false,
      forbidden: false,
      not_found: false,
      key_expired: false,
      version_conflict: false,
      busy: true,
      unavailable: false,
      in_progress: true,
      outcome_unknown: false,
      aborted: true,
      internal: false,
    };
    for (const code of ERROR_CODES) expect(new IdemError(code, 'x').retryable, code).toBe(expected[code]);
  });

  it('lets an explicit retryable override the default', () => {
    expect(new IdemError('busy', 'x', { retryable: false }).retryable).toBe(false);
    expect(new IdemError('internal', 'x', { retryable: true }).retryable).toBe(true);
  });
});

describe('isIdemError', () => {
  it('recognises an IdemError', () => {
    expect(isIdemError(new IdemError('forbidden', 'no'))).toBe(true);
  });

  it('checks the shape, not the class, so a copy from another bundle is recognised', () => {
    expect(isIdemError({ name: 'IdemError', code: 'busy', message: 'x' })).toBe(true);
    class ForeignIdemError extends Error {
      override name = 'IdemError';
      code = 'payload_conflict';
    }
    expect(isIdemError(new ForeignIdemError('x'))).toBe(true);
  });

  it('rejects values of another shape', () => {
    const rejected: unknown[] = [
      undefined,
      null,
      'IdemError',
      42,
      new Error('plain'),
      { name: 'IdemError' },
      { name: 'IdemError', code: 'not_a_code' },
      { name: 'IdemError', code: 7 },
      { name: 'Error', code: 'busy' },
      { code: 'busy' },
    ];
    for (const value of rejected) expect(isIdemError(value), JSON.stringify(value)).toBe(false);
  });
});

describe('toIdemError', () => {
  it('returns an IdemError (of any copy) unchanged', () => {
    const error = new IdemError('payload_conflict', 'x');
    expect(toIdemError(error)).toBe(error);
    const foreign = { name: 'IdemError', code: 'busy', message: 'x', retryable: true };
    expect(toIdemError(foreign)).toBe(foreign);
  });

  it('wraps anything else as a non-retryable internal error keeping the original as cause', () => {
    const original = new TypeError('boom');
    const wrapped = toIdemError(original);
    expect(wrapped).toBeInstanceOf(IdemError);
    expect(wrapped.code).toBe('internal');
    expect(wrapped.retryable).toBe(false);
    expect(wrapped.message).toBe('internal error');
    expect(wrapped.cause).toBe(original);
    expect(toIdemError('a string').cause).toBe('a string');
  });

  it('uses the given message for the wrapper', () => {
    expect(toIdemError(new Error('boom'), 'the effect failed').message).toBe('the effect failed');
  });

  it('maps an abort to aborted (retryable), never to internal, keeping the reason as cause', async () => {
    const controller = new AbortController();
    controller.abort();
    const reasons: unknown[] = [
      controller.signal.reason, // DOMException AbortError, the default reason
      (() => {
        try {
          AbortSignal.abort().throwIfAborted();
        } catch (error) {
          return error;
        }
      })(),
      await import('node:timers/promises')
        .then(({ setTimeout }) => setTimeout(10, undefined, { signal: AbortSignal.abort() }))
        .catch((error: unknown) => error), // Node's own AbortError
    ];
    for (const reason of reasons) {
      expect((reason as Error).name).toBe('AbortError');
      const wrapped = toIdemError(reason, 'the effect failed');
      expect(wrapped).toMatchObject({ code: 'aborted', retryable: true, cause: reason });
      expect(wrapped.message).toBe('the call was aborted by its caller before it completed');
    }
  });

  it("recognises a reason of the caller's own when given the signal, and only then", () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    controller.abort(reason);
    expect(toIdemError(reason, 'x', controller.signal).code).toBe('aborted');
    expect(toIdemError(reason, 'x').code).toBe('internal');
    expect(toIdemError(new Error('other'), 'x', controller.signal).code).toBe('internal');
    expect(toIdemError(reason, 'x', new AbortController().signal).code).toBe('internal');
  });
});
