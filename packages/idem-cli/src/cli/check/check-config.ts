import { readFileSync } from 'node:fs';
import { CliError } from '../cli-error.js';
import { parseJsonPath, type JsonPath } from './json-path.js';
import { isObject } from './unique-template.js';

/** A read tool that counts a mutating tool's effects: the length of an array (or a number) in its result. */
export interface CountSetting {
  readonly tool: string;
  readonly arguments: Record<string, unknown>;
  /** Where the array or number is; without it the checker finds the array that one call grows. */
  readonly path: JsonPath | undefined;
}

/** What the checker may be told about one mutating tool; everything else it reads from the schema. */
export interface ToolSettings {
  readonly keyField?: string;
  /** Top-level arguments laid over the sample built from the schema; `{{unique}}` varies per action. */
  readonly arguments?: Record<string, unknown>;
  readonly count?: CountSetting;
  readonly idPath?: JsonPath;
  /** Top-level arguments for the second principal (`--token2`), e.g. its own workspace. */
  readonly secondArguments?: Record<string, unknown>;
  /** The arguments that scope the tool's keys (default: found by name or description); never varied. */
  readonly scopeFields?: readonly string[];
}

/**
 * A `--config` file. Every field is optional; the top-level fields apply to every checked tool and
 * `tools` refines them per tool:
 *
 * ```json
 * {
 *   "tool": "create_note",
 *   "keyField": "idempotency_key",
 *   "arguments": { "workspace": "default", "body": "idem check {{unique}}" },
 *   "count": { "tool": "list_notes", "arguments": { "workspace": "default" }, "path": "$.notes" },
 *   "idPath": "$.resource_id",
 *   "secondArguments": { "workspace": "team-b" },
 *   "scopeFields": ["workspace"]
 * }
 * ```
 *
 * `tool` (one name) or `tools` (`{ "name": { …the fields above… } }`) choose the tools to check
 * when no `--tool` is given.
 */
export interface CheckConfig extends ToolSettings {
  readonly tool?: string;
  readonly tools?: Readonly<Record<string, ToolSettings>>;
}

const TOOL_FIELDS = ['keyField', 'arguments', 'count', 'idPath', 'secondArguments', 'scopeFields'];
const FIELDS = new Set(['tool', 'tools', ...TOOL_FIELDS]);

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

/** The config, checked: any mistake is a usage error (exit 2) naming the field. */
export function parseCheckConfig(value: unknown): CheckConfig {
  if (!isObject(value)) return fail('must be a JSON object');
  for (const name of Object.keys(value)) if (!FIELDS.has(name)) fail(`unknown field ${JSON.stringify(name)}`);
  if (value.tool !== undefined && (typeof value.tool !== 'string' || value.tool === '')) {
    fail('"tool" must name the mutating tool');
  }
  if (value.tool !== undefined && value.tools !== undefined) fail('give "tool" or "tools", not both');
  let tools: Record<string, ToolSettings> | undefined;
  if (value.tools !== undefined) {
    if (!isObject(value.tools) || Object.keys(value.tools).length === 0) {
      fail('"tools" must be an object of tool names, e.g. {"create_note": {}}');
    }
    tools = {};
    for (const [name, settings] of Object.entries(value.tools as Record<string, unknown>)) {
      if (!isObject(settings)) fail(`"tools.${name}" must be an object`);
      for (const field of Object.keys(settings as object)) {
        if (!TOOL_FIELDS.includes(field)) fail(`unknown field ${JSON.stringify(field)} in "tools.${name}"`);
      }
      tools[name] = toolSettings(settings as Record<string, unknown>, `tools.${name}.`);
    }
  }
  return {
    ...toolSettings(value, ''),
    ...(typeof value.tool === 'string' ? { tool: value.tool } : {}),
    ...(tools === undefined ? {} : { tools }),
  };
}

function toolSettings(value: Record<string, unknown>, at: string): ToolSettings {
  const keyField = value.keyField;
  if (keyField !== undefined && (typeof keyField !== 'string' || keyField === '')) {
    fail(`"${at}keyField" must be an argument name`);
  }
  const args = value.arguments;
  if (args !== undefined && !isObject(args))
    fail(`"${at}arguments" must be an object of top-level arguments`);
  if (typeof keyField === 'string' && isObject(args) && keyField in args) {
    fail(`"${at}arguments" must not contain the key field ${keyField}; the checker sets it`);
  }
  let count: CountSetting | undefined;
  if (value.count !== undefined) {
    const c = value.count;
    if (!isObject(c) || typeof c.tool !== 'string' || (c.path !== undefined && typeof c.path !== 'string')) {
      return fail(`"${at}count" must be {"tool": "...", "arguments": {...}, "path": "$..."} (path optional)`);
    }
    const countArgs = c.arguments ?? {};
    if (!isObject(countArgs)) return fail(`"${at}count.arguments" must be an object`);
    count = {
      tool: c.tool,
      arguments: countArgs,
      path: typeof c.path === 'string' ? parseJsonPath(c.path) : undefined,
    };
  }
  if (value.idPath !== undefined && typeof value.idPath !== 'string')
    fail(`"${at}idPath" must be a JSON path`);
  const second = value.secondArguments;
  if (second !== undefined && !isObject(second)) fail(`"${at}secondArguments" must be an object`);
  const scope = value.scopeFields;
  if (
    scope !== undefined &&
    (!Array.isArray(scope) || scope.some((name) => typeof name !== 'string' || name === ''))
  ) {
    fail(`"${at}scopeFields" must be a list of argument names`);
  }
  return {
    ...(typeof keyField === 'string' ? { keyField } : {}),
    ...(isObject(args) ? { arguments: args } : {}),
    ...(count === undefined ? {} : { count }),
    ...(typeof value.idPath === 'string' ? { idPath: parseJsonPath(value.idPath) } : {}),
    ...(isObject(second) ? { secondArguments: second } : {}),
    ...(Array.isArray(scope) ? { scopeFields: scope as string[] } : {}),
  };
}

function fail(message: string): never {
  throw new CliError(`check config: ${message}`, 2);
}
