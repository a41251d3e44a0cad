import { systemClock, type Clock } from '../core/clock.js';

/** A JSON-RPC message as an MCP transport carries it (typed by the SDK in use). */
export type JsonRpcMessage = object;

/**
 * An MCP client transport as both SDK lines (v2's `Transport` from `@modelcontextprotocol/client`,
 * 1.x's from `@modelcontextprotocol/sdk`) define it, without importing either.
 */
export interface McpTransportLike {
  start(): Promise<void>;
  send(message: JsonRpcMessage, options?: unknown): Promise<void>;
  close(): Promise<void>;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?(message: JsonRpcMessage, extra?: unknown): void;
  readonly sessionId?: string | undefined;
  setProtocolVersion?(version: string): void;
  setSupportedProtocolVersions?(versions: string[]): void;
}

/**
 * What can go wrong with one request on the wire:
 * - `drop_request`: the request never reaches the server (the send looks successful);
 * - `drop_response`: the server receives it, acts and answers; the answer is swallowed;
 * - `delay_response`: the answer arrives `delayMs` late (on the injected clock);
 * - `close_after_send`: the request is handed to the transport, then the connection is closed
 *   before any answer can arrive (the server may or may not have acted);
 * - `close_before_response`: the answer arrives, is swallowed, and the connection is closed
 *   (the server acted; the client sees a dropped connection).
 */
export type TransportFault =
  'drop_request' | 'drop_response' | 'delay_response' | 'close_after_send' | 'close_before_response';

/** One armed transport fault: which fault, on which method and tool, after how many, how many times. */
export interface FaultRule {
  readonly fault: TransportFault;
  /** JSON-RPC method of the requests to hit. Default `tools/call`. */
  readonly method?: string;
  /** For `tools/call`: only calls of this tool. Default any tool. */
  readonly tool?: string;
  /** Matching requests let through unharmed before the first hit. Default 0. */
  readonly skip?: number;
  /** How many matching requests to hit. Default 1; `Infinity` for every one. */
  readonly times?: number;
  /** For `delay_response`. */
  readonly delayMs?: number;
}

/** One applied fault, for assertions and evidence. `response` is the swallowed or delayed answer. */
export interface FaultEvent {
  readonly fault: TransportFault;
  readonly method: string;
  readonly tool: string | undefined;
  readonly requestId: string | number;
  readonly response?: JsonRpcMessage;
}

/** How `TransportFaults` delays and reports the faults it injects. */
export interface TransportFaultsOptions {
  /** Drives `delay_response`. Default the system clock. */
  clock?: Clock;
  /** Called right after each fault took effect (e.g. to stop waiting for a swallowed answer). */
  onFault?: (event: FaultEvent) => void;
}

/** @internal A fault decided for one request, applied when its answer arrives. */
export type PendingFault = Omit<FaultEvent, 'response'> & { readonly delayMs: number };

interface ArmedRule {
  readonly rule: FaultRule;
  skip: number;
  remaining: number;
}

/**
 * Fault injection for MCP client transports (stdio, Streamable HTTP, in-memory: anything that
 * implements the `Transport` of SDK v2 or 1.x). Rules are shared by every transport this object wraps, so a
 * fault hits once even when the client under test reconnects with a new transport. Put it in your
 * own test suite:
 *
 * ```ts
 * const faults = new TransportFaults();
 * faults.inject({ fault: 'drop_response', tool: 'create_note' });
 * await client.connect(faults.wrap(new StreamableHTTPClientTransport(url)));
 * ```
 */
export class TransportFaults {
  readonly #rules: ArmedRule[] = [];
  readonly #events: FaultEvent[] = [];
  readonly clock: Clock;
  readonly #onFault: ((event: FaultEvent) => void) | undefined;

  constructor(options: TransportFaultsOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.#onFault = options.onFault;
  }

  /** Arms a rule. Rules are consulted in the order they were injected; the first match applies. */
  inject(rule: FaultRule): this {
    if (rule.fault === 'delay_response' && !(Number.isFinite(rule.delayMs) && (rule.delayMs ?? -1) >= 0)) {
      throw new TypeError('delay_response needs a non-negative delayMs');
    }
    this.#rules.push({ rule, skip: rule.skip ?? 0, remaining: rule.times ?? 1 });
    return this;
  }

  /** Disarms every rule (the history stays). */
  clear(): void {
    this.#rules.length = 0;
  }

  /** Every fault applied so far, oldest first. */
  get events(): readonly FaultEvent[] {
    return this.#events;
  }

