import type { ToolReply } from 'idem/client';
import { formatJsonPath, readJsonPath, type JsonPath } from './json-path.js';
import { isObject } from './unique-template.js';

/** The id of what a call created, where it was found, and whether it merely echoes the arguments. */
export interface FoundId {
  readonly value: string;
  /** A JSON path into the result, or `resource_link` / `resource` for a content block's URI. */
  readonly at: string;
  /**
   * True when the value comes from the arguments (it contains the call's `{{unique}}` or its key,
   * or equals an argument): equal echoes then prove nothing, since equal arguments give them.
   */
  readonly echo: boolean;
  /** Every id-like field found, best first (this one included), so that answers can be compared field by field. */
  readonly candidates: ReadonlyArray<{ readonly value: string; readonly at: string; readonly echo: boolean }>;
}

export interface FindIdOptions {
  /** `--id-path`: where the id is; nothing else is looked at. */
  readonly idPath?: JsonPath | undefined;
  /** The arguments sent, the `{{unique}}` fill and the key: what counts as an echo. */
  readonly sent: Record<string, unknown>;
  readonly unique: string;
  readonly key: string | undefined;
}

const MAX_NODES = 500;
const MAX_DEPTH = 4;
/** `*_id` fields that identify a request, a trace or a session, never a created resource. */
const NOT_RESOURCE = /^(attempt|request|trace|span|session|correlation|client|idempotency|parent)[_-]?id$/i;

/**
 * The created resource's id in a reply. With `idPath`, the string or number there. Otherwise the
 * shallowest of, in this order of preference: `resource_id`, `id`, another `*_id`/`*Id` field,
 * `uri`/`url`; then the URI of the first `resource_link` or embedded `resource` block; then `name`,
 * then `operation_id` (a durable tool's handle). Objects and arrays are searched four levels deep.
 */
export function findId(reply: ToolReply, options: FindIdOptions): FoundId | undefined {
  const found = options.idPath === undefined ? search(reply) : atPath(reply.content, options.idPath);
  const candidates = found.map((hit) => ({ ...hit, echo: isEcho(hit.value, options) }));
  const best = candidates[0];
  return best === undefined ? undefined : { ...best, candidates };
}

function atPath(content: Record<string, unknown>, path: JsonPath): Array<{ value: string; at: string }> {
  const value = scalar(readJsonPath(content, path));
  return value === undefined ? [] : [{ value, at: formatJsonPath(path) }];
}

function search(reply: ToolReply): Array<{ value: string; at: string }> {
  const hits: Array<{ value: string; at: string; rank: number; depth: number }> = [];
  const queue: Array<{ node: unknown; path: Array<string | number> }> = [{ node: reply.content, path: [] }];
  for (let seen = 0; queue.length > 0 && seen < MAX_NODES; seen += 1) {
    const { node, path } = queue.shift() as { node: unknown; path: Array<string | number> };
    if (path.length > MAX_DEPTH) continue;
    if (Array.isArray(node)) {
      node.forEach((item, index) => queue.push({ node: item, path: [...path, index] }));
      continue;
    }
    if (!isObject(node)) continue;
    for (const [name, value] of Object.entries(node)) {
      const text = scalar(value);
      const rank = text === undefined ? undefined : rankOf(name);
      if (rank !== undefined && text !== undefined) {
        hits.push({ value: text, at: formatJsonPath([...path, name]), rank, depth: path.length });
      } else if (typeof value === 'object' && value !== null)
        queue.push({ node: value, path: [...path, name] });
    }
  }
  const uri = reply.resourceUris?.[0];
  if (uri !== undefined) hits.push({ value: uri, at: 'resource_link', rank: 4, depth: 0 });
  hits.sort((a, b) => tier(a.rank) - tier(b.rank) || a.depth - b.depth || a.rank - b.rank);
  return hits.map(({ value, at }) => ({ value, at }));
}

/** Lower is better; undefined when the field is no id. */
function rankOf(name: string): number | undefined {
  if (/^resource[_-]?id$/i.test(name)) return 0;
  if (/^id$/i.test(name)) return 1;
  if (/^operation[_-]?id$/i.test(name)) return 6;
  if (/(_id|Id|ID)$/.test(name) && !NOT_RESOURCE.test(name)) return 2;
  if (/^(uri|url)$/i.test(name)) return 3;
  if (/^name$/i.test(name)) return 5;
  return undefined;
}

/** Ids proper (and URIs) first, at any depth; a resource link; then names and operation ids. */
function tier(rank: number): number {
  return rank <= 3 ? 0 : rank === 4 ? 1 : 2;
}

function scalar(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function isEcho(value: string, options: FindIdOptions): boolean {
  if (options.unique !== '' && value.includes(options.unique)) return true;
  if (options.key !== undefined && value.includes(options.key)) return true;
  return leaves(options.sent).some((leaf) => leaf === value);
}

function leaves(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value === 'number') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (isObject(value)) return Object.values(value).flatMap(leaves);
  return [];
}
