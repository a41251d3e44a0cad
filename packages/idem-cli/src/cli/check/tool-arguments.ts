import type { ListedTool } from '../check-connection.js';
import type { FixedArgument } from './check-options.js';
import { isObject } from './unique-template.js';

/** True when a value is or holds a string (where `{{unique}}` could have gone). */
export function holdsString(value: unknown): boolean {
  if (typeof value === 'string') return true;
  if (Array.isArray(value)) return value.some(holdsString);
  return isObject(value) && Object.values(value).some(holdsString);
}

/** The top-level argument names a tool declares. */
export function argumentNames(tool: ListedTool): string[] {
  const properties = tool.inputSchema.properties;
  return isObject(properties) ? Object.keys(properties) : [];
}

/** A tool takes the arguments it declares; one without `properties` takes any (unless it forbids extras). */
export function takes(tool: ListedTool, name: string): boolean {
  const { properties, additionalProperties } = tool.inputSchema;
  return isObject(properties) ? name in properties : additionalProperties !== false;
}

/** `--arg n=5` is the number 5, unless the schema wants a string there. */
export function coerce(tool: ListedTool, name: string, fixed: FixedArgument): unknown {
  const properties = tool.inputSchema.properties;
  const p = isObject(properties) ? properties[name] : undefined;
  const type = isObject(p) ? p.type : undefined;
  const wantsString = type === 'string' || (Array.isArray(type) && type.length === 1 && type[0] === 'string');
  return wantsString || fixed.json === undefined ? fixed.text : fixed.json;
}
