import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CLI, REPO_ROOT, cleanEnv, type Structured } from './mcp-fixtures.js';

/**
 * SDK 1.x clients (`@modelcontextprotocol/sdk`), for the direction "1.x client, v2 server": the
 * reference server runs on SDK v2, and agents on 1.x must keep working against it.
 */
export type V1Client = Client;

/** Connects and lists tools, so that the 1.x client validates every result against its schema. */
async function ready(client: Client): Promise<Client> {
  await client.listTools();
  return client;
}

export async function connectHttpV1(url: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'idem-e2e-v1', version: '0.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      ...(token === undefined ? {} : { requestInit: { headers: { Authorization: `Bearer ${token}` } } }),
    }),
  );
  return ready(client);
}

/** Spawns `idem serve --stdio` (the built CLI) under a 1.x stdio client transport. */
export async function connectStdioV1(dbPath: string): Promise<Client> {
  const client = new Client({ name: 'idem-e2e-v1-stdio', version: '0.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [CLI, 'serve', '--stdio', '--db', dbPath],
      cwd: REPO_ROOT,
      env: cleanEnv(),
      stderr: 'ignore',
    }),
  );
  return ready(client);
}

export async function callToolV1(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<{ isError: boolean; sc: Structured }> {
  const raw = await client.callTool({ name, arguments: args });
  if (raw.structuredContent === undefined) throw new Error(`no structuredContent: ${JSON.stringify(raw)}`);
  return { isError: raw.isError === true, sc: raw.structuredContent as Structured };
}
