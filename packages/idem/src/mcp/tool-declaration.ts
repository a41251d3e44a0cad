import { z } from 'zod';
import type { JsonObject } from '../core/json.js';
import type { Logger } from '../core/logger.js';
import type { ToolCatalog, ToolDeclaration } from '../ports/tool-catalog.js';

/**
 * What a tool version declares about its results, as the store keeps it (ToolCatalog): the JSON
 * Schema of its `resultSchema` (business fields only), or null without one.
 */
export function toolDeclaration(
  operation: string,
  version: number,
  resultSchema: z.ZodObject | undefined,
  now: number,
): ToolDeclaration {
  return {
    operation,
    version,
    resultSchema:
      resultSchema === undefined
        ? null
        : (z.toJSONSchema(resultSchema, { unrepresentable: 'any', io: 'output' }) as JsonObject),
    declaredAt: now,
  };
}

/**
 * Stores a tool's declaration once per process: `ready()` writes it at the first call (and again at
 * the next one after a failure, which is logged as `tool.declare_failed` with the tool and the
 * error code), and never rejects, so a store that cannot take it fails the call on its own terms.
 * A durable tool awaits it before it accepts an operation, so that every operation of this process
 * can be settled against its tool's stored fields in any other.
 */
export function toolDeclarer(
  tools: ToolCatalog,
  declaration: () => ToolDeclaration,
  logger: Logger,
): { ready(): Promise<void> } {
  let done: Promise<boolean> | undefined;
  return {
    async ready() {
      done ??= tools.declare(declaration()).then(
        () => true,
        (error: unknown) => {
          const d = declaration();
          logger.error('tool.declare_failed', {
            tool: d.operation,
            version: d.version,
            code: (error as { code?: string }).code ?? 'internal',
          });
          return false;
        },
      );
      if (!(await done)) done = undefined;
    },
  };
}
