import { trace } from '@opentelemetry/api';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { silentLogger } from '../../packages/idem/src/core/logger.js';
import { Executor } from '../../packages/idem/src/executor/executor.js';
import { attachAuthInfo, principalAuthInfo } from '../../packages/idem/src/mcp/attach-auth-info.js';
import { idempotentTool } from '../../packages/idem/src/mcp/idempotent-tool.js';
import { registerIdemTool } from '../../packages/idem/src/mcp/v1/register-tool-v1.js';
import { memoryStore } from '../../packages/idem/src/testing/memory-store.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const PARENT_SPAN = 'b7ad6b7169203331';

afterEach(() => trace.disable());

describe('tool call spans (SDK 1.x McpServer, idem/mcp-v1)', () => {
  it("continues the caller's trace from _meta and says executed, then replayed", async () => {
    const spans = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
    trace.setGlobalTracerProvider(provider);
    const executor = new Executor({ store: memoryStore(), authorize: () => true, logger: silentLogger });
    const server = new McpServer({ name: 'v1-otel', version: '0.0.0' });
    registerIdemTool(
      server,
      idempotentTool(executor, {
        name: 'open_ticket',
        version: 2,
        description: 'Opens a ticket.',
        inputSchema: z.object({ title: z.string() }),
        effect: () => ({ resource_id: 't1' }),
      }),
    );
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    attachAuthInfo(serverSide, principalAuthInfo('alice'));
    const client = new Client({ name: 'v1-client', version: '0.0.0' });
    await client.connect(clientSide);
    try {
      const call = {
        name: 'open_ticket',
        arguments: { workspace: 'w1', idempotency_key: 'v1-key', title: 'secret title' },
        _meta: { traceparent: `00-${TRACE_ID}-${PARENT_SPAN}-01` },
      };
      await client.callTool(call);
      await client.callTool(call);
      const calls = spans.getFinishedSpans().filter((s) => s.name === 'tools/call open_ticket');
      expect(calls.map((s) => s.attributes['idem.outcome'])).toEqual(['executed', 'replayed']);
      expect(calls.every((s) => s.spanContext().traceId === TRACE_ID)).toBe(true);
      expect(calls.every((s) => s.parentSpanContext?.spanId === PARENT_SPAN)).toBe(true);
      expect(calls[0]?.attributes['idem.operation.version']).toBe(2);
      expect(JSON.stringify(calls.map((s) => s.attributes))).not.toMatch(/v1-key|secret title/);
    } finally {
      await client.close();
      await server.close();
      await provider.shutdown();
    }
  });
});
