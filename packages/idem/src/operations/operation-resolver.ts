import { IdemError } from '../core/errors.js';
import { jsonSchemaProblem, jsonTypeOf } from '../core/json-schema-check.js';
import { IDEM_RESULT_FIELDS } from '../core/result-field-names.js';
import type { JsonObject, JsonValue } from '../core/json.js';
import type { OperationRecord } from '../core/operation-record.js';
import type { IdemStore } from '../ports/idem-store.js';
import type { OperationsLedger } from '../ports/operations-ledger.js';
import type { ToolDeclaration } from '../ports/tool-catalog.js';
import { resolve, type Resolution } from './ledger-transitions.js';
import type { DurableHandler } from './durable-handler.js';

/** What `resolveOperation` needs of each handler, by operation name: a DurableHandler will do. */
export type SuccessFieldsByOperation = Readonly<Record<string, Pick<DurableHandler, 'successFields'>>>;

/** The store's ports an operator's resolution reads and writes: the ledger and the tool catalog. */
export type ResolvingStore = Pick<IdemStore, 'ledger' | 'tools'>;

/**
 * What is known of the result fields of an operation's tool: the declaration its server stored
 * (`ToolDeclaration`), `null` when the store was asked and holds none, `undefined` when it was not
 * asked (a bare ledger was given).
 */
export type KnownDeclaration = ToolDeclaration | null | undefined;

/**
 * An operator's resolution (or, with `correct`, correction) of an operation, through `resolve`
 * (ledger-transitions). A success carries the business fields of one the worker records, so that
 * callers need one parser: the operation handler's `successFields` for the resource id, then
 * `fields`, the values the operator gives. Given a store (`ResolvingStore`), those are checked
 * against what the operation's tool version stored about its results when its server registered it
 * (`store.tools`), so the check holds in any process: a field it does not declare, or a value that
 * does not fit its declaration, is refused; with no stored declaration, result fields are refused
 * (a success without them is still accepted). Always refused: a name the result itself uses
 * (`status`, `operation_id`, `resource_id`, `error`, ...), and `fields` with `failed`. A refused
 * resolution is `invalid_argument`, and nothing is written. Answers the written record, or
 * undefined for an unknown operation. Given a bare ledger (no catalog), the handler's
 * `successFields`, when there is one, is the only declaration checked.
 */
export async function resolveOperation(
  target: ResolvingStore | OperationsLedger,
  handlers: SuccessFieldsByOperation,
  operationId: string,
  resolution: Resolution,
): Promise<OperationRecord | undefined> {
  const { ledger, tools } = 'ledger' in target ? target : { ledger: target, tools: undefined };
  const current = await ledger.get(operationId, resolution);
  if (current === undefined) return undefined;
  const identity = current.identity;
  const declaration: KnownDeclaration =
    tools === undefined
      ? undefined
      : ((await tools.get(identity.operation, identity.version, resolution)) ?? null);
  const problem = givenFieldsProblem(current, handlers, resolution, declaration);
  if (problem !== undefined) throw new IdemError('invalid_argument', problem);
  if (resolution.to !== 'succeeded') return resolve(ledger, operationId, resolution);
  // The args never change, so fields read here still hold when the store writes under its lock.
  const derived = fitting(handlerFields(current, handlers, resolution.resourceId), declaration);
  const fields =
    derived === undefined && resolution.fields === undefined
      ? undefined
      : { ...derived, ...resolution.fields };
  return resolve(ledger, operationId, { ...resolution, ...(fields === undefined ? {} : { fields }) });
}

/** The names a durable tool's result gives itself (idemResultSchema); business fields stand beside. */
const IDEM_RESULT_NAMES: ReadonlySet<string> = new Set(IDEM_RESULT_FIELDS);

/**
 * Why the result fields an operator gives (`fields`) do not fit a success of `operation`, or
 * undefined when they do (or none are given): the rules of `resolveOperation`, for a caller that
 * wants to refuse before it writes (the CLI's usage error). `declaration` is what the store holds
 * for the operation's tool version (see KnownDeclaration).
 */
