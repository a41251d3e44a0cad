// An upstream for test/proxy/proxy-truth.test.ts, written on the low-level Server so that it can answer
// what a well-behaved SDK server never would: structuredContent that does not fit its own output
// schema, a JSON-RPC error after it acted, an answer of any size, progress, an elicitation request,
// and a tool list that changes while it runs. Every call is recorded in UPSTREAM_LOG when it arrives
// (one JSON line: tool and label): the ground truth of what reached it. Plain JavaScript: child
// processes cannot load TypeScript.
//
// Environment: UPSTREAM_LOG (required), UPSTREAM_HTTP_PORT (serve Streamable HTTP on
// 127.0.0.1:PORT/mcp instead of stdio).
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProtocolError, Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';

const log = process.env.UPSTREAM_LOG;
if (log === undefined) throw new Error('UPSTREAM_LOG is required');

const labelled = (extra = {}) => ({
  type: 'object',
  properties: { label: { type: 'string' }, ...extra },
  required: ['label'],
});

/** Whether grow_tools has run: then late_call is listed too (for the life of this process). */
let grown = false;

function tools() {
  return [
    {
      name: 'shaped_call',
      description: 'Records a call and answers structuredContent that does not fit its own output schema.',
      // grow_tools changes its input schema too: a new version of the tool behind the proxy.
      inputSchema: labelled(grown ? { note: { type: 'string' } } : {}),
      outputSchema: {
        type: 'object',
        properties: { n: { type: 'integer' } },
        required: ['n'],
        additionalProperties: false,
      },
    },
    {
      name: 'rpc_error_call',
      description: 'Records a call, then answers a JSON-RPC error with the given code.',
      inputSchema: labelled({ code: { type: 'integer' } }),
    },
    {
      name: 'big_call',
      description: 'Records a call and answers a text of `bytes` characters.',
      inputSchema: labelled({ bytes: { type: 'integer' } }),
    },
    {
      name: 'progress_call',
      description: 'Records a call and reports three steps of progress before answering.',
      inputSchema: labelled(),
    },
    {
      name: 'elicit_call',
      description: 'Records a call, asks its client for input (elicitation/create) and answers what came.',
      inputSchema: labelled(),
    },
    {
      name: 'grow_tools',
      description:
        'Records a call, lists late_call and a changed shaped_call from now on and says so (tools/list_changed).',
      inputSchema: labelled(),
    },
    ...(grown
      ? [{ name: 'late_call', description: 'Listed after grow_tools.', inputSchema: labelled() }]
      : []),
    {
      name: 'read_secret',
      description: 'Records a call and answers a secret.',
      inputSchema: labelled(),
      annotations: { readOnlyHint: true },
    },
  ];
}

const text = (value) => ({ content: [{ type: 'text', text: value }] });

function server() {
  const mcp = new Server(
    { name: 'proxy-truth-upstream', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true }, logging: {} } },
  );
  mcp.setRequestHandler('tools/list', () => ({ tools: tools() }));
  mcp.setRequestHandler('tools/call', async (request, ctx) => {
    const { name, arguments: args = {} } = request.params;
    if (!tools().some((tool) => tool.name === name))
      throw new ProtocolError(-32602, `Tool ${name} not found`);
    appendFileSync(log, `${JSON.stringify({ tool: name, label: args.label })}\n`);
    switch (name) {
      case 'shaped_call':
        return { ...text(`did ${args.label}`), structuredContent: { wrong: args.label } };
      case 'rpc_error_call':
        throw new ProtocolError(args.code ?? -32602, `refused ${args.label} after recording it`);
      case 'big_call':
        return text('x'.repeat(args.bytes ?? 10));
      case 'progress_call': {
        const token = request.params._meta?.progressToken;
        await mcp.sendLoggingMessage({ level: 'info', logger: 'truth', data: `working on ${args.label}` });
        // A pause after each step, as work between steps takes: the SDK's client hands notifications
        // to their handlers a turn later than responses, so one sent right before the answer is lost.
        if (token !== undefined)
          for (let step = 1; step <= 3; step++) {
            await ctx.mcpReq.notify({
              method: 'notifications/progress',
              params: { progressToken: token, progress: step, total: 3, message: `step ${step}` },
            });
            await sleep(50);
          }
        return text(`progressed ${args.label}`);
      }
      case 'elicit_call':
        try {
          const answer = await ctx.mcpReq.send(
            {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: 'Confirm?',
                requestedSchema: { type: 'object', properties: {} },
              },
            },
            { timeout: 10_000 },
          );
          return text(`elicited ${JSON.stringify(answer)}`);
        } catch (error) {
          return { ...text(`elicitation refused: ${error.message}`), isError: true };
        }
      case 'grow_tools':
        grown = true;
        await mcp.sendToolListChanged();
        return text(`grew for ${args.label}`);
      default:
        return text(`${name} ${args.label}`);
    }
  });
  return mcp;
}

const port = process.env.UPSTREAM_HTTP_PORT;
if (port === undefined) {
  await server().connect(new StdioServerTransport());
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
