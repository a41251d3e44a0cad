import * as assert from 'node:assert/strict';
import { HOUR, same } from './harness.js';
import type { Case } from './receipt-cases.js';

const PAYMENT_FIELDS = {
  type: 'object',
  properties: {
    payment_id: { type: 'string' },
    amount_cents: { type: 'integer' },
    currency: { type: 'string', pattern: '^[A-Z]{3}$' },
  },
  required: ['payment_id', 'amount_cents', 'currency'],
};

/** The tool catalog and the console's sessions: what every instance on the database shares. */
export function catalogCases<Tx>(): Array<Case<Tx>> {
  return [
    [
      'tools: a declaration is stored per (operation, version), kept as given, and the last one wins',
      async (h) => {
        const tools = h.store.tools;
        assert.equal(await tools.get('create_payment', 1), undefined);
        await tools.declare({
          operation: 'create_payment',
          version: 1,
          resultSchema: PAYMENT_FIELDS,
          declaredAt: h.now,
        });
        await tools.declare({
          operation: 'create_payment',
          version: 2,
          resultSchema: null,
          declaredAt: h.now,
        });
        same(await tools.get('create_payment', 1), {
          operation: 'create_payment',
          version: 1,
          resultSchema: PAYMENT_FIELDS,
          declaredAt: h.now,
        });
        same(await tools.get('create_payment', 2), {
          operation: 'create_payment',
          version: 2,
          resultSchema: null,
          declaredAt: h.now,
        });
        assert.equal(await tools.get('create_payment', 3), undefined);
        assert.equal(await tools.get('create_refund', 1), undefined);
        const narrower = { type: 'object', properties: { payment_id: { type: 'string' } } };
        await tools.declare({
          operation: 'create_payment',
          version: 1,
          resultSchema: narrower,
          declaredAt: h.now + 5,
        });
        same(await tools.get('create_payment', 1), {
          operation: 'create_payment',
          version: 1,
          resultSchema: narrower,
          declaredAt: h.now + 5,
        });
      },
    ],
    [
      'sessions: a session is found by its id until it expires, and is gone once deleted',
      async (h) => {
        const sessions = h.store.sessions;
        const session = {
          id: 'digest-a',
          principal: 'olivia',
          csrf: 'csrf-a',
          credential: 'token:digest',
          createdAt: h.now,
          expiresAt: h.now + HOUR,
        };
        assert.equal(await sessions.get('digest-a', h.now), undefined);
        await sessions.put(session);
        await sessions.put({ ...session, id: 'digest-b', principal: 'bob', expiresAt: h.now + 2 * HOUR });
        same(await sessions.get('digest-a', h.now), session);
        same(await sessions.get('digest-a', h.now + HOUR - 1), session);
        assert.equal(await sessions.get('digest-a', h.now + HOUR), undefined, 'expired at expiresAt');
        await sessions.delete('digest-b');
        assert.equal(await sessions.get('digest-b', h.now), undefined, 'deleted');
        await sessions.delete('digest-b');
        // A later put may sweep expired sessions, never a live one.
        await sessions.put({
          ...session,
          id: 'digest-c',
          createdAt: h.now + HOUR,
          expiresAt: h.now + 3 * HOUR,
        });
        assert.equal(await sessions.get('digest-a', h.now + HOUR), undefined);
        assert.equal((await sessions.get('digest-c', h.now + HOUR))?.principal, 'olivia');
      },
    ],
  ];
}
