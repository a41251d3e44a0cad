import { describe, expect, it } from 'vitest';
import type { OperationIdentity } from '../../packages/idem/src/core/operation-identity.js';
import type { ReceiptView } from '../../packages/idem/src/core/receipt.js';
import { NOTHING, SameKeyCalls, WAITED } from '../../packages/idem/src/executor/same-key-calls.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';

const identity: OperationIdentity = {
  principal: 'alice',
  workspace: 'ws-1',
  operation: 'create_note',
  version: 1,
  key: 'k-1',
};

const record: ReceiptView = {
  operationId: 'op_00000000000000000000000000000001',
  identity,
  fingerprint: 'f',
  status: 'succeeded',
  result: { status: 'succeeded', operation_id: 'op_00000000000000000000000000000001' },
  attemptCount: 1,
};

describe('SameKeyCalls', () => {
  it('has no leader for an identity nobody leads, and one per identity while a call leads', () => {
    const calls = new SameKeyCalls();
    const clock = new FakeClock();
    expect(calls.follow(identity, { clock, waitMs: 100 })).toBeUndefined();
    const end = calls.lead(identity);
    expect(calls.follow(identity, { clock, waitMs: 100 })).toBeInstanceOf(Promise);
    // Another version, key, operation, workspace or principal is another identity.
    for (const other of [
      { version: 2 },
      { key: 'k-2' },
      { operation: 'other' },
      { workspace: 'ws-2' },
      { principal: 'bob' },
    ]) {
      expect(calls.follow({ ...identity, ...other }, { clock, waitMs: 100 })).toBeUndefined();
    }
    // A second lead of the same identity is no lead: its end changes nothing.
    calls.lead(identity)(record);
    expect(calls.size).toBe(1);
    end();
    expect(calls.size).toBe(0);
  });

  it('hands every follower the record the leader committed, and forgets the lead before that', async () => {
    const calls = new SameKeyCalls();
    const clock = new FakeClock();
    const end = calls.lead(identity);
    const followers = [1, 2, 3].map(() => calls.follow(identity, { clock, waitMs: 100 }));
    end(record);
    end(); // a second end does nothing
    expect(calls.size).toBe(0);
    expect(calls.follow(identity, { clock, waitMs: 100 })).toBeUndefined();
    expect(await Promise.all(followers)).toEqual([record, record, record]);
    expect(clock.pendingSleepers).toBe(0); // the wait's timer stopped with the lead
  });

  it('tells followers NOTHING when the leader committed nothing', async () => {
    const calls = new SameKeyCalls();
    const clock = new FakeClock();
    const end = calls.lead(identity);
    const follower = calls.follow(identity, { clock, waitMs: 100 });
    end();
    expect(await follower).toBe(NOTHING);
  });

  it('stops waiting after waitMs with WAITED, counted from the first follower, while the leader goes on', async () => {
    const calls = new SameKeyCalls();
    const clock = new FakeClock();
    const end = calls.lead(identity);
    const first = calls.follow(identity, { clock, waitMs: 100 });
    clock.advance(60);
    const second = calls.follow(identity, { clock, waitMs: 100 });
    clock.advance(39);
    let settled = false;
    void Promise.all([first, second]).then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    clock.advance(1);
    expect(await first).toBe(WAITED);
    expect(await second).toBe(WAITED);
    // Still led: a later follower learns at once that the wait is over.
    expect(calls.size).toBe(1);
    expect(await calls.follow(identity, { clock, waitMs: 100 })).toBe(WAITED);
    end(record);
    expect(calls.size).toBe(0);
  });

  it('rejects a follower whose signal aborts with its reason, and no other', async () => {
    const calls = new SameKeyCalls();
    const clock = new FakeClock();
    const end = calls.lead(identity);
    const controller = new AbortController();
    const aborted = calls.follow(identity, { clock, waitMs: 100, signal: controller.signal });
    const other = calls.follow(identity, { clock, waitMs: 100, signal: new AbortController().signal });
    controller.abort(new Error('gone'));
    await expect(aborted).rejects.toThrow('gone');
    end(record);
    expect(await other).toBe(record);
    // Already aborted: refused at once.
    calls.lead(identity);
    expect(() => calls.follow(identity, { clock, waitMs: 100, signal: controller.signal })).toThrow('gone');
  });
});