export function givenFieldsProblem(
  operation: OperationRecord,
  handlers: SuccessFieldsByOperation,
  resolution: Pick<Resolution, 'to' | 'resourceId' | 'fields'>,
  declaration?: KnownDeclaration,
): string | undefined {
  const given = resolution.fields;
  if (given === undefined) return undefined;
  if (resolution.to !== 'succeeded') return 'result fields are given only with a success';
  const tool = operation.identity.operation;
  for (const name of Object.keys(given)) {
    if (IDEM_RESULT_NAMES.has(name))
      return `result field ${JSON.stringify(name)} is set by Idem itself (${[...IDEM_RESULT_NAMES].join(', ')}); give business fields only`;
  }
  if (declaration?.resultSchema) return declaredProblem(tool, given, declaration.resultSchema);
  // A tool that declares no result fields: its handler's derived fields are the declaration.
  const derived = handlerFields(operation, handlers, resolution.resourceId);
  if (derived !== undefined) return derivedProblem(tool, given, derived);
  if (declaration === null)
    return `the result fields of ${tool} v${operation.identity.version} are not known to this database (its server has not registered it here since Idem stored them): settle it without result fields, or start its server once so that it stores them`;
  return undefined;
}

/** The stored declaration's verdict on `given`: each field declared, each value fitting its schema. */
function declaredProblem(tool: string, given: JsonObject, schema: JsonObject): string | undefined {
  const properties = propertiesOf(schema);
  const names = Object.keys(properties);
  for (const [name, value] of Object.entries(given)) {
    if (!Object.hasOwn(properties, name))
      return names.length === 0
        ? `${tool} results have no business fields; settle it without result fields`
        : `${tool} results have no field ${JSON.stringify(name)}; its fields are ${names.join(', ')}`;
    const problem = jsonSchemaProblem(properties[name] as JsonValue, value);
    if (problem !== undefined) return `result field ${JSON.stringify(name)} of ${tool}: ${problem}`;
  }
  return undefined;
}

/** A handler's derived fields as the declaration: the same names, each of the same JSON type. */
function derivedProblem(tool: string, given: JsonObject, derived: JsonObject): string | undefined {
  for (const [name, value] of Object.entries(given)) {
    if (!Object.hasOwn(derived, name))
      return `${tool} results have no field ${JSON.stringify(name)}; its fields are ${Object.keys(derived).join(', ')}`;
    const want = jsonTypeOf(derived[name]);
    if (jsonTypeOf(value) !== want)
      return `result field ${JSON.stringify(name)} of ${tool} is a ${want}, got a ${jsonTypeOf(value)}`;
  }
  return undefined;
}

/** The `properties` of a stored result schema (an object schema), by field name. */
export function propertiesOf(schema: JsonObject): JsonObject {
  const properties = schema.properties;
  return typeof properties === 'object' && properties !== null && !Array.isArray(properties)
    ? properties
    : {};
}

/** The handler's success fields for `resourceId`, when it has a `successFields` hook. */
function handlerFields(
  operation: OperationRecord,
  handlers: SuccessFieldsByOperation,
  resourceId: string | undefined,
): JsonObject | undefined {
  if (resourceId === undefined) return undefined;
  return handlers[operation.identity.operation]?.successFields?.(operation, resourceId);
}

/** The derived fields that fit the stored declaration (all, when there is none to check). */
function fitting(derived: JsonObject | undefined, declaration: KnownDeclaration): JsonObject | undefined {
  const schema = declaration?.resultSchema;
  if (derived === undefined || schema === undefined || schema === null) return derived;
  const properties = propertiesOf(schema);
  return Object.fromEntries(
    Object.entries(derived).filter(
      ([name, value]) =>
        Object.hasOwn(properties, name) &&
        jsonSchemaProblem(properties[name] as JsonValue, value) === undefined,
    ),
  );
}
