import { z } from 'zod';
import { IdemError, toIdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { advertisedSchema } from './advertised-schema.js';
import { objectSchema, type ArgsOf, type IdemTool, type ToolInput, type ToolShape } from './idem-tool.js';
import { errorContent, idemResultShape, toolResult } from './tool-result.js';
import { validateArguments } from './validate-arguments.js';

/** What a read tool's handler learns about its call besides the principal. */
export interface ReadContext {
  readonly signal?: AbortSignal;
  /** The credential's own fields (see `ToolCallContext.credentials`). */
  readonly credentials?: Readonly<Record<string, unknown>>;
}

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
  /** Returns the structured success result or throws an IdemError. */
  handler(args: ArgsOf<Input>, principal: string, context: ReadContext): Promise<JsonObject>;
}

/**
 * A read-only tool with the same result discipline as idempotent tools: validated arguments, coded
 * errors as `isError` results with `structuredContent`, nothing thrown to the server.
 */
export function readTool<Input extends ToolInput>(config: ReadToolConfig<Input>): IdemTool {
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
      const parsed = validateArguments(strict, raw);
      if (!parsed.ok) return toolResult(errorContent(parsed.error), true);
      if (context.principal === undefined) {
        return toolResult(errorContent(new IdemError('forbidden', 'no authenticated principal')), true);
      }
      try {
        const read: ReadContext = {
          ...(context.signal === undefined ? {} : { signal: context.signal }),
          ...(context.credentials === undefined ? {} : { credentials: context.credentials }),
        };
        return toolResult(await config.handler(parsed.value as ArgsOf<Input>, context.principal, read));
      } catch (error) {
        return toolResult(errorContent(toIdemError(error, undefined, context.signal)), true);
      }
    },
  };
}
