import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { attachAuthInfo, principalAuthInfo } from '../mcp/attach-auth-info.js';
import type { ServerApp } from './server-app.js';
import type { Grant } from './token-registry.js';

/**
 * MCP over stdin/stdout for one principal. stdout carries protocol messages only; everything else
 * (logs, errors) goes to stderr. Resolves with a function that closes the server; the process exits
 * when stdin ends.
 */
export async function serveStdio(app: ServerApp, grant: Grant): Promise<() => Promise<void>> {
  const server = app.createMcpServer();
  const transport = new StdioServerTransport();
  await server.connect(transport);
  attachAuthInfo(transport, principalAuthInfo(grant.principal, 'stdio'));
  process.stdin.once('end', () => {
    void server
      .close()
      .then(() => app.close())
      .finally(() => process.exit(0));
  });
  return () => server.close();
}
