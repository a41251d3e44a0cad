import { z } from 'zod';
import { IdemError, toIdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { LogFields } from '../core/logger.js';
import { jsonLogger } from '../log/json-logger.js';
import { toLogger, type LoggerOption } from '../log/to-logger.js';
import { advertisedSchema } from './advertised-schema.js';
import { objectSchema, type ArgsOf, type IdemTool, type ToolInput, type ToolShape } from './idem-tool.js';
import { errorContent, idemResultShape, toolResult } from './tool-result.js';
import { ToolCallLog, type ReadOperation } from './tool-call-log.js';
import { validateArguments } from './validate-arguments.js';

/** What a read tool's handler learns about its call besides the principal. */
export interface ReadContext {
  readonly signal?: AbortSignal;
  /** The credential's own fields (see `ToolCallContext.credentials`). */
  readonly credentials?: Readonly<Record<string, unknown>>;
  /**
   * Names the operation this call reports or changes (call it once the caller was found to own
   * it): the call's `idem.call` line then carries its `operation_id` and the `intent` digest of
   * its action, the same as the lines of the calls that started it.
   */
  readonly operation?: (record: ReadOperation) => void;
}

/** A read tool's definition: name, description, input and output, and the handler it answers with. */
export interface ReadToolConfig<Input extends ToolInput> {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  /** The arguments, a zod 4 object or its raw shape; any other field is `invalid_argument`. */
  readonly inputSchema: Input;
  /** Success fields; declared optional in the output schema so that error results fit it too. */
  readonly outputShape: ToolShape;
  /** Default true; false for a tool that changes state but is safe to repeat (e.g. cancel). */
  readonly readOnly?: boolean;
  /**
   * Where the tool's `idem.call` line (one per call, success or error) goes: pass the executor's,
   * `logger: executor.logger`, to log beside the mutating tools. Default: JSON lines on stderr.
   */
  readonly logger?: LoggerOption;
  /** Returns the structured success result or throws an IdemError. */
  handler(args: ArgsOf<Input>, principal: string, context: ReadContext): Promise<JsonObject>;
}

/**
 * A read-only tool with the same result discipline as idempotent tools: validated arguments, coded
 * errors as `isError` results with `structuredContent`, nothing thrown to the server, and one
 * `idem.call` line per call (outcome `ok` or the error's code; never an argument value).
 */
export function readTool<Input extends ToolInput>(config: ReadToolConfig<Input>): IdemTool {
  const logger = config.logger === undefined ? jsonLogger() : toLogger(config.logger);
  const strict = objectSchema(config.inputSchema).strict();
  const outputSchema = z.looseObject({
    ...z.object(config.outputShape).partial().shape,
    status: z.string().optional(),
    error: idemResultShape.error,
    next_action: idemResultShape.next_action,
  });
  return {
    name: config.name,
    ...(config.title === undefined ? {} : { title: config.title }),
    description: config.description,
    inputSchema: advertisedSchema(strict),
    argumentsSchema: strict,
    outputSchema,
    annotations: { readOnlyHint: config.readOnly ?? true, idempotentHint: true },
    async handle(raw, context) {
      const log = new ToolCallLog(logger, config.name, context.principal, context.meta);
      const refuse = (error: IdemError, extra?: LogFields) => {
        log.end({ error, ...(extra === undefined ? {} : { extra }) });
        return toolResult(errorContent(error), true);
      };
      const parsed = validateArguments(strict, raw);
      if (!parsed.ok) return refuse(parsed.error);
      log.workspace((parsed.value as { workspace?: unknown }).workspace);
      if (context.principal === undefined) {
        return refuse(new IdemError('forbidden', 'no authenticated principal'));
      }
      try {
        const read: ReadContext = {
          ...(context.signal === undefined ? {} : { signal: context.signal }),
          ...(context.credentials === undefined ? {} : { credentials: context.credentials }),
          operation: (record) => log.operation(record),
        };
        const result = await config.handler(parsed.value as ArgsOf<Input>, context.principal, read);
        log.end({ outcome: 'ok' });
        return toolResult(result);
      } catch (error) {
        const idemError = toIdemError(error, undefined, context.signal);
        return refuse(idemError, idemError.code === 'internal' ? handlerErrorFields(error) : undefined);
      }
    },
  };
}

/** What an `internal` read failure's line says of it: where, its name, message and stack. */
function handlerErrorFields(error: unknown): LogFields {
  const root = error instanceof IdemError && error.cause !== undefined ? error.cause : error;
  const described = root instanceof Error ? root : new Error(String(root));
  return {
    error_source: 'handler',
    error_name: described.name,
    error_message: described.message,
    error_stack: described.stack,
  };
}
