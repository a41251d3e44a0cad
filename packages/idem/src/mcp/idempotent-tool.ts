import { z } from 'zod';
import { IdemError } from '../core/errors.js';
import {
  fingerprintCoverage,
  validateFingerprintSelection,
  type FingerprintSelection,
} from '../core/fingerprint-selection.js';
import { MAX_KEY_LENGTH } from '../core/idempotency-key.js';
import { operationLabel } from '../core/operation-identity.js';
import { retryPolicy, type RetryPolicy } from '../core/retry-policy.js';
import {
  DEFAULT_RETENTION_MS,
  Executor,
  type CallOutcome,
  type CallRequest,
  type DurableOperation,
  type IdempotentOperation,
} from '../executor/executor.js';
import type { EffectContext, EffectResult } from '../executor/effect.js';
import { advertisedSchema } from './advertised-schema.js';
import { objectSchema, type ArgsOf, type IdemTool, type ToolInput } from './idem-tool.js';
import { DEFAULT_STATUS_TOOL, type FollowUpNames } from './follow-up.js';
import { idempotencyInstructions } from './tool-description.js';
import { errorContent, idemResultSchema, outcomeResult, toolResult } from './tool-result.js';
import { exactOutputSchema, resultCheck, validateResultSchema } from './result-schema.js';
import { ToolCallLog } from './tool-call-log.js';
import { toolDeclaration, toolDeclarer } from './tool-declaration.js';
import { validateArguments } from './validate-arguments.js';

/** The `workspace` argument every Idem tool declares: 1 to 128 characters, held by the caller's credentials. */
export const workspaceField = z
  .string()
  .min(1)
  .max(128)
  .describe('The workspace to act in. It must be one that your credentials hold.');

/** The `Mcp-Param-*` name the key travels under at MCP 2026-07-28: `Mcp-Param-Idempotency-Key`. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/**
 * The `idempotency_key` argument every mutating Idem tool declares: 1 to 255 printable ASCII
 * characters. Marked `x-mcp-header` (SEP-2243): at 2026-07-28 a client mirrors it into the
 * `Mcp-Param-Idempotency-Key` header (gateways and logs see the key without reading bodies), and the
 * SDK's handler refuses a call whose header is missing or disagrees with the body (-32020, HTTP 400,
 * before the tool runs). The 2025 revisions ignore the mark.
 */
export const idempotencyKeyField = z
  .string()
  .min(1)
  .max(MAX_KEY_LENGTH)
  .regex(/^[\x20-\x7e]+$/, 'must contain only printable ASCII characters')
  .describe('A key you generate once per intended action and reuse on every retry of that action.')
  .meta({ 'x-mcp-header': IDEMPOTENCY_KEY_HEADER });

/** The arguments an effect receives: the business fields plus `workspace` (never the key). */
export type ToolArgs<Input extends ToolInput> = ArgsOf<Input> & { workspace: string };

