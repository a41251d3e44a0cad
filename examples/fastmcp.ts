import { FastMCP } from 'fastmcp';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { idempotentTool } from 'idem/mcp';

const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const insert = db.prepare('INSERT INTO tickets (id, workspace, title) VALUES (?, ?, ?)');

const tokens: Record<string, { principal: string; workspaces: string[] }> = {
  [process.env.TICKETS_TOKEN ?? 'change-me-to-a-long-random-token']: {
    principal: 'alice',
    workspaces: ['team-a'],
  },
};
const executor = new Executor({
  store: new SqliteStore(db),
  authorize: (principal, workspace) =>
    Object.values(tokens).some((t) => t.principal === principal && t.workspaces.includes(workspace)),
});

// The tool, independent of any MCP framework: a schema to list, a handler to call.
const createTicket = idempotentTool(executor, {
  name: 'create_ticket',
  version: 1,
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  effect: (_db, args) => {
    const id = `t_${crypto.randomUUID()}`;
    insert.run(id, args.workspace, args.title);
    return { resource_id: id, ticket_id: id };
  },
});

const server = new FastMCP<{ principal: string } | undefined>({
  name: 'tickets',
  version: '1.0.0',
  authenticate: async (request) => {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const grant = token === undefined ? undefined : tokens[token];
    if (grant === undefined) throw new Response(null, { status: 401 });
    return { principal: grant.principal };
  },
});
server.addTool({
  name: createTicket.name,
  description: createTicket.description, // with the retry contract appended
  parameters: createTicket.inputSchema, // lets every value through: Idem answers invalid_argument itself
  outputSchema: createTicket.outputSchema,
  annotations: createTicket.annotations,
  execute: (args, { session, signal }) =>
    createTicket.handle(args, { principal: session?.principal, signal }),
});
await server.start({
  transportType: 'httpStream',
  httpStream: { host: '127.0.0.1', port: Number(process.env.PORT ?? 8080) },
});
