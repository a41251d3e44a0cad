import { CliError } from '../cli-error.js';
import type { ListedTool } from '../check-connection.js';
import type { CheckOptions } from './check-options.js';
import type { ToolSettings } from './check-config.js';
import { foundCounts, readArguments } from './count-candidates.js';
import type { CountSpec } from './count-spec.js';
import { findKeyField, type KeyField } from './key-field.js';
import type { JsonPath } from './json-path.js';
import { FREE_TEXT, otherArguments, type OtherArguments } from './other-arguments.js';
import { schemaSample } from './schema-sample.js';
import { scopeFields, uncoveredFields, type ScopeFields } from './scope-fields.js';
import { argumentNames, coerce, takes } from './tool-arguments.js';
import { fill, hasUnique, isObject } from './unique-template.js';

export type { CountSpec } from './count-spec.js';

/** Everything the rows need to know about one mutating tool before they call it. */
export interface ToolPlan {
  readonly name: string;
  readonly key: KeyField | undefined;
  /** Annotated idempotentHint: a repeat with the same arguments is said to have no further effect. */
  readonly idempotentHint: boolean;
  readonly readOnlyHint: boolean;
  /** The arguments without the key; `{{unique}}` takes a new value per intended action. */
  readonly template: Record<string, unknown>;
  readonly secondTemplate: Record<string, unknown>;
  /** True when some argument holds `{{unique}}`, so that two actions can differ. */
  readonly varies: boolean;
  /** The arguments that scope the key: never varied, never suggested for `{{unique}}`. */
  readonly scope: ScopeFields;
  /** What the "same key, other arguments" row changes (one argument outside the scope), or why nothing can. */
  readonly other: OtherArguments;
  readonly idPath: JsonPath | undefined;
  /** Count tools to try, best first: the configured one alone, or the found candidates. */
  readonly counts: readonly CountSpec[];
  /** Where the arguments came from and what may be wrong with them. */
  readonly notes: readonly string[];
  /** Why the tool is not called at all (it needs the id of something that exists), if so. */
  readonly blocked: string | undefined;
}

export interface ToolSelection {
  readonly plans: readonly ToolPlan[];
  /** Tools left out, with why. */
  readonly notChecked: ReadonlyArray<{ readonly tool: string; readonly why: string }>;
}

/** A required argument with such a name names something that must already exist. */
const REFERENCE = /(^id$|_id$|[a-z]Id$|_ids$|[a-z]Ids$)/;
/** What a scope field's `{{unique}}` is filled with: one fixed place for every action. */
const FIXED_FILL = '000000000000';

/**
 * Chooses the tools to check and plans each one: the key argument (given, else found in the
 * schema), the arguments (a sample of the schema, overlaid with the config's `arguments` and with
 * `--arg`), the id path and the count tools. Every mistake in what the user gave (an unknown tool,
 * a key field the tool does not have, an `--arg` no tool takes, arguments left without a varying
 * part) is a usage error (exit 2), raised before any tool is called.
 */