interface ToolDefinition<Input extends ToolInput> {
  /** The MCP tool name and the operation name in the identity. */
  readonly name: string;
  /** Part of the identity; bump it when the meaning of the arguments or the effect changes. */
  readonly version: number;
  /**
   * Older versions of this tool whose keys this version still answers from their stored results
   * (replayed under their own contract, never executed again). A key of an unlisted older version
   * is refused `version_conflict`. Default none.
   */
  readonly replaysVersions?: readonly number[];
  readonly title?: string;
  /** What the tool does; Idem appends the retry contract. */
  readonly description: string;
  /**
   * The business arguments, a zod 4 object (`z.object({ title: z.string() })`) or its raw shape.
   * Idem adds `workspace` and `idempotency_key` and rejects any other field.
   */
  readonly inputSchema: Input;
  /** How long a receipt replays. Default 24 hours. */
  readonly retentionMs?: number;
  /**
   * The top-level fields of `inputSchema` that a retry must repeat exactly (`include`), or those it
   * may change (`exclude`), e.g. `{ exclude: ['note'] }` for a free-text field a model rephrases.
   * Default every argument; `workspace` is always covered. A retry that differs only in an uncovered
   * field gets the first call's result back (`replayed: true`; the change is not applied). The
   * description names the fields to repeat. Changing it changes what old keys mean: bump `version`.
   */
  readonly fingerprint?: FingerprintSelection;
  /**
   * How long an expired key stays refused (the tombstone window your sweeper keeps), stated in the
   * description; omitted, it says "the server's tombstone retention".
   */
  readonly tombstoneRetentionMs?: number;
  /**
   * The read tool that reports an operation by `operation_id`, named in the description and in the
   * `next_action` of unfinished and uncertain results. Default `get_operation`.
   */
  readonly statusTool?: string;
  /**
   * How your operators settle an operation whose outcome is unknown, named in parentheses in that
   * result's `next_action`. Default `idem ops resolve`; an empty string leaves it out.
   */
  readonly operatorHint?: string;
  /**
   * The business fields the tool's result carries beside `resource_id`, as a zod object
   * (`z.object({ ticket_id: z.string() })`). With it the advertised output schema is exact: Idem's
   * own fields plus these, no other key, the declared ones optional so that error answers fit too.
   * An idempotent tool's effect result is checked against it (strictly, as written) inside the
   * transaction: a mismatch commits nothing and answers `internal` naming the field. A durable tool
   * only advertises it (its worker's handler makes the result). Without it the output schema lets
   * any business field through. Declaring it, or changing it, does not change old receipts: a
   * version listed in `replaysVersions` must have returned fields that fit it.
   */
  readonly resultSchema?: z.ZodObject;
}

/** An idempotent tool's definition (name, version, input, ...) and the effect it commits once per key. */
export interface IdempotentToolConfig<App, Input extends ToolInput> extends ToolDefinition<Input> {
  /** Runs inside the store's transaction with the application handle (synchronously on SQLite). */
  effect(app: App, args: ToolArgs<Input>, context: EffectContext): EffectResult | Promise<EffectResult>;
}

/** A long-running tool: accepted at once with a handle, executed by a worker. */
export interface DurableToolConfig<Input extends ToolInput> extends ToolDefinition<Input> {
  /**
   * Total deadline and retry policy of the worker's attempts: any of `RetryPolicy`'s fields, the
   * others `DEFAULT_RETRY_POLICY`'s. Checked when the tool is made (RangeError).
   */
  readonly policy?: Partial<RetryPolicy>;
}

/**
 * A mutating tool that keeps the retry contract, independent of any MCP SDK: register it with
 * `registerIdemTool` (`idem/mcp`, `idem/mcp-v1`) or call its `handle` from any framework.
 */
export function idempotentTool<App, Input extends ToolInput>(
  executor: Executor<App>,
  config: IdempotentToolConfig<App, Input>,
): IdemTool {
  if (config.resultSchema !== undefined) validateResultSchema(config.name, config.resultSchema);
  const operation: IdempotentOperation<App, ToolArgs<Input>> = {
    name: config.name,
    version: config.version,
    retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
    ...(config.replaysVersions === undefined ? {} : { replaysVersions: config.replaysVersions }),
    ...(config.fingerprint === undefined ? {} : { fingerprint: config.fingerprint }),
    effect: (app, args, context) => config.effect(app, args, context),
    ...(config.resultSchema === undefined
      ? {}
      : { checkResult: resultCheck(config.name, config.resultSchema) }),
  };
  return mutatingTool(executor, config, (request) => executor.run(operation, request));
}

/**
 * A long-running tool: the first call commits the operation as `accepted` and returns its handle;
 * a worker executes it; a retry with the same key waits within the bound, then reports it.
 */
