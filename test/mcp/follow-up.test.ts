import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqlite } from '../../packages/idem/src/adapters/sqlite/open-sqlite.js';
import type { SqliteDatabase } from '../../packages/idem/src/adapters/sqlite/sqlite-database.js';
import { SqliteStore } from '../../packages/idem/src/adapters/sqlite/sqlite-store.js';
import { IdemError, NEXT_STEPS } from '../../packages/idem/src/core/errors.js';
import type { OperationRecord } from '../../packages/idem/src/core/operation-record.js';
import type { OperationState } from '../../packages/idem/src/core/operation-state.js';
import { outcomeOf } from '../../packages/idem/src/executor/call-outcome.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { followUpText, nextActionOf } from '../../packages/idem/src/mcp/follow-up.js';
import { durableTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { outcomeResult } from '../../packages/idem/src/mcp/tool-result.js';
import { operationView } from '../../packages/idem/src/mcp/operation-view.js';
import { cleanup, makeTempDir } from '../helpers/mcp-fixtures.js';

const OP = 'op_0123456789abcdef0123456789abcdef';

// The sentences as the executor wrote them before they moved to the MCP layer, byte for byte.
const FOLLOW = `Call get_operation with operation_id ${OP} to see its state; retrying with the same idempotency_key and arguments is also safe.`;
const SETTLE = `An operator must check whether the action took effect and settle operation ${OP} (idem ops resolve).`;
const NEW_KEY = 'Nothing was done. Use a new idempotency_key to try again.';

function record(status: OperationState, error?: OperationRecord['error']): OperationRecord {
  return {
    operationId: OP,
    identity: { principal: 'p', workspace: 'w', operation: 'deploy', version: 1, key: 'k' },
    fingerprint: 'f',
    kind: 'durable',
    status,
    createdAt: 1,
    updatedAt: 2,
    attemptCount: 1,
    dispatched: status === 'outcome_unknown',
    ...(error === undefined ? {} : { error }),
  };
}

const wire = (status: OperationState, replayed: boolean, names?: Parameters<typeof outcomeResult>[1]) =>
  outcomeResult(
    outcomeOf(record(status, status === 'outcome_unknown' ? unknownError : undefined), replayed, 'a'),
    names,
  ).structuredContent;
const unknownError = { code: 'outcome_unknown', message: 'the provider did not answer' };

describe('follow-up texts: facts from the executor, words from the MCP layer', () => {
  it('the executor states next steps and names no tool and no command', () => {
    for (const status of ['accepted', 'running', 'cancelled', 'outcome_unknown'] as const) {
      for (const replayed of [false, true]) {
        const outcome = outcomeOf(record(status, unknownError), replayed, 'a');
        const text = JSON.stringify(
          outcome.ok ? outcome.result : { ...outcome.error, m: outcome.error.message },
        );
        expect(text, status).not.toMatch(/get_operation|idem ops|next_action/);
      }
    }
    expect(outcomeOf(record('accepted'), false, 'a')).toMatchObject({
      ok: true,
      nextStep: 'follow_operation',
    });
    expect(outcomeOf(record('cancelled'), true, 'a')).toMatchObject({ ok: true, nextStep: 'new_key' });
    const running = outcomeOf(record('running'), true, 'a');
    expect(running.ok ? undefined : running.error).toMatchObject({
      code: 'in_progress',
      operationId: OP,
      nextStep: 'follow_operation',
      nextAction: undefined,
    });
    const unknown = outcomeOf(record('outcome_unknown', unknownError), true, 'a');
    expect(unknown.ok ? undefined : unknown.error).toMatchObject({
      code: 'outcome_unknown',
      nextStep: 'operator_settles',
      nextAction: undefined,
    });
  });

  it('by default the wire carries the same sentences as before, byte for byte', () => {
    expect(wire('accepted', false)).toEqual({
      status: 'accepted',
      operation_id: OP,
      next_action: FOLLOW,
      replayed: false,
    });
    expect(JSON.stringify(wire('accepted', false))).toBe(
      `{"status":"accepted","operation_id":"${OP}","next_action":"${FOLLOW}","replayed":false}`,
    );
    expect(wire('cancelled', true)).toEqual({
      status: 'cancelled',
      operation_id: OP,
      next_action: NEW_KEY,
      replayed: true,
    });
    expect(wire('running', true)).toMatchObject({ status: 'running', operation_id: OP, next_action: FOLLOW });
    expect(wire('accepted', true)).toMatchObject({ status: 'running', next_action: FOLLOW });
    expect(wire('outcome_unknown', true)).toMatchObject({ status: 'outcome_unknown', next_action: SETTLE });
    expect(operationView(record('running'))).toMatchObject({ next_action: FOLLOW });
    expect(operationView(record('outcome_unknown', unknownError))).toMatchObject({ next_action: SETTLE });
  });

  it('words the steps with the configured status tool and operator hint', () => {
    const names = { statusTool: 'job_status', operatorHint: 'see the runbook' };
    expect(wire('accepted', false, names).next_action).toBe(FOLLOW.replace('get_operation', 'job_status'));
    expect(wire('running', true, names).next_action).toBe(FOLLOW.replace('get_operation', 'job_status'));
    expect(wire('outcome_unknown', true, names).next_action).toBe(
      SETTLE.replace('idem ops resolve', 'see the runbook'),
    );
    expect(wire('outcome_unknown', true, { operatorHint: '' }).next_action).toBe(
      `An operator must check whether the action took effect and settle operation ${OP}.`,
    );
    expect(NEXT_STEPS.map((step) => followUpText(step, OP, names))).toEqual([
      FOLLOW.replace('get_operation', 'job_status'),
      SETTLE.replace('idem ops resolve', 'see the runbook'),
      NEW_KEY,
      `Call job_status with operation_id ${OP} to see what happened to the original action. For a new action, generate a new idempotency_key.`,
    ]);
  });

  it("keeps an error's own sentence (a durable handler's) over its next step", () => {
    const own = outcomeOf(
      record('outcome_unknown', { ...unknownError, nextAction: 'Look for deploy k.' }),
      true,
      'a',
    );
    expect(own.ok ? undefined : nextActionOf(own.error, { operatorHint: 'x' })).toBe('Look for deploy k.');
    expect(nextActionOf(new IdemError('in_progress', 'x', { nextStep: 'follow_operation' }))).toBeUndefined();
  });
});

describe('durableTool with statusTool and operatorHint', () => {
  const databases: SqliteDatabase[] = [];
  afterEach(async () => {
    for (const db of databases.splice(0)) db.close();
    await cleanup();
  });

  function deployTool(names: { statusTool?: string; operatorHint?: string }) {
    const db = openSqlite(join(makeTempDir('idem-follow-up-'), 'db.sqlite'));
    databases.push(db);
    const executor = new Executor({ store: new SqliteStore(db), authorize: () => true, inFlightWaitMs: 0 });
    return durableTool(executor, {
      name: 'deploy',
      version: 1,
      description: 'Deploys.',
      inputSchema: { service: z.string() },
      ...names,
    });
  }

  it('names the configured status tool in its description and its results', async () => {
    const tool = deployTool({ statusTool: 'job_status' });
    expect(tool.description).toContain('or call job_status with the operation_id from an earlier result.');
    expect(tool.description).not.toContain('get_operation');
    const call = { idempotency_key: 'k', workspace: 'w', service: 'api' };
    const first = (await tool.handle(call, { principal: 'p' })).structuredContent;
    const id = String(first.operation_id);
    const expected = `Call job_status with operation_id ${id} to see its state; retrying with the same idempotency_key and arguments is also safe.`;
    expect(first).toEqual({ status: 'accepted', operation_id: id, next_action: expected, replayed: false });
    const retry = await tool.handle(call, { principal: 'p' });
    expect(retry).toMatchObject({
      isError: true,
      structuredContent: {
        status: 'running',
        error: { code: 'in_progress' },
        operation_id: id,
        next_action: expected,
      },
    });
  });

  it('says get_operation by default', async () => {
    const tool = deployTool({});
    expect(tool.description).toContain('or call get_operation with the operation_id');
    const first = (
      await tool.handle({ idempotency_key: 'k', workspace: 'w', service: 'api' }, { principal: 'p' })
    ).structuredContent;
    expect(first.next_action).toBe(FOLLOW.replace(OP, String(first.operation_id)));
  });
});
