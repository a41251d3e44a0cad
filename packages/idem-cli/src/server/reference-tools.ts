import { McpServer } from '@modelcontextprotocol/server';
import type { ServerApp } from './server-app.js';
import { z } from 'zod';
import { IdemError, type Clock, type RetryPolicy, type Executor, type EffectResult } from 'idem';
import {
  type IdemTool,
  durableTool,
  idempotentTool,
  workspaceField,
  readTool,
  type ReadContext,
  registerIdemTool,
  authorizeByGrant,
  grantedWorkspaces,
  operationTools,
} from 'idem/mcp';
import { commandTools, type CommandHandler } from 'idem/commands';
import type { NotesRepository } from './notes-repository.js';

export interface ReferenceToolsOptions<App> {
  executor: Executor<App>;
  notes: NotesRepository<App>;
  clock: Clock;
  retentionMs: number;
  /** How long the sweeper keeps tombstones: stated in the mutating tools' descriptions. */
  tombstoneTtlMs?: number;
  /** Where create_note's `notify: true` posts its webhook (through the outbox). */
  webhookUrl?: string;
  /** The worker's policy for start_deployment (total deadline, attempts, backoff). */
  deploymentPolicy?: RetryPolicy;
}

const noteShape = { note_id: z.string(), body: z.string(), created_at: z.string() };

/**
 * create_note, get_note, list_notes, start_deployment, get_operation and cancel_operation. Built once
 * per application (zod 4 builds a schema slowly) and registered on every request's McpServer.
 */
export function referenceTools<App>(options: ReferenceToolsOptions<App>): IdemTool[] {
  const { executor, notes, clock } = options;
  /** The same check the executor's authorize runs: the request's own token must hold the workspace. */
  const requireWorkspace = (read: ReadContext, workspace: string) => {
    if (!grantedWorkspaces(read.credentials).includes(workspace)) {
      throw new IdemError('forbidden', `principal may not act in workspace ${JSON.stringify(workspace)}`);
    }
  };

  const createNote = idempotentTool(executor, {
    name: 'create_note',
    version: 1,
    title: 'Create a note',
    description:
      'Creates a note in a workspace and returns its id as resource_id (and note_id). With notify: true, a webhook announcing the note is sent once, reliably, after the note is committed.',
    inputSchema: {
      body: z.string().min(1).max(10_000).describe('The note text, 1 to 10000 characters.'),
      notify: z.boolean().default(false).describe('Send a webhook about the new note (default false).'),
    },
    retentionMs: options.retentionMs,
    ...(options.tombstoneTtlMs === undefined ? {} : { tombstoneRetentionMs: options.tombstoneTtlMs }),
    // Synchronous on SQLite (the whole transaction runs in one tick), awaited on PostgreSQL.
    effect: (app, args, context) => {
      if (args.notify && options.webhookUrl === undefined) {
        throw new IdemError('invalid_argument', 'notify needs a webhook receiver; this server has none');
      }
      const announce = (result: EffectResult): EffectResult | Promise<EffectResult> => {
        if (!args.notify || options.webhookUrl === undefined) return result;
        // Committed with the note, sent after: the receiver deduplicates on the key.
        const queued = context.enqueue({
          destination: options.webhookUrl,
          dedupKey: `note-created:${context.operationId}`,
          payload: { event: 'note.created', note_id: result.resource_id, workspace: args.workspace },
        });
        return queued === undefined ? result : queued.then(() => result);
      };
      const inserted = notes.insert(app, args.workspace, args.body, context.operationId);
      return inserted instanceof Promise ? inserted.then(announce) : announce(inserted);
    },
  });

  const startDeployment = durableTool(executor, {
    name: 'start_deployment',
    version: 1,
    title: 'Start a deployment',
    description:
      'Starts deploying a version of a service through the deployment provider. Returns at once with status "accepted" and an operation_id; call get_operation to follow it and cancel_operation to cancel it.',
    inputSchema: {
      service: z.string().min(1).max(100).describe('The service to deploy.'),
      version: z.string().min(1).max(100).describe('The version to deploy.'),
    },
    retentionMs: options.retentionMs,
    ...(options.tombstoneTtlMs === undefined ? {} : { tombstoneRetentionMs: options.tombstoneTtlMs }),
    ...(options.deploymentPolicy === undefined ? {} : { policy: options.deploymentPolicy }),
  });

  const { statusTool: getOperation, cancelTool: cancelOperation } = operationTools(executor, {
    clock,
    authorize: authorizeByGrant,
  });

  const getNote = readTool({
    logger: executor.logger,
    name: 'get_note',
    description: 'Returns one note of a workspace by its note_id.',
    inputSchema: { workspace: workspaceField, note_id: z.string().min(1).max(200) },
    outputShape: noteShape,
    handler: async (args, _principal, read) => {
      requireWorkspace(read, args.workspace);
      const note = await notes.get(args.workspace, args.note_id);
      if (note === undefined) throw new IdemError('not_found', 'no such note in this workspace');
      return { ...note };
    },
  });

  const listNotes = readTool({
    logger: executor.logger,
    name: 'list_notes',
    description: 'Lists the notes of a workspace, oldest first.',
    inputSchema: { workspace: workspaceField },
    outputShape: { notes: z.array(z.object(noteShape)) },
    handler: async (args, _principal, read) => {
      requireWorkspace(read, args.workspace);
      return { notes: (await notes.list(args.workspace)).map((note) => ({ ...note })) };
    },
  });

  return [createNote, startDeployment, cancelOperation, getNote, listNotes, getOperation];
}

/**
 * Makes McpServers carrying the reference tools of `app`: one per HTTP request, or one for stdio.
 * The tools are built here, once.
 */
export function referenceServerFactory<App>(
  app: Pick<
    ServerApp,
    'registry' | 'retentionMs' | 'tombstoneTtlMs' | 'clock' | 'deploymentPolicy' | 'providerUrl'
  > & { readonly commandHandler?: CommandHandler | undefined },
  executor: Executor<App>,
  notes: NotesRepository<App>,
): () => McpServer {
  const tools = referenceTools({
    executor,
    notes,
    retentionMs: app.retentionMs,
    tombstoneTtlMs: app.tombstoneTtlMs,
    clock: app.clock,
    deploymentPolicy: app.deploymentPolicy,
    ...(app.providerUrl === undefined ? {} : { webhookUrl: new URL('/webhooks', app.providerUrl).href }),
  });
  // Listed only when the server was given commands (`idem serve --commands FILE`).
  if (app.commandHandler !== undefined) {
    tools.push(
      ...commandTools({
        executor,
        handler: app.commandHandler,
        retentionMs: app.retentionMs,
        tombstoneRetentionMs: app.tombstoneTtlMs,
      }),
    );
  }
  return () => {
    const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} } });
    for (const tool of tools) registerIdemTool(server, tool);
    return server;
  };
}

export const SERVER_INFO = { name: 'idem-reference', version: '0.1.0' };

/** An operation as tools and the CLI show it (moved to `idem/mcp`; kept here for the CLI). */