export function durableTool<App, Input extends ToolInput>(
  executor: Executor<App>,
  config: DurableToolConfig<Input>,
): IdemTool {
  const operation: DurableOperation = {
    name: config.name,
    version: config.version,
    retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
    ...(config.replaysVersions === undefined ? {} : { replaysVersions: config.replaysVersions }),
    ...(config.fingerprint === undefined ? {} : { fingerprint: config.fingerprint }),
    ...(config.policy === undefined ? {} : { policy: retryPolicy(config.policy) }),
  };
  if (config.resultSchema !== undefined) validateResultSchema(config.name, config.resultSchema);
  // Stored before the first operation is accepted: `idem ops resolve` and the console, in other
  // processes, check an operator's result fields against it.
  const declarer = toolDeclarer(
    executor.store.tools,
    () => toolDeclaration(config.name, config.version, config.resultSchema, executor.clock.now()),
    executor.logger,
  );
  return mutatingTool(executor, config, async (request) => {
    await declarer.ready();
    return executor.start(operation, request);
  });
}

function mutatingTool<App, Input extends ToolInput>(
  executor: Executor<App>,
  config: ToolDefinition<Input>,
  perform: (request: CallRequest<ToolArgs<Input>>) => Promise<CallOutcome>,
): IdemTool {
  Executor.validate(config);
  if (config.resultSchema !== undefined) validateResultSchema(config.name, config.resultSchema);
  const business = objectSchema(config.inputSchema);
  const fields = ['workspace', ...Object.keys(business.shape).filter((field) => field !== 'workspace')];
  validateFingerprintSelection(config.fingerprint, fields);
  const retentionMs = config.retentionMs ?? DEFAULT_RETENTION_MS;
  const label = operationLabel({ operation: config.name, version: config.version });
  const names: FollowUpNames = {
    ...(config.statusTool === undefined ? {} : { statusTool: config.statusTool }),
    ...(config.operatorHint === undefined ? {} : { operatorHint: config.operatorHint }),
  };
  // safeExtend keeps the caller's object-level refinements; strict rejects any other field.
  const strict = business
    .safeExtend({ workspace: workspaceField, idempotency_key: idempotencyKeyField })
    .strict();
  return {
    name: config.name,
    ...(config.title === undefined ? {} : { title: config.title }),
    description: `${config.description}\n\n${idempotencyInstructions(retentionMs, config.statusTool ?? DEFAULT_STATUS_TOOL, config.tombstoneRetentionMs, fingerprintCoverage(fields, config.fingerprint))}`,
    inputSchema: advertisedSchema(strict),
    argumentsSchema: strict,
    outputSchema:
      config.resultSchema === undefined ? idemResultSchema : exactOutputSchema(config.resultSchema),
    annotations: { idempotentHint: true, readOnlyHint: false, destructiveHint: false },
    async handle(raw, context) {
      // A call the executor never sees still logs its one `idem.call` line; the executor logs the rest.
      const refuse = (error: IdemError) => {
        const log = new ToolCallLog(executor.logger, label, context.principal, context.meta);
        const fields = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>) : {};
        if (workspaceField.safeParse(fields.workspace).success) log.workspace(fields.workspace);
        log.intent(fields.workspace, config.name, fields.idempotency_key);
        log.end({ error });
        return toolResult(errorContent(error), true);
      };
      const parsed = validateArguments(strict, raw);
      if (!parsed.ok) return refuse(parsed.error);
      if (context.principal === undefined) {
        return refuse(new IdemError('forbidden', 'no authenticated principal'));
      }
      const { idempotency_key: key, ...args } = parsed.value as ToolArgs<Input> & {
        idempotency_key: string;
      };
      const outcome = await perform({
        principal: context.principal,
        ...(context.credentials === undefined ? {} : { credentials: context.credentials }),
        workspace: args.workspace,
        key,
        args: args as ToolArgs<Input>,
        ...(context.signal === undefined ? {} : { signal: context.signal }),
        ...(context.meta === undefined ? {} : { traceContext: context.meta }),
      });
      const result = outcomeResult(outcome, names);
      executor.faults.hit('before_reply');
      return result;
    },
  };
}
