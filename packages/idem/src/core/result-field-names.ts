/**
 * The names Idem gives its own fields in every tool answer (the shape of `idemResultSchema`):
 * business fields stand beside them and may not take them.
 */
export const IDEM_RESULT_FIELDS: readonly string[] = Object.freeze([
  'status',
  'operation_id',
  'resource_id',
  'replayed',
  'error',
  'next_action',
]);

/** The fields a stored `failed` or `outcome_unknown` answer adds: the attempts and the evidence kept. */
export const IDEM_EVIDENCE_FIELDS: readonly string[] = Object.freeze(['attempts', 'result']);
