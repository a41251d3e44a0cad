// The upstream MCP server of the fault suite's proxy scenarios (stdio, started by `idem proxy`). Its
// ground truth is FAULTS_UPSTREAM_LOG: one JSON line per call it RECEIVED, written before it answers,
// so the checker counts effects and reads from here, never from the proxy's answers. Plain
// JavaScript: `idem proxy` starts it with node, which cannot load TypeScript. It is written on the
// low-level Server so that `bad_output` can answer what its declared output schema forbids (the
// McpServer would validate it before sending).
//
// Tools: record_call (mutating, the proxy's keyed tool), excluded_write (mutating, passed through by
// --exclude), read_calls (read-only), bad_output (mutating: applies, then answers structuredContent
// that does not fit its output schema).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import process from 'node:process';
import { Server } from '@modelcontextprotocol/server';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

const log = process.env.FAULTS_UPSTREAM_LOG;
if (log === undefined) throw new Error('FAULTS_UPSTREAM_LOG is required');
// Every upstream this run started, so that the suite can stop the ones a killed proxy left behind.
appendFileSync(`${log}.pids`, `${process.pid}\n`);

const labelOnly = {
  type: 'object',
  properties: { label: { type: 'string' } },
  required: ['label'],
  additionalProperties: false,
};

const tools = [
  {
    name: 'record_call',
    description: 'Records a call under its label and answers its sequence number.',
    inputSchema: labelOnly,
    annotations: { readOnlyHint: false, idempotentHint: false },
  },
  {
    name: 'excluded_write',
    description: 'Records a call under its label (the proxy passes it through with --exclude).',
    inputSchema: labelOnly,
    annotations: { readOnlyHint: false, destructiveHint: true },
  },
  {
    name: 'read_calls',
    description: 'Answers every call recorded so far (read-only).',
    inputSchema: labelOnly,
    outputSchema: {
      type: 'object',
      properties: { calls: { type: 'array', items: { type: 'string' } } },
      required: ['calls'],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: 'bad_output',
    description: 'Records a call, then answers structuredContent that does not fit its output schema.',
    inputSchema: labelOnly,
    outputSchema: {
      type: 'object',
      properties: { sequence: { type: 'integer' } },
      required: ['sequence'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: false, idempotentHint: false },
  },
];

const received = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

const server = new Server(
  { name: 'idem-faults-upstream', version: '1.0.0' },
  { capabilities: { tools: {} } },
);
server.setRequestHandler('tools/list', () => ({ tools }));
server.setRequestHandler('tools/call', (request) => {
  const { name } = request.params;
  const label = String(request.params.arguments?.label ?? '');
  if (!tools.some((tool) => tool.name === name)) {
    return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
  }
  appendFileSync(log, `${JSON.stringify({ tool: name, label })}\n`);
  const sequence = received().length;
  if (name === 'read_calls') {
    const calls = received();
    return { content: [{ type: 'text', text: JSON.stringify({ calls }) }], structuredContent: { calls } };
  }
  if (name === 'bad_output') {
    // Applied above; the answer breaks the declared schema (a string, and a field it does not declare).
    return {
      content: [{ type: 'text', text: `applied ${label} as call ${sequence}` }],
      structuredContent: { sequence: `call ${sequence}`, extra: true },
    };
  }
  return { content: [{ type: 'text', text: `recorded ${label} as call ${sequence}` }] };
});

const transport = new StdioServerTransport();
transport.onclose = () => process.exit(0);
process.stdin.on('end', () => process.exit(0));
await server.connect(transport);
