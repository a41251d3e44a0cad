import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import type { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import { TransportFaults } from '../../packages/idem/src/testing/transport-faults.js';
import { noteIdsInDb, tempJournal } from '../helpers/client-fixtures.js';
import {
  cleanup,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

/**
 * The caller's AbortSignal against the real reference server: an abort in the middle of a call
 * surfaces as the signal's reason (thrown, as the MCP SDK does), never as a failed outcome with a
 * code; the intent stays in the journal and resuming it acts no second time.
 */
const clients: IdemClient[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});
afterAll(cleanup);

describe('an aborted IdemClient call', () => {
  let server: ServerProcess;
  let dbPath: string;

  beforeAll(async () => {
    ensureBuilt();
    dbPath = join(makeTempDir(), 'notes.sqlite');
    server = await startServerProcess({ args: ['--db', dbPath] });
  });

  function client(faults: TransportFaults, journal: IntentJournal): IdemClient {
    const idem = new IdemClient({
      connect: (options) => connectTarget({ url: server.url }, { ...options, wrap: (t) => faults.wrap(t) }),
      journal,
      // Long enough that only the abort can end the call while its answer is lost.
      policy: { totalMs: 60_000, attemptTimeoutMs: 30_000 },
    });
    clients.push(idem);
    return idem;
  }

  it.each([
    ['a reason of its own', () => new Error('the user pressed stop')],
    ['the default AbortError', () => undefined],
  ])(
    'throws the signal’s reason (%s) while the answer is awaited; resume finds the one note',
    async (_n, reason) => {
      const faults = new TransportFaults().inject({ fault: 'drop_response', tool: 'create_note' });
      const { journal } = tempJournal();
      const idem = client(faults, journal);
      const body = `abort ${randomUUID()}`;
      const controller = new AbortController();
      const pending = idem.call('create_note', { workspace: 'default', body }, { signal: controller.signal });
      // The server acted and answered; the answer was swallowed: the call now waits for it.
      await vi.waitUntil(() => faults.events.length === 1, { timeout: 10_000 });
      controller.abort(reason());

      const thrown = await pending.then(
        (outcome) => ({ outcome }),
        (error: unknown) => ({ error }),
      );
      expect(thrown).not.toHaveProperty('outcome');
      const error = (thrown as { error: unknown }).error;
      expect(error).toBe(controller.signal.reason);
      expect((error as Error).name).toBe(reason() === undefined ? 'AbortError' : 'Error');

      const [intent] = idem.unsettled();
      expect(intent).toMatchObject({ tool: 'create_note' });
      expect(noteIdsInDb(dbPath, body)).toHaveLength(1);
      const resumed = await idem.resume(intent!.intentId);
      expect(resumed).toMatchObject({ status: 'succeeded', replayed: true });
      expect(noteIdsInDb(dbPath, body)).toEqual([
        resumed.status === 'succeeded' ? resumed.result.note_id : '',
      ]);
    },
  );

  it('throws at once, before journaling anything, when the signal is already aborted', async () => {
    const { journal } = tempJournal();
    const idem = client(new TransportFaults(), journal);
    const signal = AbortSignal.abort();
    await expect(idem.call('create_note', { workspace: 'default', body: 'never' }, { signal })).rejects.toBe(
      signal.reason,
    );
    expect(idem.unsettled()).toEqual([]);
  });
});
