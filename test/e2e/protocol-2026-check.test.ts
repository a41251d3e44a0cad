import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdemClient, IntentJournal, connectTarget } from '../../packages/idem/src/client/index.js';
import { check, reportOf } from '../check/run-check.js';
import { buildExamples, startExample } from '../helpers/example-fixtures.js';
import { cleanup, freePort, makeTempDir, startServerProcess } from '../helpers/mcp-fixtures.js';

// `idem check` and `idem/client` negotiate the revision: against a server that serves only
// 2026-07-28 (refusing 2025 traffic) they speak it by default and can be pinned; pinned to the
// 2025 handshake they cannot reach it, and say so.

beforeAll(() => buildExamples(), 600_000);
afterAll(cleanup);

async function modernOnlyServer(): Promise<string> {
  const port = await freePort();
  const fixture = startExample('conformance-fixture', {
    IDEM_PORT: String(port),
    IDEM_DB: join(makeTempDir(), 'fixture.sqlite'),
    IDEM_FIXTURE: 'minimal',
    IDEM_LEGACY: 'reject',
  });
  const deadline = Date.now() + 20_000;
  while (!fixture.stderr().includes('idem.serving')) {
    if (Date.now() > deadline) throw new Error(`fixture did not start: ${fixture.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return `http://127.0.0.1:${port}/mcp`;
}

describe('idem check and idem/client against a server of the 2026-07-28 revision only', () => {
  it(
    'idem check passes by default and pinned; with --protocol legacy it cannot reach the server',
    { timeout: 180_000 },
    async () => {
      const url = await modernOnlyServer();
      for (const protocol of [[], ['--protocol', '2026-07-28']]) {
        const result = await check([
          '--url',
          url,
          '--arg',
          'workspace=default',
          '--rounds',
          '2',
          '--json',
          ...protocol,
        ]);
        expect(result.exitCode, result.output + (result.error ?? '')).toBe(0);
        const report = reportOf(result);
        expect(report.verdict).toBe('pass');
        expect(report.tools.map((tool) => tool.tool)).toEqual(['create_note']);
      }
      const legacy = await check(['--url', url, '--protocol', 'legacy', '--json']);
      expect(legacy.exitCode).toBe(1);
      expect(legacy.error ?? legacy.output).toMatch(/cannot reach/);
      const usage = await check(['--url', url, '--protocol', 'newest']);
      expect(usage.exitCode).toBe(2);
    },
  );

  it(
    'IdemClient with connectTarget: executes on 2026-07-28, pinned or negotiated',
    { timeout: 120_000 },
    async () => {
      const srv = await startServerProcess({ args: ['--db', join(makeTempDir(), 'db.sqlite')] });
      for (const url of [srv.url, await modernOnlyServer()]) {
        const journal = IntentJournal.open(join(makeTempDir(), 'intents.sqlite'));
        const eras: string[] = [];
        const idem = new IdemClient({
          journal,
          connect: async (options) => {
            const client = await connectTarget({ url }, { ...options, protocol: '2026-07-28' });
            eras.push(client.getNegotiatedProtocolVersion() ?? 'none');
            return client;
          },
        });
        const outcome = await idem.call('create_note', { workspace: 'default', body: 'from the agent' });
        expect(outcome.status).toBe('succeeded');
        expect(eras).toEqual(['2026-07-28']);
        await idem.close();
        const auto = await connectTarget({ url });
        expect(auto.getNegotiatedProtocolVersion()).toBe('2026-07-28');
        await auto.close();
      }
      const legacy = await connectTarget({ url: srv.url }, { protocol: 'legacy' });
      expect(legacy.getNegotiatedProtocolVersion()).toBe('2025-11-25');
      await legacy.close();
    },
  );
});
