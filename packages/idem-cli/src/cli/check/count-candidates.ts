import type { ListedTool } from '../check-connection.js';
import type { FixedArgument } from './check-options.js';
import { schemaSample } from './schema-sample.js';
import { coerce, takes } from './tool-arguments.js';
import type { CountSpec } from './count-spec.js';
import { fill, isObject } from './unique-template.js';

/** Names of tools that list or read what a mutating tool makes. */
const COUNT_NAME =
  /(^|[_-])(list|read|all|graph|index|search|find|query|count|dump|export)([_-]|s?$)|^(list|read)[A-Z]/;
const MAX_FOUND_COUNTS = 5;

/** Read tools worth trying as a count: readOnlyHint, a listing name, every required argument known. */
export function foundCounts(
  listed: readonly ListedTool[],
  shared: Record<string, unknown>,
  args: ReadonlyMap<string, FixedArgument>,
): CountSpec[] {
  const rank = (name: string) => (/list/i.test(name) ? 0 : /read|all|graph|dump|export/i.test(name) ? 1 : 2);
  return listed
    .filter((tool) => tool.annotations?.readOnlyHint === true && COUNT_NAME.test(tool.name))
    .flatMap((tool) => {
      const schema = tool.inputSchema;
      const properties = isObject(schema.properties) ? schema.properties : {};
      const required = Array.isArray(schema.required) ? schema.required : [];
      const ready = required.every((name) => {
        if (typeof name !== 'string') return true;
        const p = properties[name];
        return (
          name in shared || args.has(name) || (isObject(p) && ('const' in p || 'default' in p || 'enum' in p))
        );
      });
      return ready ? [tool] : [];
    })
    .sort((a, b) => rank(a.name) - rank(b.name))
    .slice(0, MAX_FOUND_COUNTS)
    .map((tool) => ({
      tool: tool.name,
      arguments: readArguments(tool, shared, args),
      path: undefined,
      from: 'found' as const,
    }));
}

/** A read tool's arguments: the known values it takes, and a fixed sample for the rest it requires. */
export function readArguments(
  tool: ListedTool,
  shared: Record<string, unknown>,
  args: ReadonlyMap<string, FixedArgument>,
): Record<string, unknown> {
  const sample = schemaSample(tool.inputSchema).value;
  const out: Record<string, unknown> = isObject(sample) ? { ...sample } : {};
  for (const [name, value] of Object.entries(shared)) if (takes(tool, name)) out[name] = value;
  for (const [name, fixed] of args) if (takes(tool, name)) out[name] = coerce(tool, name, fixed);
  return fill(out, '000000000000') as Record<string, unknown>;
}
