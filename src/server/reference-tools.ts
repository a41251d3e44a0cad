import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { SqliteDatabase } from '../adapters/sqlite/sqlite-database.js';
import { IdemError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import type { Receipt } from '../core/receipt.js';
import type { Executor } from '../executor/executor.js';
import { registerIdempotentTool, workspaceField } from '../mcp/register-idempotent-tool.js';
import { registerReadTool } from '../mcp/register-read-tool.js';
import type { NotesApp } from './notes-app.js';

export interface ReferenceToolsOptions {
  executor: Executor<SqliteDatabase>;
  notes: NotesApp;
  /** Whether `principal` holds `workspace`; the same check the executor's authorize runs. */
  holds(principal: string, workspace: string): boolean;
  retentionMs: number;
}

const noteShape = { note_id: z.string(), body: z.string(), created_at: z.string() };

/** Registers create_note, get_note, list_notes and get_operation on one McpServer. */
export function registerReferenceTools(server: McpServer, options: ReferenceToolsOptions): void {
  const { executor, notes, holds } = options;
  const requireWorkspace = (principal: string, workspace: string) => {
    if (!holds(principal, workspace)) {
      throw new IdemError('forbidden', `principal may not act in workspace ${JSON.stringify(workspace)}`);
    }
  };

  registerIdempotentTool(server, executor, {
    name: 'create_note',
    version: 1,
    title: 'Create a note',
    description: 'Creates a note in a workspace and returns its id as resource_id (and note_id).',
    inputSchema: { body: z.string().min(1).max(10_000).describe('The note text, 1 to 10000 characters.') },
    retentionMs: options.retentionMs,
    effect: (db, args, context) => notes.insert(db, args.workspace, args.body, context.operationId),
  });

  registerReadTool(server, {
    name: 'get_note',
    description: 'Returns one note of a workspace by its note_id.',
    inputSchema: { workspace: workspaceField, note_id: z.string().min(1).max(200) },
    outputShape: noteShape,
    handler: async (args, principal) => {
      requireWorkspace(principal, args.workspace);
      const note = notes.get(args.workspace, args.note_id);
      if (note === undefined) throw new IdemError('not_found', 'no such note in this workspace');
      return { ...note };
    },
  });

  registerReadTool(server, {
    name: 'list_notes',
    description: 'Lists the notes of a workspace, oldest first.',
    inputSchema: { workspace: workspaceField },
    outputShape: { notes: z.array(z.object(noteShape)) },
    handler: async (args, principal) => {
      requireWorkspace(principal, args.workspace);
      return { notes: notes.list(args.workspace).map((note) => ({ ...note })) };
    },
  });

  registerReadTool(server, {
    name: 'get_operation',
    description:
      'Reports what became of an operation started by one of your earlier calls, by the operation_id from its result. Use it when an outcome is uncertain.',
    inputSchema: { operation_id: z.string().min(1).max(200) },
    outputShape: {
      operation_id: z.string(),
      operation: z.string(),
      version: z.number(),
      workspace: z.string(),
      resource_id: z.string(),
      created_at: z.string(),
      expires_at: z.string(),
      result: z.record(z.unknown()),
    },
    handler: async (args, principal, extra) => {
      const receipt = await executor.store.getOperation(args.operation_id, { signal: extra.signal });
      // Another principal's operation gets exactly the answer an unknown id gets.
      if (receipt === undefined || receipt.identity.principal !== principal) {
        throw new IdemError('not_found', 'no such operation');
      }
      requireWorkspace(principal, receipt.identity.workspace);
      return operationView(receipt);
    },
  });
}

export function operationView(receipt: Receipt): JsonObject {
  return {
    status: receipt.status,
    operation_id: receipt.operationId,
    operation: receipt.identity.operation,
    version: receipt.identity.version,
    workspace: receipt.identity.workspace,
    resource_id: receipt.resourceId,
    created_at: new Date(receipt.createdAt).toISOString(),
    expires_at: new Date(receipt.expiresAt).toISOString(),
    result: receipt.result,
  };
}
