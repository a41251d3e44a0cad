import { readFileSync } from 'node:fs';
import { CliError } from './cli-error.js';
import { parseJsonPath, type JsonPath } from './check-json-path.js';

/** The placeholder replaced by a fresh value per intended action, so that actions differ. */
export const UNIQUE = '{{unique}}';

/**
 * What `idem check` needs to know about a server's mutating tool:
 *
 * ```json
 * {
 *   "tool": "create_note",
 *   "keyField": "idempotency_key",
 *   "arguments": { "workspace": "default", "body": "idem check {{unique}}" },
 *   "count": { "tool": "list_notes", "arguments": { "workspace": "default" }, "path": "$.notes" },
 *   "idPath": "$.resource_id",
 *   "secondArguments": { "workspace": "team-b" }
 * }
 * ```
 *
 * `arguments` is a template without the key; `{{unique}}` (required somewhere in a string) takes a
 * new value per intended action. `count` (optional) names a read tool and a JSON path whose array
 * length (or number) counts the effects. `idPath` (optional) finds the created resource's id in a
 * result; by default `resource_id`, else the first `*_id` field. `secondArguments` (optional)
 * override top-level arguments for the second principal.
 */
export interface CheckConfig {
  readonly tool: string;
  readonly keyField: string;
  readonly arguments: Record<string, unknown>;
  readonly count:
    | { readonly tool: string; readonly arguments: Record<string, unknown>; readonly path: JsonPath }
    | undefined;
  readonly idPath: JsonPath | undefined;
  readonly secondArguments: Record<string, unknown> | undefined;
}

const FIELDS = new Set(['tool', 'keyField', 'arguments', 'count', 'idPath', 'secondArguments']);

export function loadCheckConfig(path: string): CheckConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read --config ${path}: ${(error as Error).message}`, 2);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(`--config ${path} is not JSON: ${(error as Error).message}`, 2);
  }
  return parseCheckConfig(value);
}

export function parseCheckConfig(value: unknown): CheckConfig {
  const fail = (message: string): never => {
    throw new CliError(`check config: ${message}`, 2);
  };
  if (!isObject(value)) return fail('must be a JSON object');
  for (const name of Object.keys(value)) if (!FIELDS.has(name)) fail(`unknown field ${JSON.stringify(name)}`);
  const tool = value.tool;
  if (typeof tool !== 'string' || tool === '') return fail('"tool" must name the mutating tool');
  const keyField = value.keyField ?? 'idempotency_key';
  if (typeof keyField !== 'string' || keyField === '') return fail('"keyField" must be a field name');
  const args = value.arguments;
  if (!isObject(args)) return fail('"arguments" must be an object (the tool arguments without the key)');
  if (keyField in args) fail(`"arguments" must not contain the key field ${keyField}; the checker sets it`);
  if (!JSON.stringify(args).includes(UNIQUE)) {
    fail(`"arguments" must contain ${UNIQUE} in a string, so that the checker can vary them`);
  }
  let count: CheckConfig['count'];
  if (value.count !== undefined) {
    const c = value.count;
    if (!isObject(c) || typeof c.tool !== 'string' || typeof c.path !== 'string') {
      return fail('"count" must be {"tool": "...", "arguments": {...}, "path": "$..."}');
    }
    const countArgs = c.arguments ?? {};
    if (!isObject(countArgs)) return fail('"count.arguments" must be an object');
    count = { tool: c.tool, arguments: countArgs, path: parseJsonPath(c.path) };
  }
  if (value.idPath !== undefined && typeof value.idPath !== 'string') fail('"idPath" must be a JSON path');
  const second = value.secondArguments;
  if (second !== undefined && !isObject(second)) fail('"secondArguments" must be an object');
  return {
    tool,
    keyField,
    arguments: args,
    count,
    idPath: typeof value.idPath === 'string' ? parseJsonPath(value.idPath) : undefined,
    secondArguments: second as Record<string, unknown> | undefined,
  };
}

/** The template with every `{{unique}}` replaced by `unique`. */
export function fillTemplate(template: Record<string, unknown>, unique: string): Record<string, unknown> {
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string') return value.split(UNIQUE).join(unique);
    if (Array.isArray(value)) return value.map(fill);
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
    return value;
  };
  return fill(template) as Record<string, unknown>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
