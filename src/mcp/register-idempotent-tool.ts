import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z, type ZodRawShape } from 'zod';
import { IdemError } from '../core/errors.js';
import { MAX_KEY_LENGTH } from '../core/idempotency-key.js';
import type { JsonObject } from '../core/json.js';
import {
  DEFAULT_RETENTION_MS,
  Executor,
  type CallOutcome,
  type CallRequest,
  type DurableOperation,
  type IdempotentOperation,
} from '../executor/executor.js';
import type { RetryPolicy } from '../core/retry-policy.js';
import type { EffectContext, EffectResult } from '../store/store.js';
import { lenientObject } from './lenient-object.js';
import { principalOf, type RequestExtra } from './principal.js';
import { idemResultSchema, outcomeResult, toolResult, errorContent } from './tool-result.js';
import { idempotencyInstructions } from './tool-description.js';
import { validateArguments } from './validate-arguments.js';

export const workspaceField = z
  .string()
  .min(1)
  .max(128)
  .describe('The workspace to act in. It must be one that your credentials hold.');

export const idempotencyKeyField = z
  .string()
  .min(1)
  .max(MAX_KEY_LENGTH)
  .regex(/^[\x20-\x7e]+$/, 'must contain only printable ASCII characters')
  .describe('A key you generate once per intended action and reuse on every retry of that action.');

type ToolArgs<Shape extends ZodRawShape> = z.objectOutputType<Shape, z.ZodTypeAny> & { workspace: string };

export interface IdempotentToolConfig<App, Shape extends ZodRawShape> {
  /** The MCP tool name and the operation name in the identity. */
  readonly name: string;
  /** Part of the identity; bump it when the meaning of the arguments or the effect changes. */
  readonly version: number;
  readonly title?: string;
  /** What the tool does; Idem appends the retry contract. */
  readonly description: string;
  /** The business arguments. Idem adds `workspace` and `idempotency_key`. */
  readonly inputSchema: Shape;
  /** How long a receipt replays. Default 24 hours. */
  readonly retentionMs?: number;
  /** Runs inside the store's transaction with the application handle (synchronously on SQLite). */
  effect(app: App, args: ToolArgs<Shape>, context: EffectContext): EffectResult | Promise<EffectResult>;
}

/** A long-running tool: accepted at once with a handle, executed by a worker. */
export interface DurableToolConfig<Shape extends ZodRawShape> {
  readonly name: string;
  readonly version: number;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: Shape;
  readonly retentionMs?: number;
  /** Total deadline and retry policy of the worker's attempts. */
  readonly policy?: RetryPolicy;
}

/**
 * Registers a mutating tool that keeps the retry contract. Every result, success or error, is a
 * CallToolResult built here with `structuredContent` that fits the declared output schema; nothing
 * is thrown to McpServer, which would flatten it into uncoded text.
 */
export function registerIdempotentTool<App, Shape extends ZodRawShape>(
  server: McpServer,
  executor: Executor<App>,
  config: IdempotentToolConfig<App, Shape>,
): RegisteredTool {
  const operation: IdempotentOperation<App, ToolArgs<Shape>> = {
    name: config.name,
    version: config.version,
    retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
    effect: (app, args, context) => config.effect(app, args, context),
  };
  return register(server, executor, config, (request) => executor.run(operation, request));
}

/**
 * Registers a long-running tool: the first call commits the operation as `accepted` and returns its
 * handle; a worker executes it; a retry with the same key waits within the bound, then reports it.
 */
export function registerDurableTool<App, Shape extends ZodRawShape>(
  server: McpServer,
  executor: Executor<App>,
  config: DurableToolConfig<Shape>,
): RegisteredTool {
  const operation: DurableOperation = {
    name: config.name,
    version: config.version,
    retentionMs: config.retentionMs ?? DEFAULT_RETENTION_MS,
    ...(config.policy === undefined ? {} : { policy: config.policy }),
  };
  return register(server, executor, config, (request) => executor.start(operation, request));
}

function register<App, Shape extends ZodRawShape>(
  server: McpServer,
  executor: Executor<App>,
  config: Pick<
    IdempotentToolConfig<App, Shape>,
    'name' | 'version' | 'title' | 'description' | 'inputSchema' | 'retentionMs'
  >,
  perform: (request: CallRequest<ToolArgs<Shape>>) => Promise<CallOutcome>,
): RegisteredTool {
  Executor.validate(config);
  const retentionMs = config.retentionMs ?? DEFAULT_RETENTION_MS;
  const fullShape = {
    ...config.inputSchema,
    workspace: workspaceField,
    idempotency_key: idempotencyKeyField,
  };
  const strict = z.object(fullShape).strict();
  return server.registerTool(
    config.name,
    {
      ...(config.title === undefined ? {} : { title: config.title }),
      description: `${config.description}\n\n${idempotencyInstructions(retentionMs)}`,
      inputSchema: lenientObject(fullShape),
      outputSchema: idemResultSchema,
      annotations: { idempotentHint: true, readOnlyHint: false, destructiveHint: false },
    },
    async (raw: unknown, extra: RequestExtra) => {
      const parsed = validateArguments(strict, raw);
      if (!parsed.ok) return toolResult(errorContent(parsed.error), true);
      const principal = principalOf(extra);
      if (principal === undefined) {
        return toolResult(errorContent(new IdemError('forbidden', 'no authenticated principal')), true);
      }
      const { idempotency_key: key, ...args } = parsed.value as ToolArgs<Shape> & {
        idempotency_key: string;
      };
      const outcome = await perform({
        principal,
        ...(extra.authInfo?.extra === undefined ? {} : { credentials: extra.authInfo.extra }),
        workspace: args.workspace,
        key,
        args: args as ToolArgs<Shape>,
        signal: extra.signal,
      });
      const result = outcomeResult(outcome);
      executor.faults.hit('before_reply');
      return result;
    },
  );
}

export type { JsonObject };
