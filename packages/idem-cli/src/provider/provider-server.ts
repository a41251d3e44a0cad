import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { systemClock, type Clock, silentLogger, type Logger } from 'idem';
import {
  describeZodError,
  faultSpecProblem,
  ProviderFaults,
  type ArmedFault,
  type FaultRoute,
} from './provider-faults.js';
import { hostAllowed } from './host-allowed.js';
import { errorReply, providerReply, readBody, sendReply, type ProviderReply } from './provider-reply.js';
import { ProviderState } from './provider-state.js';

/**
 * How the provider lets a caller avoid duplicate deployments:
 * - `key`: the `Idempotency-Key` header (see `createDeployment` for the exact contract);
 * - `reference`: a `client_reference` stored with each deployment and searchable with
 *   `GET /deployments?client_reference=R` (the provider never deduplicates by it);
 * - `none`: nothing; every `POST /deployments` creates a deployment.
 */
export type ProviderMode = 'key' | 'reference' | 'none';
export const PROVIDER_MODES: readonly ProviderMode[] = ['key', 'reference', 'none'];

export const DEFAULT_KEY_RETENTION_MS = 24 * 60 * 60 * 1000;
export const MAX_BODY_BYTES = 64 * 1024;
const MAX_KEY_LENGTH = 255;

export interface ProviderOptions {
  /** Loopback only (127.x.x.x, ::1 or localhost); default 127.0.0.1. */
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  mode: ProviderMode;
  /** SQLite file keeping deployments, keys and deliveries across restarts; default `:memory:`. */
  dbPath?: string;
  logger?: Logger;
  /** How long an idempotency key replays, from its first use; default 24h. */
  keyRetentionMs?: number;
  /** Wall time for `created_at` and key retention; default the system clock. */
  clock?: Clock;
  /** What an `exit` fault calls after committing; default `process.exit(137)`. */
  exitProcess?: (code: number) => void;
  /**
   * Serve `/_faults`, through which any local caller can make the provider fail, hang or exit
   * (`idem provider --faults`). Default false: the route answers 404. `RunningProvider.faults`
   * arms faults in-process either way.
   */
  faultsEndpoint?: boolean;
}

export interface RunningProvider {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:4000`. */
  readonly url: string;
  readonly port: number;
  readonly mode: ProviderMode;
  readonly faults: ProviderFaults;
  close(): Promise<void>;
}

const deploymentRequestSchema = z
  .object({
    service: z.string().min(1).max(100),
    version: z.string().min(1).max(100),
    client_reference: z.string().min(1).max(200).optional(),
  })
  .strict();

type DeploymentRequest = z.infer<typeof deploymentRequestSchema>;

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

interface Context {
  mode: ProviderMode;
  host: string;
  faultsEndpoint: boolean;
  state: ProviderState;
  faults: ProviderFaults;
  logger: Logger;
  clock: Clock;
  keyRetentionMs: number;
  exitProcess: (code: number) => void;
  delays: Set<AbortController>;
}

/** Starts the deployment provider: the "external side effect" that Idem's tests and demos call. */
export async function startProvider(options: ProviderOptions): Promise<RunningProvider> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopbackHost(host)) throw new Error(`the provider listens on loopback only; refusing host ${host}`);
  if (!PROVIDER_MODES.includes(options.mode))
    throw new Error(`unknown provider mode ${String(options.mode)}`);
  const keyRetentionMs = options.keyRetentionMs ?? DEFAULT_KEY_RETENTION_MS;
  if (!Number.isSafeInteger(keyRetentionMs) || keyRetentionMs <= 0)
    throw new Error('keyRetentionMs must be a positive integer');

  const ctx: Context = {
    mode: options.mode,
    host,
    faultsEndpoint: options.faultsEndpoint ?? false,
    state: new ProviderState(options.dbPath ?? ':memory:'),
    faults: new ProviderFaults(),
    logger: options.logger ?? silentLogger,
    clock: options.clock ?? systemClock,
    keyRetentionMs,
    exitProcess: options.exitProcess ?? ((code) => process.exit(code)),
    delays: new Set(),
  };
  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((error: unknown) => {
      ctx.logger.error('provider.error', { message: (error as Error)?.message ?? String(error) });
      if (!res.headersSent) sendReply(res, errorReply(500, 'internal', 'internal error'));
      else res.destroy();
    });
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    ctx.state.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${address.port}`,
    port: address.port,
    mode: ctx.mode,
    faults: ctx.faults,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        for (const delay of ctx.delays) delay.abort();
        server.close(() => {
          ctx.state.close();
          resolve();
        });
        server.closeAllConnections();
      })),
  };
}

