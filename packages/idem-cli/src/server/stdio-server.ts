import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { attachAuthInfo } from 'idem/mcp';
import { grantAuthInfo } from './grant-auth-info.js';
import type { McpApp } from './server-app.js';
import { stdioInboundFilter } from './stdio-inbound-filter.js';
import type { Grant } from './token-registry.js';

/**
 * MCP over stdin/stdout for one identity. `grant` is asked for every message, so a token revoked in
 * the tokens file (or a file that fails to load) stops working here too; undefined refuses the call.
 * Input passes stdioInboundFilter first. stdout carries protocol messages only; everything else (logs, errors) goes to stderr. Resolves
 * with a function that closes the server; the process exits when stdin ends.
 */
export async function serveStdio(app: McpApp, grant: () => Grant | undefined): Promise<() => Promise<void>> {
  const server = app.createMcpServer();
  // Lines the SDK would drop without an answer are answered here (see stdioInboundFilter).
  const input = process.stdin.pipe(stdioInboundFilter((line) => void process.stdout.write(`${line}\n`)));
  const transport = new StdioServerTransport(input, process.stdout);
  await server.connect(transport);
  attachAuthInfo(transport, () => {
    const current = grant();
    return current === undefined ? undefined : grantAuthInfo(current, 'stdio');
  });
  process.stdin.once('end', () => {
    void server
      .close()
      .then(() => app.close())
      .finally(() => process.exit(0));
  });
  return () => server.close();
}
