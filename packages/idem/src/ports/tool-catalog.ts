import type { JsonObject } from '../core/json.js';
import type { SignalOption } from './maybe-async.js';

/**
 * What one version of a tool declares about its results, as the process that registers it stores
 * it, so that a process that never registered the tool (`idem ops`, the console) can check what an
 * operator settles against it.
 */
export interface ToolDeclaration {
  /** The tool's name (an operation's `identity.operation`). */
  readonly operation: string;
  readonly version: number;
  /**
   * The JSON Schema (an object schema: `properties`, `required`) of the business fields of its
   * results, from its `resultSchema`; null when it declares none (its results may carry any
   * business field beside Idem's own).
   */
  readonly resultSchema: JsonObject | null;
  /** When it was stored, epoch ms. */
  readonly declaredAt: number;
}

/** The tools' declarations, one per (operation, version). */
export interface ToolCatalog {
  /**
   * MUST store `declaration` durably, replacing what was stored for its (operation, version): the
   * last registration wins.
   */
  declare(declaration: ToolDeclaration, options?: SignalOption): Promise<void>;
  /** The stored declaration of this tool version, or undefined. MUST see committed data only. */
  get(operation: string, version: number, options?: SignalOption): Promise<ToolDeclaration | undefined>;
}
