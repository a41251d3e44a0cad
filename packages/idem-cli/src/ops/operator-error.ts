/**
 * Why an operator action was refused. `usage`: the request itself is wrong (a missing reason, a
 * result field the tool does not have); `not_found`: no such operation or dead letter; `refused`:
 * the operation's state does not allow it. `field` names the input at fault (`resource_id`,
 * `reason`, `fields`), so each front end can word it its own way; `correctable` says that the
 * operation is `failed` or `cancelled`, so a correction would be accepted where a resolution is not.
 */
export class OperatorActionError extends Error {
  readonly kind: 'usage' | 'not_found' | 'refused';
  readonly field: string | undefined;
  readonly correctable: boolean;

  constructor(
    kind: 'usage' | 'not_found' | 'refused',
    message: string,
    options: { field?: string; correctable?: boolean } = {},
  ) {
    super(message);
    this.name = 'OperatorActionError';
    this.kind = kind;
    this.field = options.field;
    this.correctable = options.correctable ?? false;
  }
}
