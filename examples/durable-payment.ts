import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NodeStreamableHTTPServerTransport, hostHeaderValidation } from '@modelcontextprotocol/node';
import { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { Executor, jsonLogger, type JsonObject } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { openPostgres, PostgresStore } from 'idem/postgres';
import { durableTool, operationTools, principalAuthInfo, registerIdemTool } from 'idem/mcp';
import { idempotencyKeyHandler, startWorker } from 'idem/operations';

const paymentsUrl = process.env.PAYMENTS_URL?.replace(/\/+$/, '');
if (!paymentsUrl) {
  process.stderr.write(
    'durable-payment: set PAYMENTS_URL to your payments API, e.g. http://127.0.0.1:4000\n',
  );
  process.exit(2);
}
const dbUrl = process.env.IDEM_DB ?? './payments.sqlite';
const logger = jsonLogger(); // structured lines on stderr: calls, attempts, final outcomes

// PostgreSQL lets several of these processes share one database (their workers split the work).
const pool = /^postgres(ql)?:\/\//.test(dbUrl) ? await openPostgres(dbUrl) : undefined;
const store = pool ? await PostgresStore.create(pool) : new SqliteStore(openSqlite(dbUrl)); // migrates idem_*
// DEV MODE: every request acts as principal "dev", which may act in any workspace.
const executor = new Executor<unknown>({ store, logger, authorize: () => true });

// create_payment answers `accepted` with an operation_id at once; the worker below makes the payment.
const createPayment = durableTool(executor, {
  name: 'create_payment',
  version: 1, // bump when the meaning of the arguments or the effect changes
  description: 'Creates a payment. Follow its operation_id with get_operation.',
  inputSchema: z.object({
    amount_cents: z.number().int().positive(),
    currency: z.string().regex(/^[A-Z]{3}$/, 'an ISO 4217 code such as EUR'),
  }),
});
const { statusTool, cancelTool } = operationTools(executor); // get_operation, cancel_operation

// The stored result; successFields gives the same fields for a success an operator settles by its
// payment id (resolveOperation; the CLI's `idem ops resolve` takes them as --result-json).
const paymentFields = (args: JsonObject, paymentId: string): JsonObject => ({
  payment_id: paymentId,
  amount_cents: args.amount_cents ?? null,
  currency: args.currency ?? null,
});
// Each attempt: POST /payments with Idempotency-Key idem-<operation id>, the same key on every
// attempt and in every process, so a resend after a lost reply gets the first payment back.
const handler = idempotencyKeyHandler({
  url: `${paymentsUrl}/payments`,
  body: (args) => ({ amount_cents: args.amount_cents ?? null, currency: args.currency ?? null }),
  result: (reply, args) =>
    typeof reply.id === 'string'
      ? { resourceId: reply.id, fields: paymentFields(args, reply.id) }
      : undefined,
  successFields: paymentFields,
  // What an operator is told to look for, should the outcome stay unknown.
  describe: (args) => `a payment of ${String(args.amount_cents)} cents ${String(args.currency)}`,
  providerKeyRetentionMs: 24 * 60 * 60 * 1000, // how long the provider keeps a key (Stripe: 24 h)
});
const stop = new AbortController();
const worker = startWorker({ store, handlers: { create_payment: handler }, logger, signal: stop.signal });

// Loopback only, and a Host header check against DNS rebinding. For real authentication, verify
// a bearer token per request and pass its AuthInfo instead (see examples/oauth-resource-server.ts).
const dev = principalAuthInfo('dev');
const allowedHost = hostHeaderValidation(['localhost', '127.0.0.1', '[::1]']);
const http = createServer(async (req, res) => {
  if (!allowedHost(req, res)) return;
  const server = new McpServer({ name: 'payments', version: '1.0.0' });
  for (const tool of [createPayment, statusTool, cancelTool]) registerIdemTool(server, tool);
  const transport = new NodeStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  await transport.handleRequest(Object.assign(req, { auth: dev }), res);
});
http.listen(Number(process.env.IDEM_PORT ?? 3000), '127.0.0.1', () => {
  const { port } = http.address() as AddressInfo;
  logger.info('payments.listening', { url: `http://127.0.0.1:${port}/mcp` });
});

// Stop taking payments, let the attempt in hand end (at most its 8 s timeout), then close.
const shutdown = async () => {
  stop.abort();
  await new Promise((closed) => {
    http.close(closed);
    http.closeAllConnections();
  });
  await worker.stopped;
  await store.close();
  await pool?.end();
  process.exit(0);
};
process.once('SIGTERM', shutdown).once('SIGINT', shutdown);
