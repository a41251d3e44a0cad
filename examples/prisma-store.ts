import { PrismaPg } from '@prisma/adapter-pg';
import { Executor, type IdempotentOperation } from 'idem';
import { prismaStore, type PrismaTransaction } from 'idem/prisma';
// Your generated client (here from examples/prisma/schema.prisma, model Ticket mapped to "tickets").
import { PrismaClient } from './prisma/generated/client.js';

const schema = process.env.DATABASE_SCHEMA ?? 'public';
const prisma = new PrismaClient({
  adapter: new PrismaPg(
    { connectionString: process.env.DATABASE_URL, options: `-c search_path=${schema}` },
    { schema },
  ),
});
// Your own migrations create your tables; Idem creates its own (idem_*) when the store is made.
await prisma.$executeRawUnsafe(
  'CREATE TABLE IF NOT EXISTS tickets (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, title TEXT NOT NULL)',
);

const store = await prismaStore(prisma);
const executor = new Executor({ store, authorize: () => true });

const createTicket: IdempotentOperation<PrismaTransaction<typeof prisma>, { title: string }> = {
  name: 'create_ticket',
  version: 1,
  // `tx` is Prisma's interactive-transaction client: the ticket and Idem's receipt commit together.
  async effect(tx, args, context) {
    const ticket = await tx.ticket.create({
      data: { id: `t_${crypto.randomUUID()}`, workspace: context.identity.workspace, title: args.title },
    });
    return { resource_id: ticket.id, ticket_id: ticket.id };
  },
};

const call = { principal: 'alice', workspace: 'team-a', key: 'ticket-1', args: { title: 'Printer' } };
const first = await executor.run(createTicket, call);
const retry = await executor.run(createTicket, call); // replays: no second ticket
console.log(JSON.stringify(first.ok && { ...first.result, replayed: first.replayed }));
console.log(JSON.stringify(retry.ok && { ...retry.result, replayed: retry.replayed }));
await prisma.$disconnect();
