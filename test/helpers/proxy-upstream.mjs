// A small MCP server for test/proxy/: the upstream `idem proxy` stands in front of, with a record of
// every call it RECEIVED (one line per call, written when the call arrives, before any delay), so
// that a test can count forwards; a slow call to kill it (or the proxy) mid-call; and an input
// schema that changes with the environment. Plain JavaScript: child processes cannot load TypeScript.
//
// Environment: UPSTREAM_LOG (the file of received calls, required), UPSTREAM_VARIANT (`a` default,
// `b` adds an argument to record_call), UPSTREAM_PID_FILE (its pid is written there),
// UPSTREAM_HTTP_PORT (serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio), UPSTREAM_ERA
// (`2026` over HTTP: serve only the 2026-07-28 revision, refusing 2025 traffic, with the SDK's
// createMcpHandler).
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

const log = process.env.UPSTREAM_LOG;
if (log === undefined) throw new Error('UPSTREAM_LOG is required');
const variant = process.env.UPSTREAM_VARIANT ?? 'a';
if (process.env.UPSTREAM_PID_FILE) writeFileSync(process.env.UPSTREAM_PID_FILE, String(process.pid));

const received = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

function server() {
  const mcp = new McpServer({ name: 'proxy-test-upstream', version: '1.0.0' });
  mcp.registerTool(
    'record_call',
    {
      description: 'Records a call under a label (slowly with delay_ms) and answers its sequence number.',
      inputSchema: z.object({
        label: z.string(),
        delay_ms: z.number().int().min(0).optional(),
        ...(variant === 'b' ? { priority: z.number().int().optional() } : {}),
      }),
      annotations: { readOnlyHint: false, idempotentHint: false },
    },
    async ({ label, delay_ms }) => {
      appendFileSync(log, `${JSON.stringify({ tool: 'record_call', label })}\n`);
      const n = received().length;
      if (delay_ms) await sleep(delay_ms);
      return { content: [{ type: 'text', text: `recorded ${label} as call ${n}` }] };
    },
  );
  mcp.registerTool(
    'fail_call',
    {
      description: 'Records a call and answers a tool error.',
      inputSchema: z.object({ label: z.string() }),
    },
    async ({ label }) => {
      appendFileSync(log, `${JSON.stringify({ tool: 'fail_call', label })}\n`);
      return {
        content: [{ type: 'text', text: `refused ${label} at call ${received().length}` }],
        isError: true,
      };
    },
  );
  mcp.registerTool(
    'keyed_call',
    {
      description:
        'Records a call once per request_id (a retry with the same request_id answers the first result), slowly with delay_ms.',
      inputSchema: z.object({
        label: z.string(),
        request_id: z.string(),
        delay_ms: z.number().int().min(0).optional(),
      }),
    },
    async ({ label, request_id, delay_ms }) => {
      const seen = received().some((line) => JSON.parse(line).request_id === request_id);
      appendFileSync(log, `${JSON.stringify({ tool: 'keyed_call', label, request_id, replay: seen })}\n`);
      if (seen) return { content: [{ type: 'text', text: `recorded ${label} once for ${request_id}` }] };
      if (delay_ms) await sleep(delay_ms);
      return { content: [{ type: 'text', text: `recorded ${label} once for ${request_id}` }] };
    },
  );
  mcp.registerTool(
    'count_calls',
    {
      description: 'How many calls were received.',
      inputSchema: z.object({}),
      outputSchema: z.object({ calls: z.array(z.string()) }),
      annotations: { readOnlyHint: true },
    },
    async () => {
      const calls = received();
      return { content: [{ type: 'text', text: JSON.stringify({ calls }) }], structuredContent: { calls } };
    },
  );
  return mcp;
}

const port = process.env.UPSTREAM_HTTP_PORT;
if (port === undefined) {
  await server().connect(new StdioServerTransport());
} else if (process.env.UPSTREAM_ERA === '2026') {
  const http = createServer(toNodeHandler(createMcpHandler(() => server(), { legacy: 'reject' })));
  http.listen(Number(port), '127.0.0.1', () => process.stderr.write(`upstream listening on ${port}\n`));
} else {
  const http = createServer(async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const mcp = server();
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    await mcp.connect(transport);
    await transport.handleRequest(req, res, JSON.parse(Buffer.concat(chunks).toString('utf8')));
  });
  http.listen(Number(port), '127.0.0.1', () => process.stderr.write(`upstream listening on ${port}\n`));
}
