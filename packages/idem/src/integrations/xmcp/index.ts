import type { z } from 'zod';
import type { IdemTool, IdemToolAnnotations } from '../../mcp/idem-tool.js';
import { toolCallContext, type AuthInfoLike } from '../../mcp/principal.js';
import type { IdemToolResult } from '../../mcp/tool-result.js';

export {
  xmcpUndeclaredFieldsGuard,
  type XmcpGuardMiddleware,
  type XmcpGuardRequest,
  type XmcpGuardResponse,
} from './xmcp-undeclared-fields-guard.js';

/**
 * One field of an xmcp `schema` export that lets every value through: xmcp validates each field
 * with `~standard.validate` (which here always succeeds, so Idem answers `invalid_argument` with a
 * code itself), lists it with `~standard.jsonSchema` (the real field's JSON Schema) and marks it
 * `required` when `safeParse(undefined)` fails (the real field's answer).
 */
export interface XmcpPassThroughField {
  readonly parse: (value: unknown) => unknown;
  readonly safeParse: (value: unknown) => { success: boolean; data?: unknown };
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: 'idem';
    readonly validate: (value: unknown) => { readonly value: unknown };
    readonly jsonSchema: {
      readonly input: (options: { target: string }) => Record<string, unknown>;
      readonly output: (options: { target: string }) => Record<string, unknown>;
    };
  };
}

/** What xmcp hands a tool handler as its second argument; Idem reads `authInfo` and `signal`. */
export interface XmcpExtra {
  readonly signal?: AbortSignal;
  readonly authInfo?: AuthInfoLike;
}

/** The exports of an xmcp tool file, built from an `IdemTool`. */
export interface XmcpToolExports {
  /** The `schema` export: every argument field, typed and `required` as Idem's, none refused. */
  readonly schema: Readonly<Record<string, XmcpPassThroughField>>;
  /** The `metadata` export: name, description with the retry contract, annotations. */
  readonly metadata: {
    readonly name: string;
    readonly description: string;
    readonly annotations: IdemToolAnnotations & { readonly title?: string };
  };
  /**
   * The `outputSchema` export: the fields of Idem's exact output schema when the tool declares
   * `resultSchema` (xmcp rebuilds it strictly, and it then accepts every answer Idem gives);
   * `undefined` otherwise, so that xmcp never rejects a committed result for a business field it
   * does not know (the tool is then listed without an output schema).
   */
  readonly outputSchema: Readonly<Record<string, z.ZodType>> | undefined;
  /** The default export: hands the arguments as xmcp passes them, and the caller's principal, to Idem. */
  readonly handler: (args: unknown, extra?: XmcpExtra) => Promise<IdemToolResult>;
}

/**
 * Turns an `IdemTool` into what an xmcp (1.1) tool file exports, so that a tool file is
 * `const tool = xmcpTool(createTicket); export const { schema, metadata, outputSchema } = tool;
 * export default tool.handler;`. The principal comes from `extra.authInfo` (`toolCallContext`),
 * results leave as Idem built them (xmcp returns a `CallToolResult` as is).
 *
 * One promise xmcp 1.1 does not let a tool file keep: it copies only the declared fields of the
 * arguments before the handler runs, so a field the tool does not declare never reaches Idem and
 * would be dropped instead of refused with `invalid_argument`. `xmcpUndeclaredFieldsGuard`, an xmcp
 * middleware, refuses such a call before xmcp copies anything (see docs/your-own-tools.md).
 */
export function xmcpTool(tool: IdemTool): XmcpToolExports {
  const schema: Record<string, XmcpPassThroughField> = {};
  for (const [name, field] of Object.entries(tool.argumentsSchema.shape)) {
    schema[name] = passThrough(field as z.ZodType);
  }
  const annotations =
    tool.title === undefined ? tool.annotations : { ...tool.annotations, title: tool.title };
  return {
    schema,
    metadata: { name: tool.name, description: tool.description, annotations },
    outputSchema: isStrict(tool.outputSchema)
      ? (tool.outputSchema.shape as Record<string, z.ZodType>)
      : undefined,
    handler: (args, extra) => tool.handle(args, toolCallContext(extra?.authInfo, extra?.signal)),
  };
}

function passThrough(field: z.ZodType): XmcpPassThroughField {
  const json = (io: 'input' | 'output') => (options: { target: string }) => {
    const { $schema: _ignored, ...rest } = field['~standard'].jsonSchema[io](options);
    return rest;
  };
  return {
    parse: (value) => value,
    safeParse: (value) => {
      const result = field.safeParse(value);
      return result.success ? { success: true, data: result.data } : { success: false };
    },
    '~standard': {
      version: 1,
      vendor: 'idem',
      validate: (value) => ({ value }),
      jsonSchema: { input: json('input'), output: json('output') },
    },
  };
}

/** Whether `schema` refuses unknown keys (a `z.strictObject`), as Idem's exact output schema does. */
function isStrict(schema: z.ZodObject): boolean {
  return schema._zod.def.catchall?._zod.def.type === 'never';
}
