import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * What the fault proxy does with one request:
 * - `pass`: forwards it and relays the reply;
 * - `drop_request`: closes the connection without forwarding (provably nothing was sent on);
 * - `drop_reply`: forwards it, reads the whole reply, then closes the connection unanswered;
 * - `delay_reply`: forwards it and relays the reply after `delayMs`;
 * - `duplicate`: forwards it twice (the second right after the first answered) and relays the first reply;
 * - `status`: answers `status` (429, 503) with `Retry-After: retryAfterSeconds` itself, forwarding nothing;
 * - `redirect`: answers 307 to the same path on the target (a well-behaved client repeats it there).
 */
export type FaultAction =
  | { kind: 'pass' }
  | { kind: 'drop_request' }
  | { kind: 'drop_reply' }
  | { kind: 'delay_reply'; delayMs: number }
  | { kind: 'duplicate' }
  | { kind: 'status'; status: number; retryAfterSeconds: number }
  | { kind: 'redirect' };

export interface FaultedRequest {
  method: string;
  path: string;
  body: string;
}

/**
 * A small HTTP fault proxy of the suite's own, on loopback, between a client and a server (the MCP
 * client and `idem serve`, the worker and the provider). `decide` picks each request's fault; the
 * counts say how many of each were injected.
 */
export class FaultProxy {
  readonly counts: Record<string, number> = {};
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #target: string;
  #healed = false;

  private constructor(
    target: string,
    readonly decide: (request: FaultedRequest) => FaultAction,
  ) {
    this.#target = target.replace(/\/$/, '');
    this.#server = createServer((req, res) => void this.#handle(req, res));
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  /** Listens on 127.0.0.1 (a free port unless given) in front of `target` (`http://host:port`). */
  static async start(
    target: string,
    decide: (request: FaultedRequest) => FaultAction,
    port = 0,
  ): Promise<FaultProxy> {
    const proxy = new FaultProxy(target, decide);
    await new Promise<void>((resolve, reject) => {
      proxy.#server.once('error', reject);
      proxy.#server.listen(port, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** From now on every request passes: the nemesis is over. */
  heal(): void {
    this.#healed = true;
  }

  /** Faults injected, all kinds but `pass`. */
  get injected(): number {
    return Object.entries(this.counts).reduce((sum, [kind, n]) => (kind === 'pass' ? sum : sum + n), 0);
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return;
    }
    const body = Buffer.concat(chunks);
    const request = { method: req.method ?? 'GET', path: req.url ?? '/', body: body.toString('utf8') };
    const action: FaultAction = this.#healed ? { kind: 'pass' } : this.decide(request);
    this.counts[action.kind] = (this.counts[action.kind] ?? 0) + 1;
    if (action.kind === 'drop_request') return void req.socket.destroy();
    if (action.kind === 'status') {
      res.writeHead(action.status, {
        'retry-after': String(action.retryAfterSeconds),
        'content-type': 'application/json',
      });
      return void res.end(JSON.stringify({ error: 'injected_fault', status: action.status }));
    }
    if (action.kind === 'redirect') {
      res.writeHead(307, { location: `${this.#target}${request.path}` });
      return void res.end();
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || ['host', 'connection', 'content-length', 'transfer-encoding'].includes(name))
        continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const forward = () =>
      fetch(`${this.#target}${request.path}`, {
        method: request.method,
        headers,
        redirect: 'manual',
        ...(request.method === 'GET' || request.method === 'HEAD' ? {} : { body }),
      }).then(async (response) => ({ response, text: Buffer.from(await response.arrayBuffer()) }));
    let reply: Awaited<ReturnType<typeof forward>>;
    try {
      reply = await forward();
      if (action.kind === 'duplicate') await forward().catch(() => undefined);
    } catch {
      return void req.socket.destroy();
    }
    if (action.kind === 'drop_reply') return void req.socket.destroy();
    if (action.kind === 'delay_reply') await new Promise((resolve) => setTimeout(resolve, action.delayMs));
    if (req.socket.destroyed) return;
    const out: Record<string, string> = {};
    reply.response.headers.forEach((value, name) => {
      if (!['content-length', 'transfer-encoding', 'connection', 'content-encoding'].includes(name))
        out[name] = value;
    });
    res.writeHead(reply.response.status, out);
    res.end(reply.text);
  }
}
