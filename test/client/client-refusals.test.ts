import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { fingerprint } from '../../packages/idem/src/core/fingerprint.js';
import { tempJournal } from '../helpers/client-fixtures.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type LogLine,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

/** Refusals are returned at once: counted at the server, one `idem.call` line each and no more. */

let server: ServerProcess;
let idem: IdemClient;

beforeAll(async () => {
  ensureBuilt();
  server = await startServerProcess({ args: ['--db', join(makeTempDir(), 'notes.sqlite')] });
  idem = new IdemClient({
    connect: (options) => connectTarget({ url: server.url }, options),
    journal: tempJournal().journal,
    policy: { totalMs: 20_000, attemptTimeoutMs: 5_000, maxAttempts: 10, baseDelayMs: 10, maxDelayMs: 50 },
  });
});
afterAll(async () => {
  await idem.close();
  await cleanup();
});

/** The server's idem.call lines with this outcome, once the log has caught up with `expected`. */
async function callLines(outcome: string, expected: number) {
  const match = (l: LogLine) => l.event === 'idem.call' && l.outcome === outcome;
  const lines = () => server.logs().filter(match);
  await server.waitForLogs(match, expected);
  await new Promise((r) => setTimeout(r, 100)); // a retry, if one were made, would show up by now
  return lines();
}

describe('refusals from the reference server', () => {
  it('forbidden: returned at once, one call at the server', async () => {
    const outcome = await idem.call('create_note', { workspace: 'not-mine', body: 'x' });
    expect(outcome).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'forbidden', retryable: false },
    });
    expect(await callLines('forbidden', 1)).toHaveLength(1);
  });

  it('payload_conflict: returned at once, one call at the server', async () => {
    // Another agent used the key first with other arguments; this agent was handed the key.
    const key = randomUUID();
    const raw = await connectHttp(server.url);
    const first = await callTool(raw, 'create_note', {
      idempotency_key: key,
      workspace: 'default',
      body: 'A',
    });
    await closeQuietly(raw);
    expect(first.isError).toBe(false);
    const args = { workspace: 'default', body: 'B' };
    idem.journal.import({
      format: 'idem.intent/1',
      intentId: 'handed-over',
      tool: 'create_note',
      keyField: 'idempotency_key',
      key,
      argsHash: fingerprint(args),
      args,
    });

    const outcome = await idem.resume('handed-over');

    expect(outcome).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'payload_conflict', retryable: false },
    });
    expect(await callLines('payload_conflict', 1)).toHaveLength(1);
    expect(idem.journal.require('handed-over').status).toBe('failed');
  });

  it('invalid_argument: returned at once', async () => {
    const outcome = await idem.call('create_note', { workspace: 'default', body: '' });
    expect(outcome).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'invalid_argument' } });
  });
});
