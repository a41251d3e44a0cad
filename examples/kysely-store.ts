import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, type Transaction } from 'kysely';
import { Executor, type IdempotentOperation } from 'idem';
import { kyselyStore } from 'idem/kysely';

interface AppDb {
  tickets: { id: string; workspace: string; title: string };
}

const database = new Database(process.env.TICKETS_DB ?? './tickets.sqlite');
database.pragma('journal_mode = WAL');
const db = new Kysely<AppDb>({ dialect: new SqliteDialect({ database }) });
await db.schema
  .createTable('tickets')
  .ifNotExists()
  .addColumn('id', 'text', (c) => c.primaryKey())
  .addColumn('workspace', 'text')
  .addColumn('title', 'text')
  .execute();

// Idem's tables go into the same database; `database` is the one under the SqliteDialect.
const store = await kyselyStore(db, { engine: 'sqlite', database });
const executor = new Executor({ store, authorize: () => true });

const createTicket: IdempotentOperation<Transaction<AppDb>, { title: string }> = {
  name: 'create_ticket',
  version: 1,
  // `tx` is Kysely's own transaction: the ticket and Idem's receipt commit together, or neither.
  async effect(tx, args, context) {
    const id = `t_${crypto.randomUUID()}`;
    await tx
      .insertInto('tickets')
      .values({ id, workspace: context.identity.workspace, title: args.title })
      .execute();
    return { resource_id: id, ticket_id: id };
  },
};

const call = { principal: 'alice', workspace: 'team-a', key: 'ticket-1', args: { title: 'Printer' } };
const first = await executor.run(createTicket, call);
const retry = await executor.run(createTicket, call); // replays: no second ticket
console.log(JSON.stringify(first.ok && { ...first.result, replayed: first.replayed }));
console.log(JSON.stringify(retry.ok && { ...retry.result, replayed: retry.replayed }));
await db.destroy();
