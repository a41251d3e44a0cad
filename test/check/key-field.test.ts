import { describe, expect, it } from 'vitest';
import { findKeyField } from '../../packages/idem-cli/src/cli/check/key-field.js';

const schema = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
});

describe('findKeyField', () => {
  it('recognises key names in any spelling', () => {
    for (const name of [
      'idempotency_key',
      'idempotencyKey',
      'Idempotency-Key',
      'idem_key',
      'client_token',
      'dedupe_key',
    ]) {
      expect(findKeyField(schema({ body: { type: 'string' }, [name]: { type: 'string' } }, [name]))).toEqual({
        name,
        why: 'its name',
      });
    }
  });

  it('recognises a key by its description', () => {
    const s = schema({
      body: { type: 'string' },
      token: { type: 'string', description: 'Send the same value on a retry and the call is not repeated.' },
    });
    expect(findKeyField(s)).toEqual({ name: 'token', why: 'its description' });
    expect(findKeyField(schema({ ref: { type: 'string', description: 'Idempotency reference.' } }))).toEqual({
      name: 'ref',
      why: 'its description',
    });
  });

  it('takes request_id only when optional: a required requestId names an existing request', () => {
    expect(findKeyField(schema({ request_id: { type: 'string' }, body: { type: 'string' } }))).toEqual({
      name: 'request_id',
      why: 'its name (an optional request id)',
    });
    expect(findKeyField(schema({ requestId: { type: 'string' } }, ['requestId']))).toBeUndefined();
    expect(
      findKeyField(
        schema({ requestId: { type: 'string', description: 'Unique; retries with it are deduplicated.' } }, [
          'requestId',
        ]),
      ),
    ).toEqual({ name: 'requestId', why: 'its description' });
  });

  it('finds none where there is none, and ignores non-string arguments', () => {
    expect(findKeyField(schema({ entities: { type: 'array' }, name: { type: 'string' } }))).toBeUndefined();
    expect(findKeyField(schema({ idempotency_key: { type: 'integer' } }))).toBeUndefined();
    expect(findKeyField({ type: 'object' })).toBeUndefined();
  });
});
