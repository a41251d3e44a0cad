/**
 * Default time a tombstone keeps an expired key refused (`key_expired`) after its receipt expired:
 * 30 days. After it the sweep deletes the tombstone and the key is free again. The library's default,
 * used by the reference server, `idem serve` and `idem sweep` alike.
 */
export const DEFAULT_TOMBSTONE_TTL_MS = 30 * 24 * 60 * 60 * 1000;
