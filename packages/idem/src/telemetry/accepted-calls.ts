import type { SpanContext } from '@opentelemetry/api';

const MAX_ENTRIES = 10_000;

/**
 * The span of the call that accepted each durable operation, kept in this process (at most
 * 10,000, the oldest forgotten first) so that a worker in the same process links its attempts to
 * it when the record carries no `acceptedTrace` (a store that does not keep it). A worker in
 * another process links to the record's `acceptedTrace` instead.
 */
export const acceptedCalls = {
  entries: new Map<string, SpanContext>(),
  /** Notes the span of the call that accepted `operationId`. */
  note(operationId: string, span: SpanContext): void {
    this.entries.delete(operationId);
    this.entries.set(operationId, span);
    if (this.entries.size > MAX_ENTRIES) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  },
  /** The span of the call that accepted `operationId`, when this process saw it. */
  find(operationId: string): SpanContext | undefined {
    return this.entries.get(operationId);
  },
};
