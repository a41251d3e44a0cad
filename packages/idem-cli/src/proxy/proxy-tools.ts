import { createHash } from 'node:crypto';
import { idempotencyInstructions } from 'idem/mcp';
import type { UpstreamTool } from './upstream-connection.js';

/** How the proxy treats one upstream tool. */
export type ProxiedTool =
  | {
      /** Read-only (`readOnlyHint`), excluded by the operator, or unfit for a key: forwarded as is. */
      readonly kind: 'pass';
      readonly upstream: UpstreamTool;
      readonly reason: 'read_only' | 'excluded' | 'has_idempotency_key' | 'task_required';
    }
  | {
      /** Gains a required `idempotency_key`; forwarded once per key, its answer kept and replayed. */
      readonly kind: 'keyed';
      readonly upstream: UpstreamTool;
      /** The operation name in the identity (the tool name, made to fit Idem's operation names). */
      readonly operation: string;
      /** The identity's version: derived from the canonical JSON of the upstream's input schema. */
      readonly version: number;
      /** The argument in which the upstream takes an idempotency key of its own, if declared. */
      readonly upstreamKeyArg: string | undefined;
      /**
       * The advertised input schema: the upstream's plus a required `idempotency_key`, without the
       * upstream's own key argument (the proxy fills it).
       */
      readonly inputSchema: Record<string, unknown>;
      readonly description: string;
    };

/** What `proxiedTools` needs to know besides the upstream's list. */
export interface ProxyToolSettings {
  readonly exclude: ReadonlySet<string>;
  /** Upstream tool name -> the argument that takes the upstream's own idempotency key. */
  readonly upstreamKeys: ReadonlyMap<string, string>;
  readonly retentionMs: number;
  readonly tombstoneTtlMs: number;
  readonly statusTool: string;
}

const KEY_FIELD = 'idempotency_key';

const KEY_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7e]+$',
  description: 'A key you generate once per intended action and reuse on every retry of that action.',
};

/**
 * Classifies the upstream's tools: read-only ones (annotated `readOnlyHint`) and those in
 * `exclude` pass through unchanged; every other tool is keyed. A tool that already declares an
 * `idempotency_key` argument passes through too (the proxy cannot add its own), as does a tool that
 * runs only as an MCP task (`execution.taskSupport: 'required'`), which the proxy does not forward as
 * one call. Pure.
 */
export function proxiedTools(tools: readonly UpstreamTool[], settings: ProxyToolSettings): ProxiedTool[] {
  return tools.map((upstream): ProxiedTool => {
    if (upstream.annotations?.readOnlyHint === true) return { kind: 'pass', upstream, reason: 'read_only' };
    if (settings.exclude.has(upstream.name)) return { kind: 'pass', upstream, reason: 'excluded' };
    // A task-only tool cannot be forwarded as one call with one answer to keep.
    if (upstream.execution?.taskSupport === 'required')
      return { kind: 'pass', upstream, reason: 'task_required' };
    const properties = (upstream.inputSchema.properties ?? {}) as Record<string, unknown>;
    if (Object.hasOwn(properties, KEY_FIELD))
      return { kind: 'pass', upstream, reason: 'has_idempotency_key' };
    // The upstream's own key argument is the proxy's to fill: the caller neither sees nor sends it.
    const upstreamKeyArg = settings.upstreamKeys.get(upstream.name);
    const advertised = Object.fromEntries(
      Object.entries(properties).filter(([name]) => name !== upstreamKeyArg),
    );
    const required = (
      Array.isArray(upstream.inputSchema.required) ? (upstream.inputSchema.required as unknown[]) : []
    ).filter((name) => name !== upstreamKeyArg);
    const contract = idempotencyInstructions(
      settings.retentionMs,
      settings.statusTool,
      settings.tombstoneTtlMs,
    );
    return {
      kind: 'keyed',
      upstream,
      operation: operationName(upstream.name),
      version: schemaVersion(upstream.inputSchema),
      upstreamKeyArg,
      inputSchema: {
        ...upstream.inputSchema,
        type: 'object',
        properties: { ...advertised, [KEY_FIELD]: KEY_SCHEMA },
        required: [...required, KEY_FIELD],
      },
      description: `${upstream.description ?? ''}\n\n${contract}`.trimStart(),
    };
  });
}

/**
 * The operation name of an upstream tool: its name when it fits Idem's names
 * (`^[a-z][a-z0-9_.-]{0,63}$`), else a lower-cased, cleaned name with a digest of the original,
 * so that two tools never share one. Deterministic, so every proxy on one database agrees.
 */
export function operationName(tool: string): string {
  if (/^[a-z][a-z0-9_.-]{0,63}$/.test(tool)) return tool;
  const cleaned = tool
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, '_')
    .replace(/^[^a-z]*/, '');
  const digest = createHash('sha256').update(tool).digest('hex').slice(0, 8);
  return `${(cleaned || 'tool').slice(0, 55)}.${digest}`;
}

/**
 * The identity's version for an input schema: a positive 31-bit integer from the SHA-256 of the
 * schema's canonical JSON (keys sorted). The same schema gives the same version in every process
 * and after every restart; a changed schema gives another one, so its old keys are refused
 * (`version_conflict`) as after any version bump.
 */
export function schemaVersion(schema: unknown): number {
  const digest = createHash('sha256').update(canonicalJson(schema)).digest();
  return (digest.readUInt32BE(0) % 2_147_483_646) + 1;
}

/** JSON with object keys sorted at every depth. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
