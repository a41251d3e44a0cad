import { Client as ClientV2, type Tool } from '@modelcontextprotocol/client';
import { InMemoryTransport as InMemoryV2, McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as InMemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { attachAuthInfo, principalAuthInfo } from '../../packages/idem/src/mcp/attach-auth-info.js';
import type { IdemTool } from '../../packages/idem/src/mcp/idem-tool.js';
import { registerIdemTool as registerV2 } from '../../packages/idem/src/mcp/register-idempotent-tool.js';
import { registerIdemTool as registerV1 } from '../../packages/idem/src/mcp/v1/register-tool-v1.js';

/** What a test sees of one tools/call. */
export interface SdkCallResult {
  readonly isError: boolean;
  readonly sc: Record<string, unknown> & {
    status?: string;
    error?: { code: string; message: string; retryable: boolean };
    operation_id?: string;
    resource_id?: string;
    replayed?: boolean;
  };
  readonly content: unknown;
}

/** A connected pair: an SDK McpServer carrying Idem tools and an SDK client of the same line. */
export interface SdkSession {
  listTools(): Promise<Tool[]>;
  call(name: string, args: unknown): Promise<SdkCallResult>;
  close(): Promise<void>;
}

/** One SDK line under test: `idem/mcp` on v2, or `idem/mcp-v1` on 1.x, each with its own client. */
export interface SdkUnderTest {
  readonly name: string;
  /** Registers `tools` on a new McpServer; with a principal, every request is authenticated as it. */
  connect(tools: readonly IdemTool[], principal?: string): Promise<SdkSession>;
}

function asResult(result: object): SdkCallResult {
  const raw = result as { isError?: unknown; structuredContent?: unknown; content?: unknown };
  if (typeof raw.structuredContent !== 'object' || raw.structuredContent === null) {
    throw new Error(`no structuredContent: ${JSON.stringify(raw)}`);
  }
  return {
    isError: raw.isError === true,
    sc: raw.structuredContent as SdkCallResult['sc'],
    content: raw.content,
  };
}

export const SDK_V2: SdkUnderTest = {
  name: 'SDK v2 (idem/mcp)',
  async connect(tools, principal) {
    const server = new McpServerV2({ name: 'under-test', version: '0.0.0' });
    for (const tool of tools) registerV2(server, tool);
    const [clientSide, serverSide] = InMemoryV2.createLinkedPair();
    await server.connect(serverSide);
    if (principal !== undefined) attachAuthInfo(serverSide, principalAuthInfo(principal));
    const client = new ClientV2({ name: 'test-v2', version: '0.0.0' });
    await client.connect(clientSide);
    return {
      listTools: async () => (await client.listTools()).tools,
      call: async (name, args) =>
        asResult(await client.callTool({ name, arguments: args as Record<string, unknown> })),
      close: async () => {
        await client.close();
        await server.close();
      },
    };
  },
};

export const SDK_V1: SdkUnderTest = {
  name: 'SDK 1.x (idem/mcp-v1)',
  async connect(tools, principal) {
    const server = new McpServerV1({ name: 'under-test', version: '0.0.0' });
    for (const tool of tools) registerV1(server, tool);
    const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
    await server.connect(serverSide);
    if (principal !== undefined) attachAuthInfo(serverSide, principalAuthInfo(principal));
    const client = new ClientV1({ name: 'test-v1', version: '0.0.0' });
    await client.connect(clientSide);
    return {
      listTools: async () => (await client.listTools()).tools as Tool[],
      call: async (name, args) =>
        asResult(await client.callTool({ name, arguments: args as Record<string, unknown> })),
      close: async () => {
        await client.close();
        await server.close();
      },
    };
  },
};

export const SDKS: readonly SdkUnderTest[] = [SDK_V2, SDK_V1];
