import { DurableObject } from 'cloudflare:workers';
import { createMcpHandler, McpServer, type AuthInfo } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { Executor, IdemError } from 'idem';
import { DurableObjectStore, type DurableObjectSql } from 'idem/cloudflare';
import { idempotentTool, readTool, registerIdemTool } from 'idem/mcp';

interface Env {
  IDEM: DurableObjectNamespace<IdemObject>;
}

// Dev mode: every request acts as the principal `dev`. Put your own token check here (see the
// Cloudflare guide) before deploying anywhere but your own machine.
const DEV: AuthInfo = { token: 'dev', clientId: 'dev', scopes: [], extra: { principal: 'dev' } };

/**
 * One object per workspace: its own SQLite database holds the workspace's notes and Idem's
 * receipts, and its MCP handler serves the calls routed to it. A note and its receipt commit in one
 * `transactionSync`, or neither does.
 */
export class IdemObject extends DurableObject<Env> {
  readonly #mcp: ReturnType<typeof createMcpHandler>;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      'CREATE TABLE IF NOT EXISTS notes (note_id TEXT PRIMARY KEY, workspace TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)',
    );
    const executor = new Executor<DurableObjectSql>({
      store: new DurableObjectStore(ctx.storage), // Idem's tables beside `notes`, created once
      authorize: (principal) => principal === 'dev',
      logger: console,
    });
    const createNote = idempotentTool(executor, {
      name: 'create_note',
      version: 1,
      description: 'Creates a note in a workspace.',
      inputSchema: z.object({ body: z.string().min(1).max(10_000) }), // Idem adds workspace and idempotency_key
      // `sql` is ctx.storage.sql inside Idem's transactionSync: synchronous, no await.
      effect: (sql, args, context) => {
        const id = `note_${context.operationId}`;
        sql.exec(
          'INSERT INTO notes (note_id, workspace, body, created_at) VALUES (?, ?, ?, ?)',
          id,
          args.workspace,
          args.body,
          Date.now(),
        );
        return { resource_id: id, note_id: id };
      },
    });
    const listNotes = readTool({
      name: 'list_notes',
      description: "Lists a workspace's notes, oldest first.",
      inputSchema: z.object({ workspace: z.string().min(1) }),
      outputShape: { notes: z.array(z.object({ note_id: z.string(), body: z.string() })) },
      logger: console,
      handler: async (args, principal) => {
        if (principal !== 'dev') throw new IdemError('forbidden', 'not allowed in this workspace');
        const notes = ctx.storage.sql
          .exec(
            'SELECT note_id, body FROM notes WHERE workspace = ? ORDER BY created_at, note_id',
            args.workspace,
          )
          .toArray()
          .map((row) => ({ note_id: String(row.note_id), body: String(row.body) }));
        return { notes };
      },
    });
    // Both protocol eras: 2026-07-28 requests and 2025-era ones (stateless fallback).
    this.#mcp = createMcpHandler(() => {
      const server = new McpServer({ name: 'idem-cloudflare-notes', version: '1.0.0' });
      registerIdemTool(server, createNote);
      registerIdemTool(server, listNotes);
      return server;
    });
  }

  override async fetch(request: Request): Promise<Response> {
    return this.#mcp.fetch(request, { authInfo: DEV });
  }
}

/** The workspace a request's call is for (`tools/call` arguments), or `default`: that object serves it. */
async function workspaceOf(request: Request): Promise<string> {
  if (request.method !== 'POST') return 'default';
  try {
    const message = (await request.clone().json()) as { params?: { arguments?: { workspace?: unknown } } };
    const workspace = message?.params?.arguments?.workspace;
    return typeof workspace === 'string' && workspace.length > 0 ? workspace : 'default';
  } catch {
    return 'default';
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
    const object = env.IDEM.get(env.IDEM.idFromName(await workspaceOf(request)));
    return object.fetch(request);
  },
};
