import Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { Executor, type IdempotentOperation } from 'idem';
import { drizzleStore, type DrizzleSqliteTransaction } from 'idem/drizzle';

const tickets = sqliteTable('tickets', {
  id: text('id').primaryKey(),
  workspace: text('workspace').notNull(),
  title: text('title').notNull(),
});

const database = new Database(process.env.TICKETS_DB ?? './tickets.sqlite');
database.pragma('journal_mode = WAL');
database.exec(
  'CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL)',
);
const db = drizzle(database);

// On better-sqlite3 the transaction is synchronous (BEGIN IMMEDIATE), and so is the effect.
// With drizzle-orm/node-postgres, the same call gives an async `tx` on your pg Pool.
const store = await drizzleStore(db);
const executor = new Executor({ store, authorize: () => true });

const createTicket: IdempotentOperation<
  DrizzleSqliteTransaction<Record<string, never>>,
  { title: string }
> = {
  name: 'create_ticket',
  version: 1,
  // `tx` is Drizzle's own: the ticket and Idem's receipt commit together, or neither.
  effect(tx, args, context) {
    const id = `t_${crypto.randomUUID()}`;
    tx.insert(tickets).values({ id, workspace: context.identity.workspace, title: args.title }).run();
    return { resource_id: id, ticket_id: id };
  },
};

const call = { principal: 'alice', workspace: 'team-a', key: 'ticket-1', args: { title: 'Printer' } };
const first = await executor.run(createTicket, call);
const retry = await executor.run(createTicket, call); // replays: no second ticket
console.log(JSON.stringify(first.ok && { ...first.result, replayed: first.replayed }));
console.log(JSON.stringify(retry.ok && { ...retry.result, replayed: retry.replayed }));
database.close();
