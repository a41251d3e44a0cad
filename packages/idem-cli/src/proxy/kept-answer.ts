import { Buffer } from 'node:buffer';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/client/validators/ajv';
import type { JsonObject } from 'idem';

/** The stored result's field that holds the upstream's CallToolResult, exactly as it came. */
export const UPSTREAM_RESULT = 'upstream_result';

/**
 * The stored result's field that says why the upstream's answer, kept as it came, is answered as
 * a tool error: its `structuredContent` does not fit the output schema the upstream declared.
 */
export const ANSWER_PROBLEM = 'upstream_result_problem';

/** The stable code of an answer over the limit, in `_meta["idem/answer_not_kept"].code`. */
export const ANSWER_TOO_LARGE = 'answer_too_large';

/** The default bound of one kept upstream answer: 1 MiB of its JSON. */
export const DEFAULT_MAX_ANSWER_BYTES = 1_048_576;

/** A CallToolResult as the proxy answers it (the upstream's, or one of Idem's own). */
export type ProxyResult = Record<string, unknown> & { content: unknown[]; isError?: boolean };

const validators = new AjvJsonSchemaValidator();
const compiled = new WeakMap<object, (value: unknown) => string | undefined>();

/**
 * What the proxy stores for an upstream's answer (the fields of the operation's result). An answer
 * whose JSON is within `maxBytes` is kept as it came; when the tool declares an output schema that
 * its `structuredContent` does not fit (a redeployed upstream, a bug), the reason is kept beside
 * it, and the answer is replayed as a tool error (see `answerFor`). An answer over `maxBytes` is not
 * kept: in its place a bounded record with the stable code `answer_too_large` says that the
 * upstream answered (and whether with a tool error), how large the answer was, and the limit.
 */
export function keptAnswer(
  outputSchema: Record<string, unknown> | undefined,
  result: ProxyResult,
  maxBytes: number,
): JsonObject {
  const bytes = Buffer.byteLength(JSON.stringify(result), 'utf8');
  if (bytes > maxBytes) return { [UPSTREAM_RESULT]: tooLarge(result.isError === true, bytes, maxBytes) };
  const problem = outputProblem(outputSchema, result);
  return {
    [UPSTREAM_RESULT]: result as JsonObject,
    ...(problem === undefined ? {} : { [ANSWER_PROBLEM]: problem }),
  };
}

/**
 * The answer for a kept upstream answer: as it came, or, when it does not fit the tool's output
 * schema, as a tool error (which a client does not check against the schema) with the upstream's
 * content and `structuredContent` unchanged, a last text block saying the upstream answered and
 * may have acted, and `_meta["idem/answer_problem"]`.
 */
export function answerFor(result: ProxyResult, problem: string | undefined): ProxyResult {
  if (problem === undefined) return result;
  const own = isObject(result._meta) ? result._meta : {};
  return {
    ...result,
    content: [
      ...result.content,
      {
        type: 'text',
        text:
          `idem proxy: the upstream answered this call (it may have acted), but ${problem}; ` +
          `its answer is passed on as it came, marked as a tool error so that a client does not ` +
          `reject it. Do not repeat the call with a new idempotency_key before checking what it did.`,
      },
    ],
    isError: true,
    _meta: { ...own, 'idem/answer_problem': problem },
  };
}

/** Why a result does not fit the declared output schema, or undefined when it does (or none is declared). */
export function outputProblem(
  outputSchema: Record<string, unknown> | undefined,
  result: ProxyResult,
): string | undefined {
  if (outputSchema === undefined || result.isError === true) return undefined;
  if (result.structuredContent === undefined)
    return 'the tool declares an output schema and the answer has no structuredContent';
  let check = compiled.get(outputSchema);
  if (check === undefined) {
    try {
      const validate = validators.getValidator(outputSchema as never);
      check = (value) => {
        const verdict = validate(value);
        return verdict.valid ? undefined : verdict.errorMessage;
      };
    } catch {
      check = () => 'the output schema the tool declares cannot be compiled';
    }
    compiled.set(outputSchema, check);
  }
  const message = check(result.structuredContent);
  return message === undefined
    ? undefined
    : `its structuredContent does not match the tool's output schema (${message.slice(0, 300)})`;
}

function tooLarge(isError: boolean, bytes: number, maxBytes: number): JsonObject {
  return {
    content: [
      {
        type: 'text',
        text:
          `idem proxy: the upstream answered this call${isError ? ' with a tool error' : ''} ` +
          `(${bytes} bytes of JSON), but the answer is over the proxy's limit of ${maxBytes} bytes ` +
          `(--max-answer-bytes) and was not kept, so it cannot be replayed. The call was made once; ` +
          `do not repeat it with a new idempotency_key to get the answer again.`,
      },
    ],
    isError: true,
    _meta: {
      'idem/answer_not_kept': {
        code: ANSWER_TOO_LARGE,
        bytes,
        limit_bytes: maxBytes,
        upstream_is_error: isError,
      },
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
