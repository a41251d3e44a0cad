/** What one HTTP server accepts before MCP sees a request. */
export interface HttpLimits {
  /** Largest request body, bytes; a larger one is answered 413. */
  readonly maxBodyBytes: number;
  /** Most bytes of request bodies held at once across all in-flight requests; beyond: 503. */
  readonly maxBufferedBytes: number;
  /** Time for a client to send the request headers, ms (node's headersTimeout). */
  readonly headersTimeoutMs: number;
  /** Time for a client to send the whole request, body included, ms (node's requestTimeout). */
  readonly requestTimeoutMs: number;
}

/** 1 MiB bodies, 64 MiB buffered in all, 10 s for the headers, 30 s for the whole request. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxBodyBytes: 1024 * 1024,
  maxBufferedBytes: 64 * 1024 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
};
