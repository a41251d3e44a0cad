import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { authorizeByGrant, idempotentTool } from 'idem/mcp';

// Built once, at module scope: the database, the store, the executor and the tool.
const db = openSqlite(process.env.TICKETS_DB ?? './tickets.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT, title TEXT)');
const insert = db.prepare('INSERT INTO tickets (id, workspace, title) VALUES (?, ?, ?)');
const executor = new Executor({ store: new SqliteStore(db), authorize: authorizeByGrant });

export const createTicket = idempotentTool(executor, {
  name: 'create_ticket',
  version: 1,
  description: 'Opens a ticket.',
  inputSchema: z.object({ title: z.string().min(1).max(200) }),
  resultSchema: z.object({ ticket_id: z.string() }),
  effect: (_db, args) => {
    const id = `t_${crypto.randomUUID()}`;
    insert.run(id, args.workspace, args.title);
    return { resource_id: id, ticket_id: id };
  },
});
