/**
 * The bench's own MCP server: the reference server (create_note and the other reference tools on
 * SQLite, Streamable HTTP, dev mode) plus `create_note_plain`, the same note insert without
 * idempotency, registered here only, never in the reference server. Prints `{"url": ...}` on its
 * first stdout line; stops on SIGTERM or when stdin closes.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { IdemError } from '../packages/idem/src/core/errors.js';
import { readTool } from '../packages/idem/src/mcp/read-tool.js';
import { registerIdemTool } from '../packages/idem/src/mcp/register-idempotent-tool.js';
import { workspaceField } from '../packages/idem/src/mcp/idempotent-tool.js';
import { startHttpServer } from '../packages/idem-cli/src/server/http-server.js';
import { grantedWorkspaces } from '../packages/idem/src/mcp/idem-identity.js';
import { ReferenceApp } from '../packages/idem-cli/src/server/reference-app.js';
import type { ServerApp } from '../packages/idem-cli/src/server/server-app.js';
import { TokenRegistry, type Grant } from '../packages/idem-cli/src/server/token-registry.js';

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    synchronous: { type: 'string', default: 'FULL' },
  },
});
if (values.db === undefined) throw new Error('--db is required');
const synchronous = values.synchronous === 'NORMAL' ? 'NORMAL' : 'FULL';

const grant: Grant = { principal: 'dev', workspaces: ['default'] };
const reference = new ReferenceApp({ dbPath: values.db, registry: TokenRegistry.fixed(grant), synchronous });
// The same row create_note writes (reference notes table), in one bare transaction per call.
const insertPlain = reference.db.prepare(
  'INSERT INTO notes (note_id, workspace, body, created_at, operation_id) VALUES (?, ?, ?, ?, ?)',
);

// Built once, like the reference tools: a zod 4 schema takes about 0.5 ms to build.
const createNotePlain = readTool({
  name: 'create_note_plain',
  description: 'Bench only: creates a note without an idempotency key (not retry-safe).',
  inputSchema: { workspace: workspaceField, body: z.string().min(1).max(10_000) },
  outputShape: { resource_id: z.string(), note_id: z.string() },
  readOnly: false,
  handler: async (args, _principal, read) => {
    if (!grantedWorkspaces(read.credentials).includes(args.workspace)) {
      throw new IdemError('forbidden', 'principal may not act in this workspace');
    }
    const noteId = `note_${randomUUID().replaceAll('-', '')}`;
    insertPlain.run(noteId, args.workspace, args.body, reference.clock.now(), 'plain');
    return { status: 'succeeded', resource_id: noteId, note_id: noteId };
  },
});

const app: ServerApp = {
  store: reference.store,
  faults: reference.faults,
  registry: reference.registry,
  clock: reference.clock,
  logger: reference.logger,
  retentionMs: reference.retentionMs,
  tombstoneTtlMs: reference.tombstoneTtlMs,
  providerUrl: reference.providerUrl,
  deploymentPolicy: reference.deploymentPolicy,
  createMcpServer() {
    const server = reference.createMcpServer();
    registerIdemTool(server, createNotePlain);
    return server;
  },
  close: () => reference.close(),
};

const http = await startHttpServer(app, { host: '127.0.0.1', port: 0, devGrant: grant });
process.stdout.write(`${JSON.stringify({ url: http.url, pid: process.pid })}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await http.close();
  await app.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.stdin.on('end', () => void stop());
process.stdin.resume();
