import { CliError } from '../cli-error.js';

/** A parsed JSON path: property names and array indexes from the root. */
export type JsonPath = ReadonlyArray<string | number>;

const SEGMENT = /^(?:\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\["([^"]*)"\])/;

/**
 * The small JSON path subset `idem check` needs to find a count or an id in a tool result:
 * `$`, `.name`, `['name']`, `["name"]` and `[0]`. Anything else is a usage error (exit 2).
 */
export function parseJsonPath(text: string): JsonPath {
  if (!text.startsWith('$')) throw new CliError(`JSON path must start with $: ${JSON.stringify(text)}`, 2);
  const path: Array<string | number> = [];
  let rest = text.slice(1);
  while (rest !== '') {
    const match = SEGMENT.exec(rest);
    if (match === null)
      throw new CliError(`unsupported JSON path ${JSON.stringify(text)} at ${JSON.stringify(rest)}`, 2);
    const [whole, name, index, single, double] = match;
    path.push(index !== undefined ? Number(index) : ((name ?? single ?? double) as string));
    rest = rest.slice(whole.length);
  }
  return path;
}

/** The value at `path`, or undefined when any step is missing. */
export function readJsonPath(value: unknown, path: JsonPath): unknown {
  let current = value;
  for (const step of path) {
    if (typeof current !== 'object' || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[step];
  }
  return current;
}

export function formatJsonPath(path: JsonPath): string {
  return `$${path.map((step) => (typeof step === 'number' ? `[${step}]` : `.${step}`)).join('')}`;
}
