import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { PostgresReferenceApp } from '../../packages/idem-cli/src/server/postgres-reference-app.js';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import type { ServerApp } from '../../packages/idem-cli/src/server/server-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { callTool, cleanup, closeQuietly, connectInMemory, makeTempDir } from '../helpers/mcp-fixtures.js';
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { callStart, durableExecutor, storeFactories, type TestStore } from '../helpers/store-fixtures.js';

// A string containing U+0000: SQLite would store it, PostgreSQL would refuse it (text and jsonb
// cannot hold NUL) and the call would end `internal`. Both engines must answer the same:
// `invalid_argument` naming the field, before anything is read or written.

const NUL = '\u0000';
const LONE = 'must be well-formed Unicode (it contains a lone surrogate, U+D800 to U+DFFF without its pair)';
const nulMessage = (path: string) =>
  `invalid arguments: ${path}: must not contain the character U+0000 (NUL)`;

for (const factory of storeFactories) {
  describe(`U+0000 in arguments: ${factory.name} executor`, () => {
    async function open(): Promise<TestStore> {
      const t = await factory.create();
      onTestFinished(() => t.close());
      return t;
    }

    it('refuses it in a local call, in the workspace, and in a durable start, writing nothing', async () => {
      const t = await open();
      const run = (workspace: string, body: string) =>
        t.executor.run(t.createNote, { principal: 'alice', workspace, key: randomUUID(), args: { body } });
      const refusals = [
        [await run('ws-1', `a${NUL}b`), 'body'],
        [await run(`ws${NUL}`, 'fine'), 'workspace'],
        [
          await callStart(durableExecutor(t.store), {
            key: randomUUID(),
            args: { service: 'api', version: '1.0', labels: [{ team: `core${NUL}` }] },
          }),
          'labels.0.team',
        ],
      ] as const;
      for (const [outcome, path] of refusals) {
        if (outcome.ok) throw new Error(`accepted a NUL in ${path}`);
        expect(outcome.error).toMatchObject({
          code: 'invalid_argument',
          retryable: false,
          message: nulMessage(path),
        });
      }
      expect(await t.countNotes()).toBe(0);
      expect(await t.countReceipts()).toBe(0);
      expect((await run('ws-1', 'fine')).ok).toBe(true);
    });
  });
}

/** The reference server on each engine, reached in-process over MCP as principal `dev`. */
const servers: { name: string; open(): Promise<ServerApp> }[] = [
  {
    name: 'sqlite',
    open: async () =>
      new ReferenceApp({ dbPath: join(makeTempDir(), 'nul.sqlite'), registry: TokenRegistry.fixed(grant()) }),
  },
  ...(postgresAvailable
    ? [
        {
          name: 'postgres',
          open: async () => {
            const schema = `idem_t_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
            const app = await PostgresReferenceApp.open({
              url: POSTGRES_URL,
              pool: { schema, max: 2 },
              registry: TokenRegistry.fixed(grant()),
            });
            onTestFinished(async () => {
              const admin = new pg.Client({ connectionString: POSTGRES_URL });
              await admin.connect();
              await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
              await admin.end();
            });
            return app;
          },
        },
      ]
    : []),
];

function grant() {
  return { principal: 'dev', workspaces: ['default'] };
}

afterEach(cleanup);

for (const server of servers) {
  describe(`U+0000 in arguments: ${server.name} reference server over MCP`, () => {
    it('create_note, start_deployment, get_note and list_notes answer invalid_argument; nothing is written', async () => {
      const app = await server.open();
      onTestFinished(() => app.close());
      const client: Client = await connectInMemory(app as ReferenceApp, 'dev');
      onTestFinished(() => closeQuietly(client));
      const key = () => randomUUID();
      const lone = (path: string) => `invalid arguments: ${path}: ${LONE}`;
      const cases = [
        [
          'create_note',
          { idempotency_key: key(), workspace: 'default', body: `x${NUL}y` },
          nulMessage('body'),
        ],
        [
          'start_deployment',
          { idempotency_key: key(), workspace: 'default', service: `api${NUL}`, version: '1' },
          nulMessage('service'),
        ],
        ['get_note', { workspace: 'default', note_id: `note_${NUL}` }, nulMessage('note_id')],
        // A lone surrogate: PostgreSQL would store it as U+FFFD, so that different strings match.
        ['create_note', { idempotency_key: key(), workspace: 'default', body: 'x\ud800' }, lone('body')],
        [
          'start_deployment',
          { idempotency_key: key(), workspace: 'default', service: 'api\udfff', version: '1' },
          lone('service'),
        ],
        ['get_note', { workspace: 'default', note_id: 'note_\ud800' }, lone('note_id')],
        ['list_notes', { workspace: 'default\udfff' }, lone('workspace')],
      ] as const;
      for (const [tool, args, message] of cases) {
        const result = await callTool(client, tool, args);
        expect(result.isError, tool).toBe(true);
        expect(result.sc.error, tool).toMatchObject({ code: 'invalid_argument', retryable: false, message });
      }
      const listed = await callTool(client, 'list_notes', { workspace: 'default' });
      expect(listed.sc.notes).toEqual([]);
      expect(await app.store.ledger.list()).toEqual([]);
    });
  });
}
