import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import type { AuthInfo } from '@modelcontextprotocol/server';
import { createMcpHandler, withMcpAuth } from 'mcp-handler';
import { z } from 'zod';
import { Executor } from 'idem';
import { openPostgres, PostgresStore } from 'idem/postgres';
import { authorizeByGrant, idempotentTool, registerIdemTool } from 'idem/mcp';

// The rule: mcp-handler builds a new McpServer for every request, so everything that must outlive
// one request (the pool, the store, the executor, the tool itself) is made here, at module scope,
// once per process. The callback given to createMcpHandler only registers the tool already built.
const pool = await openPostgres(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/app');
await pool.query(`CREATE TABLE IF NOT EXISTS tickets (
  id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL)`);
// authorizeByGrant: a call may act in the workspaces its own token lists, and nowhere else.
const executor = new Executor({ store: await PostgresStore.create(pool), authorize: authorizeByGrant });
const createTicket = idempotentTool(executor, {
  name: 'create_ticket',
  version: 1,
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  // `client` is the transaction's: the ticket and Idem's receipt commit together.
  effect: async (client, args) => {
    const id = `t_${crypto.randomUUID()}`;
    await client.query('INSERT INTO tickets (id, workspace, title) VALUES ($1, $2, $3)', [
      id,
      args.workspace,
      args.title,
    ]);
    return { resource_id: id, ticket_id: id };
  },
});

// Your token check; here a map given as TICKETS_TOKENS='{"<token>": {"principal": "alice",
// "workspaces": ["team-a"]}}'. Idem reads `extra.principal`, and authorizeByGrant `extra.workspaces`.
type Grant = { principal: string; workspaces: string[] };
const tokens = new Map(
  Object.entries(JSON.parse(process.env.TICKETS_TOKENS ?? '{}') as Record<string, Grant>),
);
function verifyToken(_req: Request, token?: string): AuthInfo | undefined {
  const grant = token === undefined ? undefined : tokens.get(token);
  if (token === undefined || grant === undefined) return undefined; // with required: true, a 401
  const extra = { principal: grant.principal, workspaces: grant.workspaces };
  return { token, clientId: grant.principal, scopes: [], extra };
}

const handler = withMcpAuth(
  createMcpHandler((server) => {
    registerIdemTool(server, createTicket); // per request: registers, builds nothing
  }),
  verifyToken,
  { required: true },
);
createServer(toNodeHandler({ fetch: handler })).listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
