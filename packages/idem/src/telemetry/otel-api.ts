import { createRequire } from 'node:module';
import type * as OtelApiModule from '@opentelemetry/api';

/** The part of `@opentelemetry/api` Idem uses. */
export type OtelApi = typeof OtelApiModule;

let loaded: { readonly api: OtelApi | undefined } | undefined;

/**
 * `@opentelemetry/api`, loaded on first use, or undefined when it is not installed (it is an
 * optional peer): every instrument then does nothing. It is loaded synchronously so that the first
 * call after a provider is registered is recorded; the API keeps its registrations on a global, so
 * this copy sees what the application registered through its own import.
 */
export function otelApi(): OtelApi | undefined {
  loaded ??= { api: loadOtelApi(() => createRequire(import.meta.url)('@opentelemetry/api')) };
  return loaded.api;
}

/** Runs `load`; undefined when it throws (the package is missing or cannot load). */
export function loadOtelApi(load: () => unknown): OtelApi | undefined {
  try {
    const api = load() as OtelApi | undefined;
    return typeof api?.trace?.getTracerProvider === 'function' ? api : undefined;
  } catch {
    return undefined;
  }
}
