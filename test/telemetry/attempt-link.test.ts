import { join } from 'node:path';
import { trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/index.js';
import { systemClock } from '../../packages/idem/src/core/clock.js';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import { Executor, type DurableOperation } from '../../packages/idem/src/executor/executor.js';
import {
  Worker,
  type DispatchOutcome,
  type DurableHandler,
} from '../../packages/idem/src/operations/index.js';
import type { IdemStore } from '../../packages/idem/src/ports/idem-store.js';
import { acceptedCalls } from '../../packages/idem/src/telemetry/accepted-calls.js';
import { recordAttempt } from '../../packages/idem/src/telemetry/record-attempt.js';
import { openPostgresTestStore, POSTGRES_URL, postgresAvailable } from '../helpers/postgres-fixtures.js';
import { openStore, tempDir, type Engine } from '../operations/operations-fixtures.js';

// Issue 25: a worker's attempt is a span of its own, linked to the call that accepted the
// operation, also when the worker runs in another process: the accepting call's traceparent is
// stored with the operation. Here the worker runs over a second store instance on the same SQLite
// file (PostgreSQL schema), with the in-process map of accepted calls cleared.

const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];
const OPERATION: DurableOperation = { name: 'deploy', version: 1 };
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN = '00f067aa0ba902b7';

const handler: DurableHandler = {
  mode: 'key',
  async dispatch(): Promise<DispatchOutcome> {
    return { kind: 'created', resourceId: 'dep_1', fields: { deployment_id: 'dep_1' } };
  },
  async reconcile() {
    return { kind: 'unsupported' };
  },
  nextAction: () => 'Look for the deployment.',
};

let spans: InMemorySpanExporter;
let tracerProvider: BasicTracerProvider;

beforeEach(() => {
  spans = new InMemorySpanExporter();
  tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
});

afterEach(async () => {
  trace.disable();
  await tracerProvider.shutdown();
  acceptedCalls.entries.clear();
});

/** Two store instances on one database (file or schema), and how to read its accepted_trace column. */
async function twoStores(engine: Engine) {
  if (engine === 'sqlite') {
    const path = join(tempDir(), 'idem.sqlite');
    const accepting = openStore(path, systemClock) as IdemStore<unknown>;
    const working = openStore(path, systemClock) as IdemStore<unknown>;
    const column = (operationId: string) => {
      const db = openSqlite(path, { readonly: true });
      try {
        const row = db
          .prepare('SELECT accepted_trace FROM idem_operations WHERE operation_id = ?')
          .get(operationId) as { accepted_trace: string | null } | undefined;
        return Promise.resolve(row?.accepted_trace);
      } finally {
        db.close();
      }
    };
    return { accepting, working, column };
  }
  const first = await openPostgresTestStore();
  const second = await openPostgresTestStore({ path: first.path });
  const column = async (operationId: string) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ accepted_trace: string | null }>(
        `SELECT accepted_trace FROM ${first.path}.idem_operations WHERE operation_id = $1`,
        [operationId],
      );
      return rows[0]?.accepted_trace;
    } finally {
      await client.end();
    }
  };
  return {
    accepting: first.store as IdemStore<unknown>,
    working: second.store as IdemStore<unknown>,
    column,
    close: async () => {
      await second.close();
      await first.close();
    },
  };
}

async function acceptDeploy(store: IdemStore<unknown>, key: string, meta?: Record<string, unknown>) {
  const executor = new Executor<unknown>({ store, logger: silentLogger, authorize: () => true });
  const outcome = await executor.start(OPERATION, {
    principal: 'alice',
    workspace: 'team-a',
    key,
    args: { service: 'api', version: '1.2.3' },
    ...(meta === undefined ? {} : { traceContext: meta }),
  });
  if (!outcome.ok) throw new Error(`not accepted: ${outcome.error.code}`);
  expect(outcome.result.status).toBe('accepted');
  return outcome.operationId;
}