  /** Rules that still have hits left. */
  get armed(): number {
    return this.#rules.filter((r) => r.remaining > 0).length;
  }

  /** Wraps a client transport; pass the result to `Client.connect`. */
  wrap(transport: McpTransportLike): McpTransportLike {
    return new FaultyTransport(transport, this);
  }

  /** @internal The fault for an outgoing request, consuming one hit of the matching rule. */
  take(message: JsonRpcMessage): PendingFault | undefined {
    const request = asRequest(message);
    if (request === undefined) return undefined;
    for (const armed of this.#rules) {
      const { rule } = armed;
      if (armed.remaining <= 0) continue;
      if ((rule.method ?? 'tools/call') !== request.method) continue;
      if (rule.tool !== undefined && rule.tool !== request.tool) continue;
      if (armed.skip > 0) {
        armed.skip -= 1;
        continue;
      }
      armed.remaining -= 1;
      return { fault: rule.fault, ...request, delayMs: rule.delayMs ?? 0 };
    }
    return undefined;
  }

  /** @internal */
  record(event: FaultEvent): void {
    this.#events.push(event);
    this.#onFault?.(event);
  }
}

interface MessageFields {
  readonly method?: unknown;
  readonly id?: unknown;
  readonly params?: { readonly name?: unknown };
}

function asRequest(
  message: JsonRpcMessage,
): { method: string; tool: string | undefined; requestId: string | number } | undefined {
  const { method, id, params } = message as MessageFields;
  if (typeof method !== 'string' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
  const tool = method === 'tools/call' && typeof params?.name === 'string' ? params.name : undefined;
  return { method, tool, requestId: id };
}

/** The id of a response (a message with an id and no method), or undefined. */
function responseId(message: JsonRpcMessage): string | number | undefined {
  const { method, id } = message as MessageFields;
  if (method !== undefined) return undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : undefined;
}

/** One wrapped transport. Everything not faulted is forwarded unchanged. */
class FaultyTransport implements McpTransportLike {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JsonRpcMessage, extra?: unknown) => void;
  readonly #pending = new Map<string | number, PendingFault>();
  #closed = false;

  constructor(
    private readonly inner: McpTransportLike,
    private readonly faults: TransportFaults,
  ) {
    inner.onclose = () => this.#signalClose();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => this.#receive(message, extra);
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  setProtocolVersion(version: string): void {
    this.inner.setProtocolVersion?.(version);
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions?.(versions);
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  async close(): Promise<void> {
    await this.inner.close();
    this.#signalClose();
  }

  async send(message: JsonRpcMessage, options?: unknown): Promise<void> {
    const fault = this.faults.take(message);
    if (fault === undefined) return this.inner.send(message, options);
    switch (fault.fault) {
      case 'drop_request':
        this.faults.record(strip(fault));
        return;
      case 'close_after_send': {
        // Not awaited: over Streamable HTTP the send only settles once the answer was read.
        const sent = this.inner.send(message, options).catch(() => undefined);
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.#drop();
        this.faults.record(strip(fault));
        await sent;
        return;
      }
      default:
        this.#pending.set(fault.requestId, fault);
        return this.inner.send(message, options);
    }
  }

  #receive(message: JsonRpcMessage, extra?: unknown): void {
    if (this.#closed) return;
    const id = responseId(message);
    const fault = id === undefined ? undefined : this.#pending.get(id);
    if (fault === undefined) return this.onmessage?.(message, extra);
    this.#pending.delete(fault.requestId);
    switch (fault.fault) {
      case 'drop_response':
        this.faults.record({ ...strip(fault), response: message });
        return;
      case 'close_before_response':
        this.#drop();
        this.faults.record({ ...strip(fault), response: message });
        return;
      case 'delay_response':
        this.faults.record({ ...strip(fault), response: message });
        this.faults.clock.sleep(fault.delayMs).then(
          () => {
            if (!this.#closed) this.onmessage?.(message, extra);
          },
          () => undefined,
        );
        return;
      default:
        this.onmessage?.(message, extra);
    }
  }

  /** Closes the underlying connection and tells the client at once, as a reset connection would. */
  #drop(): void {
    void this.inner.close().catch(() => undefined);
    this.#signalClose();
  }

  #signalClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onclose?.();
  }
}

function strip(pending: PendingFault): FaultEvent {
  return { fault: pending.fault, method: pending.method, tool: pending.tool, requestId: pending.requestId };
}
