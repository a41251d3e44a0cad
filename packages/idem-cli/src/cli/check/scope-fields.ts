import type { ListedTool } from '../check-connection.js';
import { isObject } from './unique-template.js';

/** The arguments that scope a tool's keys, and how they were recognised. */
export interface ScopeFields {
  readonly names: readonly string[];
  /** `--scope-field`, `the config`, or `found` (by name or description). */
  readonly from: '--scope-field' | 'the config' | 'found';
}

/**
 * Names that scope an action (compared without case, `_` or `-`): another value is another
 * place, so the same key there is rightly a new action, never "the same key with other arguments".
 */
const SCOPE_NAMES = new Set([
  'workspace',
  'workspaceid',
  'workspacename',
  'tenant',
  'tenantid',
  'organization',
  'organizationid',
  'organisation',
  'organisationid',
  'org',
  'orgid',
  'account',
  'accountid',
  'project',
  'projectid',
  'namespace',
  'team',
  'teamid',
  'realm',
  'scope',
]);

/** A description that says the argument is the place the tool acts in (Idem's: "The workspace to act in"). */
const SAYS_SCOPE = /\b(workspace|tenant|organi[sz]ation|namespace|scopes?)\b/i;

/**
 * The top-level arguments that scope the tool's keys: those the user named (`--scope-field`, or
 * the config's `scopeFields`), else those whose name (`workspace`, `tenant_id`, `project`, …) or
 * description (`The workspace to act in`) says so. The checker never varies them to make "other
 * arguments", and never suggests putting `{{unique}}` in them.
 */
export function scopeFields(
  tool: ListedTool,
  named: readonly string[] | undefined,
  from?: string,
): ScopeFields {
  if (named !== undefined) {
    return { names: [...named], from: from === '--scope-field' ? '--scope-field' : 'the config' };
  }
  const properties = isObject(tool.inputSchema.properties) ? tool.inputSchema.properties : {};
  const normal = (name: string) => name.toLowerCase().replace(/[-_\s]/g, '');
  const names = Object.entries(properties)
    .filter(
      ([name, p]) =>
        SCOPE_NAMES.has(normal(name)) ||
        (isObject(p) && typeof p.description === 'string' && SAYS_SCOPE.test(p.description)),
    )
    .map(([name]) => name);
  return { names, from: 'found' };
}

/**
 * The arguments a tool says a retry may change without effect (Idem's fingerprint selection,
 * stated in its description as "… may be worded differently, but a retry never applies such a
 * change"): varying them makes no conflict, so the checker leaves them alone.
 */
export function uncoveredFields(tool: ListedTool): string[] {
  const said = /repeat .+? exactly; (.+?) may be worded differently/.exec(tool.description ?? '');
  if (said === null) return [];
  const properties = isObject(tool.inputSchema.properties) ? tool.inputSchema.properties : {};
  return (said[1] as string)
    .split(/, | and /)
    .map((name) => name.trim())
    .filter((name) => name in properties);
}
