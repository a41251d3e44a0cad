import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One `tools/call` the proxy saw: the tool, its arguments (key included), and what became of its answer. */
export interface SeenCall {
  readonly tool: string;
  readonly args: Record<string, unknown>;
  /** `sent`: forwarded, no answer yet. */
  fate: 'sent' | 'passed' | 'dropped' | 'held';
}

/**
 * What the proxy does to the answer of the next `tools/call` of `tool`: `drop` lets the request
 * reach the server, reads its whole answer, then cuts the caller's connection (the answer is lost
 * on the way back); `hold` reads the answer and never sends it (until `close()`). One fault each.
 */
export type Fault = { readonly fault: 'drop' | 'hold'; readonly tool: string };

/**
 * A small HTTP proxy on loopback in front of an MCP server over Streamable HTTP: forwards every
 * request and answer as they are, except the answer of a `tools/call` a fault is armed for.
 */
export class FaultProxy {
  readonly calls: SeenCall[] = [];
  readonly #target: URL;
  readonly #faults: Fault[] = [];
  readonly #held: ServerResponse[] = [];
  readonly #waiters: Array<() => void> = [];
  #server: Server | undefined;
  #url = '';

  constructor(target: string) {
    this.#target = new URL(target);
  }

  /** The proxy's MCP endpoint (same path as the target's). */
  get url(): string {
    return this.#url;
  }

  arm(fault: Fault): this {
    this.#faults.push(fault);
    return this;
  }

  /** The calls of `tool` seen so far. */
  callsOf(tool: string): SeenCall[] {
    return this.calls.filter((call) => call.tool === tool);
  }

  /** Resolves once `count` calls of `tool` have an answer the server sent (passed, dropped or held). */
  async answered(tool: string, count: number, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.callsOf(tool).filter((call) => call.fate !== 'sent').length < count) {
      if (Date.now() > deadline) throw new Error(`no ${count} answers of ${tool} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        this.#waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => void this.#forward(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    this.#server = server;
    this.#url = `http://127.0.0.1:${port}${this.#target.pathname}`;
    return this;
  }

  async close(): Promise<void> {
    for (const res of this.#held.splice(0)) res.socket?.destroy();
    const server = this.#server;
    this.#server = undefined;
    if (server === undefined) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readAll(req);
    const call = toolCall(body);
    const fault = call === undefined ? undefined : this.#take(call.tool);
    const seen: SeenCall | undefined =
      call === undefined ? undefined : { tool: call.tool, args: call.args, fate: 'sent' };
    if (seen !== undefined) this.calls.push(seen);
    const headers = { ...req.headers, host: this.#target.host };
    const upstream = request(this.#target, { method: req.method, headers }, (answer) => {
      void readAll(answer).then((payload) => {
        if (seen !== undefined)
          seen.fate = fault === undefined ? 'passed' : fault.fault === 'drop' ? 'dropped' : 'held';
        this.#wake();
        if (fault?.fault === 'drop') {
          res.socket?.destroy();
          return;
        }
        if (fault?.fault === 'hold') {
          this.#held.push(res);
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.end(payload);
      });
    });
    upstream.on('error', () => res.socket?.destroy());
    upstream.end(body);
  }

  #take(tool: string): Fault | undefined {
    const index = this.#faults.findIndex((fault) => fault.tool === tool);
    return index < 0 ? undefined : this.#faults.splice(index, 1)[0];
  }

  #wake(): void {
    for (const wake of this.#waiters.splice(0)) wake();
  }
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
}

function toolCall(body: Buffer): { tool: string; args: Record<string, unknown> } | undefined {
  try {
    const message = JSON.parse(body.toString('utf8')) as {
      method?: unknown;
      params?: { name?: unknown; arguments?: unknown };
    };
    if (message.method !== 'tools/call' || typeof message.params?.name !== 'string') return undefined;
    const args = message.params.arguments;
    return {
      tool: message.params.name,
      args: typeof args === 'object' && args !== null ? (args as Record<string, unknown>) : {},
    };
  } catch {
    return undefined;
  }
}
