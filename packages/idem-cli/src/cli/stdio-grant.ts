import { isOperatorGrant, type Grant, type TokenRegistry } from '../server/token-registry.js';
import { CliError } from './cli-error.js';

/**
 * Who a `--stdio` server (`idem serve`, `idem proxy`) acts as, for every message it reads: without
 * `--tokens`, `devGrant`; with it, the grant of the token in `$IDEM_TOKEN` (the environment given),
 * looked up again for every message, so that a token the tokens file revokes stops at once.
 * Throws CliError (exit 1) when that token is unset, unknown, or an operator token: an operator
 * credential opens the console and calls no tool. A token that becomes one later acts as nobody.
 */
export function stdioGrant(
  registry: TokenRegistry | undefined,
  devGrant: Grant | undefined,
  env: NodeJS.ProcessEnv = process.env,
): () => Grant | undefined {
  if (registry === undefined) return () => devGrant;
  const token = env.IDEM_TOKEN;
  const tokenGrant = token === undefined ? undefined : registry.grantFor(token);
  if (token === undefined || tokenGrant === undefined || isOperatorGrant(tokenGrant))
    throw new CliError(
      'with --stdio and --tokens, set IDEM_TOKEN to one of the tokens (not an operator token)',
    );
  return () => {
    const current = registry.grantFor(token);
    return current === undefined || isOperatorGrant(current) ? undefined : current;
  };
}
