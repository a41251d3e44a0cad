import type { Client } from '@modelcontextprotocol/client';
import { connectHttp } from './mcp-fixtures.js';

/**
 * Connects to a server that prints nothing when it listens: retries every 100 ms until it answers,
 * and throws naming `what` (with its stderr) once `exited()` is true or 30 s have passed.
 */
export async function connectWhenReady(
  url: string,
  token: string,
  what: string,
  exited: () => boolean,
  stderr: () => string,
): Promise<Client> {
  for (const deadline = Date.now() + 30_000; ;) {
    const client = await connectHttp(url, token).catch((error: unknown) => {
      if (Date.now() > deadline || exited()) {
        throw new Error(`${what} did not start: ${String(error)}\n${stderr()}`);
      }
      return new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 100));
    });
    if (client !== undefined) return client;
  }
}