async function runWorker(store: IdemStore<unknown>, operationId: string): Promise<OperationRecord> {
  const worker = new Worker({ store, handlers: { deploy: handler }, logger: silentLogger });
  expect(await worker.runOnce()).toBe(true);
  const record = await store.ledger.get(operationId);
  expect(record?.status).toBe('succeeded');
  return record as OperationRecord;
}

describe.each(engines)(
  "a worker attempt's span links to the accepting call in another store (%s)",
  (engine) => {
    it('stores the call span’s traceparent and links the attempt to it', async () => {
      const stores = await twoStores(engine);
      try {
        trace.setGlobalTracerProvider(tracerProvider);
        const operationId = await acceptDeploy(stores.accepting, 'link-1', {
          traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01`,
        });
        const call = spans.getFinishedSpans().find((s) => s.name === 'tools/call deploy');
        expect(call?.attributes['idem.outcome']).toBe('accepted');
        expect(call?.attributes['idem.operation.id']).toBe(operationId);
        expect(call?.parentSpanContext?.spanId).toBe(PARENT_SPAN);
        const { traceId, spanId } = call?.spanContext() ?? { traceId: '', spanId: '' };
        expect(traceId).toBe(TRACE_ID);
        expect(await stores.column(operationId)).toBe(`00-${traceId}-${spanId}-01`);

        // Another process knows nothing of the call but what the record says.
        acceptedCalls.entries.clear();
        const record = await runWorker(stores.working, operationId);
        expect(record.acceptedTrace).toBe(`00-${traceId}-${spanId}-01`);
        const attempt = spans.getFinishedSpans().find((s) => s.name === 'idem.attempt deploy');
        expect(attempt).toBeDefined();
        // A trace of its own, linked to the call.
        expect(attempt?.spanContext().traceId).not.toBe(traceId);
        expect(attempt?.links.map((l) => [l.context.traceId, l.context.spanId, l.context.isRemote])).toEqual([
          [traceId, spanId, true],
        ]);
      } finally {
        await stores.close?.();
      }
    });

    it('stores nothing without a registered provider: the column is null, the attempt unlinked', async () => {
      const stores = await twoStores(engine);
      try {
        const operationId = await acceptDeploy(stores.accepting, 'link-2', {
          traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01`,
        });
        expect(await stores.column(operationId)).toBeNull();
        trace.setGlobalTracerProvider(tracerProvider);
        const record = await runWorker(stores.working, operationId);
        expect(record.acceptedTrace).toBeUndefined();
        const attempt = spans.getFinishedSpans().find((s) => s.name === 'idem.attempt deploy');
        expect(attempt?.links).toEqual([]);
        expect(spans.getFinishedSpans().some((s) => s.name === 'tools/call deploy')).toBe(false);
      } finally {
        await stores.close?.();
      }
    });
  },
);

describe('recordAttempt and a stored traceparent', () => {
  const line = {
    operation: 'deploy',
    version: 1,
    operationId: 'op_00000000000000000000000000000001',
    attemptId: 'att_test',
    attempt: 1,
    outcome: 'created',
    durationMs: 5,
  };

  it('links to a valid one as a remote span context, and ignores a malformed one', () => {
    trace.setGlobalTracerProvider(tracerProvider);
    recordAttempt({ ...line, acceptedTrace: `00-${TRACE_ID}-${PARENT_SPAN}-01` });
    for (const malformed of ['garbage', `00-${TRACE_ID}-0000000000000000-01`, `01-${TRACE_ID}`]) {
      recordAttempt({ ...line, acceptedTrace: malformed });
    }
    const attempts = spans.getFinishedSpans().filter((s) => s.name === 'idem.attempt deploy');
    expect(attempts).toHaveLength(4);
    expect(attempts[0]?.links.map((l) => [l.context.traceId, l.context.spanId, l.context.isRemote])).toEqual([
      [TRACE_ID, PARENT_SPAN, true],
    ]);
    expect(attempts.slice(1).map((s) => s.links)).toEqual([[], [], []]);
  });
});
