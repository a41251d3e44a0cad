import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z, type ZodRawShape } from 'zod';
import { toIdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { lenientObject } from './lenient-object.js';
import { principalOf, type RequestExtra } from './principal.js';
import { errorContent, idemResultShape, toolResult } from './tool-result.js';
import { validateArguments } from './validate-arguments.js';
import { IdemError } from '../core/errors.js';

export interface ReadToolConfig<Shape extends ZodRawShape> {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: Shape;
  /** Success fields; declared optional in the output schema so that error results fit it too. */
  readonly outputShape: ZodRawShape;
  /** Default true; false for a tool that changes state but is safe to repeat (e.g. cancel). */
  readonly readOnly?: boolean;
  /** Returns the structured success result or throws an IdemError. */
  handler(
    args: z.objectOutputType<Shape, z.ZodTypeAny>,
    principal: string,
    extra: RequestExtra,
  ): Promise<JsonObject>;
}

/**
 * Registers a read-only tool with the same result discipline as idempotent tools: validated
 * arguments, coded errors as `isError` results with `structuredContent`, nothing thrown to McpServer.
 */
export function registerReadTool<Shape extends ZodRawShape>(
  server: McpServer,
  config: ReadToolConfig<Shape>,
): RegisteredTool {
  const strict = z.object(config.inputSchema).strict();
  const errorFields = {
    status: idemResultShape.status,
    error: idemResultShape.error,
    next_action: idemResultShape.next_action,
  };
  const outputShape = {
    ...z.object(config.outputShape).partial().shape,
    ...errorFields,
    status: z.string().optional(),
  };
  return server.registerTool(
    config.name,
    {
      ...(config.title === undefined ? {} : { title: config.title }),
      description: config.description,
      inputSchema: lenientObject(config.inputSchema),
      outputSchema: z.object(outputShape).passthrough(),
      annotations: { readOnlyHint: config.readOnly ?? true, idempotentHint: true },
    },
    async (raw: unknown, extra: RequestExtra) => {
      const parsed = validateArguments(strict, raw);
      if (!parsed.ok) return toolResult(errorContent(parsed.error), true);
      const principal = principalOf(extra);
      if (principal === undefined) {
        return toolResult(errorContent(new IdemError('forbidden', 'no authenticated principal')), true);
      }
      try {
        return toolResult(
          await config.handler(parsed.value as z.objectOutputType<Shape, z.ZodTypeAny>, principal, extra),
        );
      } catch (error) {
        return toolResult(errorContent(toIdemError(error)), true);
      }
    },
  );
}
