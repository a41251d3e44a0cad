/** A failure the CLI reports as one line on stderr with a non-zero exit code (2: usage, 1: runtime; `idem check` also uses 3: inconclusive). */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly exitCode: 1 | 2 | 3 = 1,
  ) {
    super(message);
  }
}
