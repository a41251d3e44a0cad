import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Worker } from '../../packages/idem/src/operations/worker.js';
import type { DurableHandler } from '../../packages/idem/src/operations/durable-handler.js';
import { ReferenceApp } from '../../packages/idem-cli/src/server/reference-app.js';
import { TokenRegistry } from '../../packages/idem-cli/src/server/token-registry.js';
import { cleanup, closeQuietly, connectInMemory, makeTempDir } from '../helpers/mcp-fixtures.js';

// Every state a durable operation can be replayed in must fit the tool's declared output schema:
// the SDK client validates structuredContent against it and throws otherwise.

let app: ReferenceApp;
let client: Client;

beforeEach(async () => {
  app = new ReferenceApp({
    dbPath: join(makeTempDir('idem-durable-mcp-'), 'db.sqlite'),
    registry: TokenRegistry.fixed({ principal: 'p', workspaces: ['default'] }),
    providerUrl: 'http://127.0.0.1:9',
    inFlightWaitMs: 0,
  });
  client = await connectInMemory(app, 'p');
});

afterEach(async () => {
  await closeQuietly(client);
  await app.close();
  await cleanup();
});

const args = { idempotency_key: 'deploy-1', workspace: 'default', service: 'api', version: '2.0.0' };

async function start() {
  const result = await client.callTool({ name: 'start_deployment', arguments: args });
  return { isError: result.isError === true, content: result.structuredContent as Record<string, unknown> };
}

/** A handler that must never be reached: these tests settle operations without dispatching. */
const unreachable: DurableHandler = {
  mode: 'key',
  dispatch: () => {
    throw new Error('dispatch must not be called');
  },
  reconcile: () => {
    throw new Error('reconcile must not be called');
  },
  nextAction: () => 'none',
} as unknown as DurableHandler;

describe('start_deployment replays in every state through a real MCP client', () => {
  it('accepted, then running (in_progress), then cancelled after a cancel before dispatch', async () => {
    const first = await start();
    expect(first).toMatchObject({ isError: false, content: { status: 'accepted', replayed: false } });
    const operationId = first.content.operation_id as string;

    const again = await start();
    expect(again).toMatchObject({
      isError: true,
      content: {
        status: 'running',
        operation_id: operationId,
        error: { code: 'in_progress', retryable: true },
      },
    });

    const cancel = await client.callTool({
      name: 'cancel_operation',
      arguments: { operation_id: operationId },
    });
    expect(cancel.structuredContent).toMatchObject({ status: 'cancel_requested', cancel: 'requested' });

    const worker = new Worker({ store: app.store, handlers: { start_deployment: unreachable } });
    expect(await worker.runOnce()).toBe(true);

    const replay = await start();
    expect(replay).toMatchObject({
      isError: false,
      content: { status: 'cancelled', operation_id: operationId, replayed: true },
    });
    const view = await client.callTool({ name: 'get_operation', arguments: { operation_id: operationId } });
    expect(view.structuredContent).toMatchObject({ status: 'cancelled', attempts: 0 });

    const late = await client.callTool({
      name: 'cancel_operation',
      arguments: { operation_id: operationId },
    });
    expect(late.structuredContent).toMatchObject({ status: 'cancelled', cancel: 'already_final' });
  });

  it('failed: a replay is marked replayed and carries the evidence get_operation shows', async () => {
    const first = await start();
    const operationId = first.content.operation_id as string;
    // The effect ran to an established unsuccessful end, keeping its evidence (as a command does).
    const failing: DurableHandler = {
      ...unreachable,
      dispatch: () =>
        Promise.resolve({
          kind: 'failed',
          code: 'internal',
          reason: 'exit 7',
          message: 'the deployment script exited with code 7',
          evidence: { exit_code: 7, last_lines: ['disk full'] },
        }),
    };
    const worker = new Worker({ store: app.store, handlers: { start_deployment: failing } });
    expect(await worker.runOnce()).toBe(true);

    const view = (await client.callTool({ name: 'get_operation', arguments: { operation_id: operationId } }))
      .structuredContent as Record<string, unknown>;
    expect(view).toMatchObject({ status: 'failed', attempts: 1, result: { exit_code: 7 } });

    const replay = await start();
    expect(replay.isError).toBe(true);
    expect(replay.content).toEqual({
      status: 'failed',
      operation_id: operationId,
      replayed: true,
      error: view.error,
      attempts: view.attempts,
      result: view.result,
    });
  });

  it('outcome_unknown: a replay is marked replayed and carries the attempts and next_action', async () => {
    const first = await start();
    const operationId = first.content.operation_id as string;
    const ambiguous: DurableHandler = {
      ...unreachable,
      mode: 'none',
      dispatch: () => Promise.resolve({ kind: 'ambiguous', reason: 'timeout' }),
      nextAction: () => 'check the provider for the deployment',
    };
    const worker = new Worker({ store: app.store, handlers: { start_deployment: ambiguous } });
    expect(await worker.runOnce()).toBe(true);

    const view = (await client.callTool({ name: 'get_operation', arguments: { operation_id: operationId } }))
      .structuredContent as Record<string, unknown>;
    expect(view).toMatchObject({ status: 'outcome_unknown', attempts: 1 });

    const replay = await start();
    expect(replay.isError).toBe(true);
    expect(replay.content).toEqual({
      status: 'outcome_unknown',
      operation_id: operationId,
      replayed: true,
      error: view.error,
      next_action: view.next_action,
      attempts: view.attempts,
    });
  });
});
