import { z } from 'zod';
import { systemClock, type Clock } from '../core/clock.js';
import { IdemError } from '../core/errors.js';
import type { Executor, Authorize } from '../executor/executor.js';
import { requestCancel } from '../operations/ledger-transitions.js';
import { DEFAULT_OPERATOR_HINT, DEFAULT_STATUS_TOOL } from './follow-up.js';
import type { IdemTool } from './idem-tool.js';
import { operationView } from './operation-view.js';
import { readTool, type ReadContext } from './read-tool.js';

/** The cancel tool's name unless `OperationToolsOptions.cancelTool` says otherwise. */
export const DEFAULT_CANCEL_TOOL = 'cancel_operation';

/** How `operationTools` (and `registerOperationTools`) name and guard the two tools. */
export interface OperationToolsOptions {
  /** The status tool's name. Default `get_operation` (what durable tools name by default). */
  readonly statusTool?: string;
  /** The cancel tool's name. Default `cancel_operation`. */
  readonly cancelTool?: string;
  /**
   * How operators settle an unknown outcome, as `next_action` says it. Default `idem ops resolve`;
   * an empty string leaves it out.
   */
  readonly operatorHint?: string;
  /**
   * A check beyond ownership, on the operation's workspace with the call's credentials (e.g.
   * `authorizeByGrant`: the request's own token must still hold the workspace); false answers
   * `forbidden`. Default: none, the caller owning the operation is enough.
   */
  readonly authorize?: Authorize;
  /** The clock a cancel request is stamped with. Default the system clock. */
  readonly clock?: Clock;
}

/** The two tools, by role. */
export interface OperationTools {
  readonly statusTool: IdemTool;
  readonly cancelTool: IdemTool;
}

const operationShape = {
  operation_id: z.string(),
  operation: z.string(),
  version: z.number(),
  workspace: z.string(),
  attempts: z.number(),
  resource_id: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  expires_at: z.string(),
  result: z.record(z.string(), z.unknown()),
  resolved_by: z.string(),
  resolved_at: z.string(),
};

const operationIdField = z.string().min(1).max(200);

/**
 * The status and cancel tools that durable tools (and uncertain outcomes of any tool) send the
 * caller to, SDK-free. Promises:
 * - owner only: an operation is shown or cancelled only for the principal that started it; any
 *   other caller gets `not_found`, exactly the answer an unknown id gets (nothing is revealed);
 *   then `authorize`, if given, must allow the operation's workspace, else `forbidden`;
 * - every answer, success or error, fits the tool's output schema (errors carry `error.code`,
 *   `error.retryable` and `next_action`), so an MCP client validating `structuredContent` accepts it;
 * - the status tool reports the state (accepted, running, succeeded, failed, cancel_requested,
 *   cancelled, outcome_unknown), the result once succeeded, and a `next_action` naming `statusTool`;
 * - the cancel tool records a cancel request (`cancel`: `requested`, `already_requested` or
 *   `already_final`); the operation becomes `cancelled` only once the worker establishes that
 *   nothing was or will be done, and a success stays a success.
 */
export function operationTools<App>(
  executor: Executor<App>,
  options: OperationToolsOptions = {},
): OperationTools {
  const statusName = options.statusTool ?? DEFAULT_STATUS_TOOL;
  const cancelName = options.cancelTool ?? DEFAULT_CANCEL_TOOL;
  const clock = options.clock ?? systemClock;
  const names = { statusTool: statusName, operatorHint: options.operatorHint ?? DEFAULT_OPERATOR_HINT };
  const ledger = executor.store.ledger;

  /** The caller's own operation; another principal's gets exactly the answer an unknown id gets. */
  const ownOperation = async (operationId: string, principal: string, read: ReadContext) => {
    const record = await ledger.get(operationId, read);
    if (record === undefined || record.identity.principal !== principal) {
      throw new IdemError('not_found', 'no such operation');
    }
    if (options.authorize !== undefined) {
      const allowed = await options.authorize(principal, record.identity.workspace, {
        operation: record.identity.operation,
        ...(read.credentials === undefined ? {} : { credentials: read.credentials }),
      });
      if (!allowed) {
        throw new IdemError(
          'forbidden',
          `principal may not act in workspace ${JSON.stringify(record.identity.workspace)}`,
        );
      }
    }
    read.operation?.(record);
    return record;
  };

  const statusTool = readTool({
    logger: executor.logger,
    name: statusName,
    description:
      'Reports what became of one of your operations, by the operation_id from an earlier result: its status (accepted, running, succeeded, failed, cancel_requested, cancelled, outcome_unknown), its result when done, and what to do next. Use it when an outcome is uncertain.',
    inputSchema: { operation_id: operationIdField },
    outputShape: operationShape,
    handler: async (args, principal, read) =>
      operationView(await ownOperation(args.operation_id, principal, read), names),
  });

  const cancelTool = readTool({
    logger: executor.logger,
    name: cancelName,
    description: `Asks to cancel one of your operations. It becomes "cancelled" only once it is established that nothing was or will be done; if the work already succeeded, it stays succeeded. Call ${statusName} to see the final state.`,
    inputSchema: { operation_id: operationIdField },
    outputShape: { ...operationShape, cancel: z.enum(['requested', 'already_requested', 'already_final']) },
    readOnly: false,
    handler: async (args, principal, read) => {
      const before = await ownOperation(args.operation_id, principal, read);
      const after = await requestCancel(ledger, args.operation_id, clock.now(), read);
      const record = after ?? before;
      const cancel =
        before.status === 'cancel_requested'
          ? 'already_requested'
          : record.status === 'cancel_requested'
            ? 'requested'
            : 'already_final';
      return { ...operationView(record, names), cancel };
    },
  });

  return { statusTool, cancelTool };
}