export function planTools(listed: readonly ListedTool[], options: CheckOptions): ToolSelection {
  const byName = new Map(listed.map((tool) => [tool.name, tool]));
  const names = listed.map((tool) => tool.name);
  const known = (name: string, what: string) => {
    if (!byName.has(name)) {
      throw new CliError(
        `unknown tool ${JSON.stringify(name)} (${what}); the server lists: ${names.join(', ') || 'no tools'}`,
        2,
      );
    }
    return byName.get(name) as ListedTool;
  };
  const { config } = options;
  for (const name of options.tools) known(name, '--tool');
  if (config.tool !== undefined) known(config.tool, 'config "tool"');
  for (const name of Object.keys(config.tools ?? {})) known(name, 'config "tools"');
  if (config.count !== undefined) known(config.count.tool, 'config "count.tool"');
  for (const [name, s] of Object.entries(config.tools ?? {})) {
    if (s.count !== undefined) known(s.count.tool, `config "tools.${name}.count.tool"`);
  }
  if (options.countTool !== undefined) known(options.countTool, '--count-tool');

  const chosen =
    options.tools.length > 0
      ? options.tools
      : config.tool !== undefined
        ? [config.tool]
        : config.tools !== undefined
          ? Object.keys(config.tools)
          : listed.filter((tool) => tool.annotations?.readOnlyHint !== true).map((tool) => tool.name);
  const selected = [...new Set(chosen)].map((name) => byName.get(name) as ListedTool);
  if (selected.length === 0) {
    throw new CliError(
      `nothing to check: every tool of the server is annotated readOnlyHint (${names.join(', ') || 'none'}); ` +
        'pick one with --tool NAME',
      2,
    );
  }
  const notChecked = listed
    .filter((tool) => !selected.includes(tool))
    .map((tool) => ({
      tool: tool.name,
      why: tool.annotations?.readOnlyHint === true ? 'readOnlyHint' : 'not chosen',
    }));

  for (const name of options.args.keys()) {
    const used = [...selected, ...listed.filter((t) => t.annotations?.readOnlyHint === true)].some((tool) =>
      takes(tool, name),
    );
    if (!used) {
      throw new CliError(
        `--arg ${name}: no tool checked takes an argument ${JSON.stringify(name)} ` +
          `(${selected.map((t) => `${t.name}: ${argumentNames(t).join(', ') || 'none'}`).join('; ')})`,
        2,
      );
    }
  }
  const shared = { ...config.arguments };
  const counts = (settings: ToolSettings): CountSpec[] => {
    if (options.countTool !== undefined) {
      const tool = byName.get(options.countTool) as ListedTool;
      return [
        {
          tool: tool.name,
          arguments: readArguments(tool, shared, options.args),
          path: options.countPath,
          from: '--count-tool',
        },
      ];
    }
    if (settings.count !== undefined) return [{ ...settings.count, from: 'config' }];
    return foundCounts(listed, shared, options.args);
  };
  const plans = selected.map((tool) => {
    const own = config.tools?.[tool.name];
    const settings: ToolSettings = { ...config, ...own };
    // Top-level arguments go to every tool that takes them (all of them for the one `tool`); a tool's own, whole.
    const overrides: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(config.arguments ?? {})) {
      if (config.tool !== undefined || takes(tool, name)) overrides[name] = value;
    }
    Object.assign(overrides, own?.arguments);
    for (const [name, fixed] of options.args)
      if (takes(tool, name)) overrides[name] = coerce(tool, name, fixed);
    const explicit =
      selected.length === 1 ||
      options.tools.length > 0 ||
      config.tool !== undefined ||
      config.tools !== undefined;
    return planTool(tool, settings, overrides, options, counts(settings), explicit);
  });
  return { plans, notChecked };
}

