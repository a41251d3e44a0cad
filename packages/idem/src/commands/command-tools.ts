import { z } from 'zod';
import { IdemError } from '../core/errors.js';
import type { OperationRecord } from '../core/operation-record.js';
import { isActive } from '../core/operation-state.js';
import type { Executor } from '../executor/executor.js';
import type { IdemTool } from '../mcp/idem-tool.js';
import { durableTool } from '../mcp/idempotent-tool.js';
import { humanDuration } from '../mcp/tool-description.js';
import { readTool, type ReadContext } from '../mcp/read-tool.js';
import { outputPaths, readOutput } from './command-output.js';
import { RUN_COMMAND, type CommandHandler } from './command-handler.js';

/** The read tool's name. */
export const READ_COMMAND_OUTPUT = 'read_command_output';

/** Default `limit` of one read_command_output call, bytes. */
export const DEFAULT_READ_LIMIT = 16 * 1024;
/** The largest `limit` one read_command_output call accepts, bytes. */
export const MAX_READ_LIMIT = 256 * 1024;

/** What `commandTools` builds `run_command` and `read_command_output` from. */
export interface CommandToolsOptions<App> {
  readonly executor: Executor<App>;
  /** The handler the worker runs commands with: its commands and output directory are the tools'. */
  readonly handler: CommandHandler;
  /** How long a run_command receipt replays. Default the executor's (24 h). */
  readonly retentionMs?: number;
  /** Stated in run_command's description (see DurableToolConfig). */
  readonly tombstoneRetentionMs?: number;
  /**
   * May `principal` read an operation of `workspace` with these credentials (besides owning it)?
   * Default: yes when the credentials carry no `workspaces` list, else when it holds `workspace`.
   */
  readonly canRead?: (
    principal: string,
    workspace: string,
    credentials: Readonly<Record<string, unknown>> | undefined,
  ) => boolean;
}

/**
 * `run_command` (durable: the call commits the operation and returns its handle, a worker with the
 * same CommandHandler runs the process once per key) and `read_command_output` (read-only, only
 * for the operation's own principal, like get_operation). Only declared names are accepted: any
 * other is `invalid_argument`, and no argv or shell text ever comes from the caller.
 */
export function commandTools<App>(options: CommandToolsOptions<App>): IdemTool[] {
  const { executor, handler } = options;
  const names = [...handler.commands.keys()] as [string, ...string[]];
  const listing = [...handler.commands.values()]
    .map(
      (spec) =>
        `- ${spec.name}${spec.description === '' ? '' : `: ${spec.description}`} (timeout ${humanDuration(spec.timeoutMs)}${spec.rerunnable ? ', rerunnable' : ''})`,
    )
    .join('\n');

  const runCommand = durableTool(executor, {
    name: RUN_COMMAND,
    version: 1,
    title: 'Run a named command',
    description:
      `Runs one of the server's named commands once per idempotency_key. Returns at once with status "accepted" and an operation_id; ` +
      `follow it with get_operation (once finished it shows exit_code, duration_ms, output_bytes, output_sha256 and last_lines), ` +
      `read what it prints with read_command_output, and stop it with cancel_operation. A non-zero exit is "failed" and is not retried. ` +
      `If the server dies while it runs, the operation ends "outcome_unknown" and the command is not run again unless it is rerunnable. ` +
      `Commands:\n${listing}`,
    inputSchema: {
      command: z.enum(names).describe('The name of the command to run (one of those listed).'),
    },
    policy: handler.policy,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
    ...(options.tombstoneRetentionMs === undefined
      ? {}
      : { tombstoneRetentionMs: options.tombstoneRetentionMs }),
  });

  const canRead =
    options.canRead ??
    ((_principal: string, workspace: string, credentials: Readonly<Record<string, unknown>> | undefined) => {
      const granted = credentials?.workspaces;
      return !Array.isArray(granted) || granted.includes(workspace);
    });

  /** The caller's own command operation; anything else answers exactly like an unknown id. */
  const ownCommand = async (operationId: string, principal: string, read: ReadContext) => {
    const record: OperationRecord | undefined = await executor.store.ledger.get(operationId, read);
    if (
      record === undefined ||
      record.identity.principal !== principal ||
      !canRead(principal, record.identity.workspace, read.credentials)
    ) {
      throw new IdemError('not_found', 'no such operation');
    }
    if (record.identity.operation !== RUN_COMMAND)
      throw new IdemError('invalid_argument', `operation ${operationId} is not a ${RUN_COMMAND} operation`);
    read.operation?.(record);
    return record;
  };

  const readCommandOutput = readTool({
    logger: executor.logger,
    name: READ_COMMAND_OUTPUT,
    title: 'Read a command run’s output',
    description:
      `Returns what a run_command operation of yours printed (stdout and stderr, merged in arrival order, captured through pipes), ` +
      `from a byte offset: pass next_offset back to continue. finished says whether the operation has ended; output_bytes is everything printed so far. ` +
      `The server keeps a bounded head and tail of each run's output: an offset in the dropped middle skips ahead (skipped_bytes). Reading never changes anything.`,
    inputSchema: {
      operation_id: z.string().min(1).max(200),
      offset: z
        .number()
        .int()
        .min(0)
        .max(Number.MAX_SAFE_INTEGER)
        .default(0)
        .describe('Byte offset to read from (default 0).'),
      limit: z
        .number()
        .int()
        .min(1)
        .max(MAX_READ_LIMIT)
        .default(DEFAULT_READ_LIMIT)
        .describe(`Most bytes to return (default ${DEFAULT_READ_LIMIT}, at most ${MAX_READ_LIMIT}).`),
    },
    outputShape: {
      operation_id: z.string(),
      command: z.string(),
      finished: z.boolean(),
      offset: z.number(),
      next_offset: z.number(),
      output: z.string(),
      output_bytes: z.number(),
      skipped_bytes: z.number(),
      started: z.boolean(),
    },
    handler: async (args, principal, read) => {
      const record = await ownCommand(args.operation_id, principal, read);
      const command = typeof record.args?.command === 'string' ? record.args.command : '';
      const finished = !isActive(record.status);
      const got = readOutput(outputPaths(handler.outputDir, record.operationId).out, args.offset, args.limit);
      const status = record.status;
      if (got === undefined) {
        return {
          status,
          operation_id: record.operationId,
          command,
          finished,
          started: false,
          offset: args.offset,
          next_offset: args.offset,
          output: '',
          output_bytes: 0,
          skipped_bytes: 0,
        };
      }
      return {
        status,
        operation_id: record.operationId,
        command,
        finished,
        started: true,
        offset: got.offset,
        next_offset: got.nextOffset,
        output: got.text,
        output_bytes: got.totalBytes,
        skipped_bytes: got.skippedBytes,
      };
    },
  });

  return [runCommand, readCommandOutput];
}
