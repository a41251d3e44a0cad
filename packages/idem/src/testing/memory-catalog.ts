import type { SignalOption } from '../ports/maybe-async.js';
import type { OperatorSession, OperatorSessions } from '../ports/operator-sessions.js';
import type { ToolCatalog, ToolDeclaration } from '../ports/tool-catalog.js';

/** Throws when the store is closed or the signal aborted (memoryStore's guard). */
type Guard = (signal: AbortSignal | undefined) => void;

/** The memory store's tool catalog: a map by (operation, version). */
export function memoryToolCatalog(guard: Guard): ToolCatalog {
  const byTool = new Map<string, ToolDeclaration>();
  const keyOf = (operation: string, version: number) => JSON.stringify([operation, version]);
  return {
    declare: async (declaration, options: SignalOption = {}) => {
      guard(options.signal);
      byTool.set(keyOf(declaration.operation, declaration.version), structuredClone(declaration));
    },
    get: async (operation, version, options: SignalOption = {}) => {
      guard(options.signal);
      const found = byTool.get(keyOf(operation, version));
      return found === undefined ? undefined : structuredClone(found);
    },
  };
}

/** The memory store's console sessions: a map by id; expired ones go at each `put`. */
export function memoryOperatorSessions(guard: Guard): OperatorSessions {
  const byId = new Map<string, OperatorSession>();
  return {
    put: async (session, options: SignalOption = {}) => {
      guard(options.signal);
      for (const [id, stored] of byId) if (stored.expiresAt <= session.createdAt) byId.delete(id);
      byId.set(session.id, { ...session });
    },
    get: async (id, now, options: SignalOption = {}) => {
      guard(options.signal);
      const found = byId.get(id);
      return found === undefined || found.expiresAt <= now ? undefined : { ...found };
    },
    delete: async (id, options: SignalOption = {}) => {
      guard(options.signal);
      byId.delete(id);
    },
  };
}