function planTool(
  tool: ListedTool,
  settings: ToolSettings,
  overrides: Record<string, unknown>,
  options: CheckOptions,
  counts: CountSpec[],
  explicit: boolean,
): ToolPlan {
  const schema = tool.inputSchema;
  const notes: string[] = [];
  const keyName = options.keyField ?? settings.keyField;
  let key: KeyField | undefined;
  if (keyName !== undefined) {
    const declared = argumentNames(tool);
    if (declared.length > 0 && !declared.includes(keyName)) {
      throw new CliError(
        `${options.keyField !== undefined ? '--key-field' : 'config "keyField"'} ${keyName}: ` +
          `tool ${tool.name} has no argument ${JSON.stringify(keyName)} (its arguments: ${declared.join(', ')})`,
        2,
      );
    }
    key = { name: keyName, why: options.keyField !== undefined ? '--key-field' : 'the config' };
  } else key = findKeyField(schema);

  const scope = scopeFields(
    tool,
    options.scopeFields.length > 0 ? options.scopeFields : settings.scopeFields,
    options.scopeFields.length > 0 ? '--scope-field' : 'the config',
  );
  for (const name of scope.from === 'found' ? [] : scope.names) {
    const declared = argumentNames(tool);
    if (declared.length > 0 && !declared.includes(name)) {
      throw new CliError(
        `${scope.from === '--scope-field' ? '--scope-field' : 'config "scopeFields"'} ${name}: ` +
          `tool ${tool.name} has no argument ${JSON.stringify(name)} (its arguments: ${declared.join(', ')})`,
        2,
      );
    }
  }
  const inScope = (name: string) => scope.names.includes(name);
  const sample = schemaSample(schema);
  const sampled = isObject(sample.value) ? { ...sample.value } : {};
  if (key !== undefined) delete sampled[key.name];
  // A scope is one place for every action: its sample takes no `{{unique}}`.
  for (const name of Object.keys(sampled)) if (inScope(name)) sampled[name] = fill(sampled[name], FIXED_FILL);
  if (key !== undefined && key.name in overrides) {
    throw new CliError(
      `${tool.name}: the key argument ${key.name} is set by --arg or the config; the checker sets it per action`,
      2,
    );
  }
  const template = { ...sampled, ...overrides };
  const varies = hasUnique(template);
  const fixedByUser = Object.keys(overrides);
  const properties = isObject(schema.properties) ? schema.properties : {};
  // The user's arguments left nothing to vary although a free string outside the scope could have:
  // for a tool the user chose (or the only one), a usage error; for one among others picked by the
  // checker (a global --arg fixed its only string), a note. A scope field is never suggested.
  const varying = Object.keys(sampled)
    .filter((name) => !inScope(name) && hasUnique(sampled[name]))
    .sort((a, b) => Number(!FREE_TEXT.test(a)) - Number(!FREE_TEXT.test(b)));
  const fixedText = fixedByUser.filter(
    (name) => !inScope(name) && typeof overrides[name] === 'string' && freeText(properties[name]),
  );
  if (!varies && (varying.length > 0 || fixedText.length > 0)) {
    const problem = `the arguments have no varying part (${fixedByUser.join(', ')} fixed without {{unique}})`;
    const fix = `put {{unique}} in a string, e.g. --arg '${varying[0] ?? fixedText[0] ?? 'name'}=idem {{unique}}'`;
    if (explicit) throw new CliError(`${tool.name}: ${problem}; ${fix}`, 2);
    notes.push(`${problem}: actions cannot differ (${fix})`);
  } else if (!varies) notes.push('no argument can vary per action (no string argument takes {{unique}})');
  const other = otherArguments({
    tool,
    template,
    fixed: fixedByUser,
    key: key?.name,
    scope: scope.names,
    uncovered: uncoveredFields(tool),
  });
  const unmet = sample.unmet.filter(
    (problem) => !fixedByUser.some((name) => problem.startsWith(`$.${name}`)),
  );
  if (unmet.length > 0) notes.push(`the sample may not satisfy the schema: ${unmet.join('; ')}`);

  const required = Array.isArray(schema.required)
    ? schema.required.filter((n): n is string => typeof n === 'string')
    : [];
  const references = required.filter((name) => {
    const p = properties[name];
    const fixed = isObject(p) && ('const' in p || 'enum' in p || 'default' in p);
    return REFERENCE.test(name) && name !== key?.name && !(name in overrides) && !fixed;
  });
  const blocked =
    references.length === 0
      ? undefined
      : `needs the id of something that exists: ${references.join(', ')} ` +
        `(pass ${references.map((name) => `--arg ${name}=VALUE`).join(' ')})`;

  return {
    name: tool.name,
    key,
    idempotentHint: tool.annotations?.idempotentHint === true,
    readOnlyHint: tool.annotations?.readOnlyHint === true,
    template,
    secondTemplate: { ...template, ...settings.secondArguments },
    varies,
    scope,
    other,
    idPath: options.idPath ?? settings.idPath,
    counts,
    notes,
    blocked,
  };
}

/** A string argument with no pattern, format, enum or const: `{{unique}}` fits in it. */
function freeText(property: unknown): boolean {
  if (!isObject(property)) return true;
  const { type } = property;
  if (type !== undefined && type !== 'string' && !(Array.isArray(type) && type.includes('string')))
    return false;
  return !['pattern', 'format', 'enum', 'const'].some((word) => word in property);
}
