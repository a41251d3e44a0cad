import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP proxy in front of a real server (PostgreSQL here): `stop()` closes the port and
 * cuts every connection, as a server that goes away does; `start()` listens on the same port again.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<Socket>();
  #server: Server | undefined;
  #port = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  get port(): number {
    return this.#port;
  }

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.#target.port, this.#target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.once('close', () => this.#sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.once('close', () => upstream.destroy());
      upstream.once('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    this.#port = typeof address === 'object' && address !== null ? address.port : 0;
    this.#server = server;
  }

  /** Cuts every open connection (both sides) but keeps listening. */
  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
  }

  /** Stops listening (new connections are refused) and cuts every open connection. */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    this.cut();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
