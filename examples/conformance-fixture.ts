import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  createMcpHandler,
  hostHeaderValidationResponse,
  inputRequired,
  localhostAllowedHostnames,
  McpServer,
  type CallToolResult,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { Executor } from 'idem';
import { openSqlite, SqliteStore } from 'idem/sqlite';
import { principalAuthInfo, registerIdempotentTool } from 'idem/mcp';

// A server built with Idem for the official MCP conformance suite (scripts/conformance.mjs): the
// SDK's createMcpHandler serving the 2026-07-28 revision and the 2025 ones from /mcp on IDEM_PORT
// (default 3000, loopback), in dev mode (every request acts as the principal `dev`), Idem's
// receipts in SQLite (IDEM_DB, default ./conformance-fixture.sqlite). It lists one Idem tool
// (create_note) and the suite's fixture tools (test_simple_text, ...; IDEM_FIXTURE=minimal lists
// the Idem tool alone: the plain server Idem's own doors are compared with). Set IDEM_LEGACY=reject
// to refuse 2025 traffic (a server of the new revision only).

const db = openSqlite(process.env.IDEM_DB ?? './conformance-fixture.sqlite');
db.exec('CREATE TABLE IF NOT EXISTS notes (id TEXT PRIMARY KEY, workspace TEXT, body TEXT)');
const executor = new Executor({
  store: new SqliteStore(db),
  authorize: (principal, workspace) => principal === 'dev' && workspace === 'default',
});

const IMAGE =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
const AUDIO = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=';

/** One McpServer per request (the handler's factory): the Idem tool and the suite's fixtures. */
function fixtureServer(): McpServer {
  const server = new McpServer({ name: 'idem-conformance-fixture', version: '1.0.0' });
  registerIdempotentTool(server, executor, {
    name: 'create_note',
    version: 1,
    description: 'Creates a note; a retry with the same idempotency_key replays the first result.',
    inputSchema: z.object({ body: z.string().min(1).max(1000) }),
    effect: (tx, args) => {
      const id = `note_${crypto.randomUUID()}`;
      tx.prepare('INSERT INTO notes VALUES (?, ?, ?)').run(id, args.workspace, args.body);
      return { resource_id: id, note_id: id };
    },
  });
  if (process.env.IDEM_FIXTURE === 'minimal') return server;
  const fixed = (name: string, description: string, result: CallToolResult) =>
    server.registerTool(name, { description }, () => result);
  fixed('test_simple_text', 'Answers a simple text.', {
    content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
  });
  fixed('test_image_content', 'Answers an image.', {
    content: [{ type: 'image', data: IMAGE, mimeType: 'image/png' }],
  });
  fixed('test_audio_content', 'Answers an audio clip.', {
    content: [{ type: 'audio', data: AUDIO, mimeType: 'audio/wav' }],
  });
  fixed('test_embedded_resource', 'Answers an embedded resource.', {
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  });
  fixed('test_multiple_content_types', 'Answers text, an image and a resource.', {
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: IMAGE, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  });
  server.registerTool('test_error_handling', { description: 'Always fails.' }, () => {
    throw new Error('This tool intentionally returns an error for testing');
  });
  server.registerTool(
    'test_tool_with_progress',
    { description: 'Reports progress when the call carries a progress token.' },
    async (ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined) {
        for (const progress of [0, 50, 100]) {
          await ctx.mcpReq.notify({
            method: 'notifications/progress',
            params: { progressToken: token, progress, total: 100, message: `step ${progress}` },
          });
        }
      }
      return { content: [{ type: 'text', text: String(token ?? 'no-progress-token') }] };
    },
  );
  // The server-stateless scenario's diagnostic tools.
  server.registerTool(
    'test_missing_capability',
    { description: 'Needs the sampling capability (asks through an input request).' },
    (ctx) =>
      ctx.mcpReq.inputResponses?.['llm_answer'] === undefined
        ? inputRequired({
            inputRequests: {
              llm_answer: inputRequired.createMessage({
                messages: [{ role: 'user', content: { type: 'text', text: 'Reply: pong' } }],
                maxTokens: 16,
              }),
            },
          })
        : { content: [{ type: 'text', text: 'sampled' }] },
  );
  fixed('test_streaming_elicitation', 'Answers without asking anything.', {
    content: [{ type: 'text', text: 'no requests on this stream' }],
  });
  server.registerTool('test_logging_tool', { description: 'Logs at info.' }, async (ctx) => {
    await ctx.mcpReq.log('info', 'test_logging_tool ran');
    return { content: [{ type: 'text', text: 'logged' }] };
  });
  return server;
}

const handler = createMcpHandler(fixtureServer, {
  legacy: process.env.IDEM_LEGACY === 'reject' ? 'reject' : 'stateless',
});
const dev = principalAuthInfo('dev');
const allowed = localhostAllowedHostnames();
const serve = toNodeHandler({
  fetch: async (request) =>
    hostHeaderValidationResponse(request, allowed) ?? handler.fetch(request, { authInfo: dev }),
});
const port = Number(process.env.IDEM_PORT ?? 3000);
createServer((req, res) => {
  if ((req.url ?? '').split('?')[0] !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  void serve(req, res);
}).listen(port, '127.0.0.1', () => {
  process.stderr.write(`${JSON.stringify({ event: 'idem.serving', url: `http://127.0.0.1:${port}/mcp` })}\n`);
});