async function handle(ctx: Context, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://provider.invalid');
  const path = url.pathname;
  const method = req.method ?? 'GET';
  // Before anything else: a browser page with a rebound DNS name gets nothing from this provider.
  if (!hostAllowed(req.headers.host, ctx.host, req.socket.localPort ?? 0)) {
    ctx.logger.warn('provider.host_refused', { method, path });
    const port = req.socket.localPort ?? 0;
    const message = `the Host header must name this provider: a loopback name or address, port ${port}`;
    return sendReply(res, errorReply(421, 'misdirected_request', message));
  }
  const route = (allow: string[]): boolean => {
    if (allow.includes(method)) return true;
    sendReply(
      res,
      errorReply(405, 'method_not_allowed', `${method} ${path} is not supported`, {
        Allow: allow.join(', '),
      }),
    );
    return false;
  };

  if (path === '/health') {
    if (route(['GET'])) sendReply(res, providerReply(200, { ok: true, mode: ctx.mode }));
  } else if (path === '/deployments') {
    if (!route(['GET', 'POST'])) return;
    if (method === 'GET') return sendReply(res, listDeployments(ctx, url.searchParams));
    await handleWrite(ctx, 'create', req, res);
  } else if (path.startsWith('/deployments/') && path.indexOf('/', '/deployments/'.length) === -1) {
    if (!route(['GET'])) return;
    const found = ctx.state.getDeployment(decodePathSegment(path.slice('/deployments/'.length)));
    sendReply(res, found ? providerReply(200, found) : errorReply(404, 'not_found', 'no such deployment'));
  } else if (path === '/webhooks') {
    if (!route(['GET', 'POST'])) return;
    if (method === 'GET')
      return sendReply(res, providerReply(200, { deliveries: ctx.state.listDeliveries() }));
    await handleWrite(ctx, 'webhook', req, res);
  } else if (path === '/_faults' && !ctx.faultsEndpoint) {
    sendReply(res, errorReply(404, 'not_found', 'fault injection is off; start the provider with --faults'));
  } else if (path === '/_faults') {
    if (!route(['GET', 'POST', 'DELETE'])) return;
    if (method === 'GET') return sendReply(res, providerReply(200, { faults: ctx.faults.pending() }));
    if (method === 'DELETE') return sendReply(res, providerReply(200, { cleared: ctx.faults.clear() }));
    const body = await readJson(req);
    if ('reply' in body) return sendReply(res, body.reply);
    const problem = faultSpecProblem(body.value);
    if (problem !== undefined) return sendReply(res, errorReply(422, 'invalid_request', problem));
    const armed = ctx.faults.arm(body.value as Parameters<ProviderFaults['arm']>[0]);
    ctx.logger.warn('provider.fault_armed', { kind: armed.kind, route: armed.route, times: armed.remaining });
    sendReply(res, providerReply(201, { armed }));
  } else {
    sendReply(res, errorReply(404, 'not_found', `no route ${method} ${path}`));
  }
}

function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

