import type { McpServer, Transport } from '@modelcontextprotocol/server';
import { serveStdio as serveStdioEras, StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { attachAuthInfo, type PrincipalAuthInfo } from 'idem/mcp';
import { grantAuthInfo } from './grant-auth-info.js';
import type { McpApp } from './server-app.js';
import { stdioInboundFilter } from './stdio-inbound-filter.js';
import type { Grant } from './token-registry.js';

/**
 * MCP over stdin/stdout for one identity, in either era: the SDK's serveStdio decides from the
 * opening message (an `initialize` pins the connection to a 2025 revision; a `server/discover` or a
 * request with the 2026-07-28 `_meta` envelope, to the new one) and serves it from one McpServer of
 * the application's factory. `grant` is asked for every message, so a token revoked in the tokens
 * file (or a file that fails to load) stops working here too; undefined refuses the call. Input
 * passes stdioInboundFilter first. stdout carries protocol messages only; everything else (logs,
 * errors) goes to stderr. Resolves with a function that closes the server; the process exits when
 * stdin ends.
 */
export async function serveStdio(app: McpApp, grant: () => Grant | undefined): Promise<() => Promise<void>> {
  // Lines the SDK would drop without an answer are answered here (see stdioInboundFilter).
  const input = process.stdin.pipe(stdioInboundFilter((line) => void process.stdout.write(`${line}\n`)));
  const authInfo = (): PrincipalAuthInfo | undefined => {
    const current = grant();
    return current === undefined ? undefined : grantAuthInfo(current, 'stdio');
  };
  const handle = serveStdioEras(() => withIdentity(app.createMcpServer(), authInfo), {
    transport: new StdioServerTransport(input, process.stdout),
    onerror: (error) => app.logger.info('stdio.error', { error: error.name }),
  });
  process.stdin.once('end', () => {
    void handle
      .close()
      .then(() => app.close())
      .finally(() => process.exit(0));
  });
  return () => handle.close();
}

/**
 * The server, whose transport (the channel serveStdio connects it to) puts the caller's identity
 * on every incoming message once connected, as HTTP authentication does per request.
 */
function withIdentity(server: McpServer, authInfo: () => PrincipalAuthInfo | undefined): McpServer {
  const connect = server.connect.bind(server);
  server.connect = async (transport: Transport) => {
    await connect(transport);
    attachAuthInfo(transport, authInfo);
  };
  return server;
}
