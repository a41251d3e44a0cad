import { IdemError } from './errors.js';

/**
 * Who acts and where, resolved on the server from the authenticated principal and a workspace the
 * principal was checked to hold. Never taken from a model-supplied tenant field.
 */
export interface Scope {
  readonly principal: string;
  readonly workspace: string;
}

/** The durable identity of one intended action: scope, operation name and version, and key. */
export interface OperationIdentity extends Scope {
  readonly operation: string;
  readonly version: number;
  readonly key: string;
}

const OPERATION_NAME = /^[a-z][a-z0-9_.-]{0,63}$/;

/** Checks a tool author's operation name and version once, when the tool is defined. */
export function validateOperationName(name: string, version: number): void {
  if (!OPERATION_NAME.test(name)) {
    throw new IdemError(
      'invalid_argument',
      `operation name ${JSON.stringify(name)} must match ${OPERATION_NAME}`,
    );
  }
  if (!Number.isSafeInteger(version) || version < 1) {
    throw new IdemError('invalid_argument', `operation version must be a positive integer, got ${version}`);
  }
}

/** A log- and error-safe label of an operation, e.g. `create_note@v1`. */
export function operationLabel(identity: Pick<OperationIdentity, 'operation' | 'version'>): string {
  return `${identity.operation}@v${identity.version}`;
}