async function readJson(req: IncomingMessage): Promise<{ value: unknown } | { reply: ProviderReply }> {
  const raw = await readBody(req, MAX_BODY_BYTES);
  if (raw === undefined)
    return { reply: errorReply(413, 'payload_too_large', `bodies are limited to ${MAX_BODY_BYTES} bytes`) };
  try {
    return { value: JSON.parse(raw.toString('utf8')) as unknown };
  } catch {
    return { reply: errorReply(400, 'invalid_json', 'the body is not valid JSON') };
  }
}

/** A write route: `status` faults answer instead of applying; other faults act once it is committed. */
async function handleWrite(ctx: Context, route: FaultRoute, req: IncomingMessage, res: ServerResponse) {
  const raw = await readBody(req, MAX_BODY_BYTES);
  if (raw === undefined)
    return sendReply(
      res,
      errorReply(413, 'payload_too_large', `bodies are limited to ${MAX_BODY_BYTES} bytes`),
    );
  const fault = ctx.faults.take(route);
  if (fault !== undefined) ctx.logger.warn('provider.fault', { kind: fault.kind, route, id: fault.id });
  if (fault?.kind === 'status') return sendReply(res, statusFaultReply(fault));
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return sendReply(res, errorReply(400, 'invalid_json', 'the body is not valid JSON'));
  }
  const key = req.headers['idempotency-key'];
  const reply = route === 'create' ? createDeployment(ctx, value, key) : receiveWebhook(ctx, value, key);
  // The effect, if any, is committed: only now may a fault lose, delay or abandon the reply.
  if (fault?.kind === 'drop_response') {
    res.socket?.destroy();
  } else if (fault?.kind === 'exit') {
    ctx.exitProcess(137);
    res.socket?.destroy();
  } else if (fault?.kind === 'delay') {
    const abort = new AbortController();
    ctx.delays.add(abort);
    try {
      await sleep(fault.delayMs ?? 0, undefined, { signal: abort.signal });
      sendReply(res, reply);
    } catch {
      res.socket?.destroy(); // the provider is closing
    } finally {
      ctx.delays.delete(abort);
    }
  } else {
    sendReply(res, reply);
  }
}

function statusFaultReply(fault: ArmedFault): ProviderReply {
  const status = fault.status ?? 503;
  const headers =
    fault.retryAfterSeconds === undefined ? undefined : { 'Retry-After': String(fault.retryAfterSeconds) };
  return providerReply(status, { error: 'injected_fault', message: `injected ${status}`, status }, headers);
}

function keyProblem(key: string): ProviderReply | undefined {
  if (key.length >= 1 && key.length <= MAX_KEY_LENGTH) return undefined;
  return errorReply(
    400,
    'invalid_idempotency_key',
    `Idempotency-Key must be 1 to ${MAX_KEY_LENGTH} characters`,
  );
}

/** `forbidden-*` services are refused with 403 and `invalid-*` ones with 422, before anything is stored. */
function serviceRejection(service: string): ProviderReply | undefined {
  if (service.startsWith('forbidden-'))
    return errorReply(403, 'forbidden', `deploying ${service} is not allowed`);
  if (service.startsWith('invalid-'))
    return errorReply(422, 'invalid_request', `service ${service} is rejected`);
  return undefined;
}

/**
 * `POST /deployments`. In `key` mode the `Idempotency-Key` header (1..255 characters) works so:
 * - scope: the whole provider (one tenant); a key is unrelated to webhook dedup keys;
 * - retention: `keyRetentionMs` from the key's first use; after that the key is forgotten and a
 *   request carrying it is treated as new;
 * - same key, same request (SHA-256 of the canonical JSON of the validated body): the original
 *   201 response, byte for byte, with `Idempotent-Replayed: true`; nothing is created;
 * - same key, different request: 422 `{ error: 'idempotency_key_conflict' }`; nothing is created;
 * - only a created deployment records its key: a request refused with 400/403/422 leaves the key
 *   unused (the same request gets the same refusal again);
 * - key lookup, creation and key record happen in one SQLite transaction, committed before replying.
 * In `reference` mode `client_reference` is stored (not deduplicated); in `none` and `key` modes it
 * is accepted but ignored. Outside `key` mode the header is ignored.
 */
function createDeployment(
  ctx: Context,
  value: unknown,
  header: string | string[] | undefined,
): ProviderReply {
  const key = ctx.mode === 'key' && typeof header === 'string' ? header : undefined;
  if (key !== undefined) {
    const problem = keyProblem(key);
    if (problem !== undefined) return problem;
  }
  const parsed = deploymentRequestSchema.safeParse(value);
  if (!parsed.success) return errorReply(422, 'invalid_request', describeZodError(parsed.error));
  const request: DeploymentRequest = parsed.data;
  const requestHash = requestFingerprint(request);
  const now = ctx.clock.now();
  const expiredAtOrBefore = now - ctx.keyRetentionMs;
  const reply = ctx.state.transaction((): ProviderReply => {
    if (key !== undefined) {
      const record = ctx.state.findKey(key, expiredAtOrBefore);
      if (record !== undefined) {
        if (record.requestHash !== requestHash)
          return errorReply(
            422,
            'idempotency_key_conflict',
            'this Idempotency-Key was used with another request',
          );
        return { status: 201, json: record.responseJson, headers: { 'Idempotent-Replayed': 'true' } };
      }
    }
    const rejection = serviceRejection(request.service);
    if (rejection !== undefined) return rejection;
    const deployment = ctx.state.insertDeployment({
      service: request.service,
      version: request.version,
      clientReference: ctx.mode === 'reference' ? request.client_reference : undefined,
      idempotencyKey: key,
      requestHash,
      createdAt: new Date(now),
    });
    const created = providerReply(201, deployment);
    if (key !== undefined)
      ctx.state.insertKey(
        { key, requestHash, responseJson: created.json, createdAt: now },
        expiredAtOrBefore,
      );
    ctx.logger.info('provider.deployment_created', {
      deployment_id: deployment.deployment_id,
      keyed: key !== undefined,
    });
    return created;
  });
  if (reply.headers?.['Idempotent-Replayed'] === 'true')
    ctx.logger.info('provider.deployment_replayed', { mode: ctx.mode });
  return reply;
}

function listDeployments(ctx: Context, query: URLSearchParams): ProviderReply {
  if (!query.has('client_reference')) return providerReply(200, { deployments: ctx.state.listDeployments() });
  if (ctx.mode !== 'reference')
    return errorReply(
      400,
      'unsupported',
      `this provider (mode ${ctx.mode}) does not search by client_reference`,
    );
  const reference = query.get('client_reference') ?? '';
  if (reference.length < 1 || reference.length > 200)
    return errorReply(400, 'invalid_request', 'client_reference must be 1 to 200 characters');
  return providerReply(200, { deployments: ctx.state.listDeployments(reference) });
}

/** `POST /webhooks`: deduplicated by the `Idempotency-Key` header in every mode. */
function receiveWebhook(ctx: Context, value: unknown, header: string | string[] | undefined): ProviderReply {
  if (typeof header !== 'string' || header.length === 0)
    return errorReply(400, 'missing_idempotency_key', 'webhooks need an Idempotency-Key header');
  const problem = keyProblem(header);
  if (problem !== undefined) return problem;
  const delivery = ctx.state.transaction(() =>
    ctx.state.recordDelivery(header, JSON.stringify(value), new Date(ctx.clock.now())),
  );
  return delivery.first
    ? providerReply(201, { delivery: 'accepted', times_received: delivery.times_received })
    : providerReply(200, { delivery: 'duplicate', times_received: delivery.times_received });
}

/**
 * SHA-256 (hex) of a parsed request: zod's output lists the schema's fields in the schema's order,
 * so equal requests give equal text whatever order the caller sent the fields in.
 */
function requestFingerprint(request: DeploymentRequest): string {
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}
