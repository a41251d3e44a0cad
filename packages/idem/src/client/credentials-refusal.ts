import { SdkHttpError, UnauthorizedError } from '@modelcontextprotocol/client';

/** A server's refusal of the caller's credentials, in words an operator acts on. */
export interface CredentialsRefusal {
  /** 401 or 403; undefined for the SDK's UnauthorizedError, which does not say which. */
  readonly httpStatus: number | undefined;
  /** "the server refused the credentials (HTTP 401): <the server's own reason, when it gave one>". */
  readonly message: string;
}

const MAX_REASON = 200;
/** What the transports put before the response body in their messages (SDK 1.x and v2). */
const PREFIXES = /^(Streamable HTTP error: )?(Error POSTing to endpoint( \(HTTP \d{3}\))?: )?/;

/**
 * The HTTP status a transport error carries: the SDK v2 `SdkHttpError`'s `status`, or the numeric
 * `code` of SDK 1.x's `StreamableHTTPError` (a 1.x transport inside a v2 client). Undefined for
 * anything else.
 */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof SdkHttpError) return error.status;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (
    error instanceof Error &&
    typeof message === 'string' &&
    message.startsWith('Streamable HTTP error: ') &&
    Number.isInteger(code) &&
    (code as number) >= 100 &&
    (code as number) <= 599
  ) {
    return code as number;
  }
  return undefined;
}

/**
 * Says that the server refused the credentials when `error` is an HTTP 401 or 403 from the
 * transport (or the SDK's UnauthorizedError), with the status and the server's own short reason
 * (a JSON body's `message`, `error_description` or JSON-RPC `error.message`, or a one-line text
 * body; never an HTML page). Undefined for any other error.
 */
export function credentialsRefusal(error: unknown): CredentialsRefusal | undefined {
  const status = httpStatusOf(error);
  if (status === 401 || status === 403) {
    const reason = serverReason(error);
    return {
      httpStatus: status,
      message: `the server refused the credentials (HTTP ${status})${reason === undefined ? '' : `: ${reason}`}`,
    };
  }
  if (error instanceof UnauthorizedError) {
    const reason = oneLine(error.message);
    return {
      httpStatus: undefined,
      message: `the server refused the credentials${reason === '' ? '' : `: ${reason}`}`,
    };
  }
  return undefined;
}

/** The reason the server gave with an HTTP error: its body's message when the error kept the body. */
function serverReason(error: unknown): string | undefined {
  const data = (error as { data?: { text?: unknown } }).data;
  const text =
    typeof data?.text === 'string'
      ? data.text
      : error instanceof Error
        ? error.message.replace(PREFIXES, '')
        : '';
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    // Not JSON: a short text is the reason; a page of HTML says nothing in one line.
    return trimmed.startsWith('<') ? undefined : clip(oneLine(trimmed));
  }
  const reason = reasonIn(parsed);
  return reason === undefined ? undefined : clip(oneLine(reason));
}

function reasonIn(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const { message, error_description: description, error } = body as Record<string, unknown>;
  if (typeof message === 'string' && message !== '') return message;
  if (typeof description === 'string' && description !== '') return description;
  if (typeof error === 'object' && error !== null) {
    const nested = (error as { message?: unknown }).message;
    if (typeof nested === 'string' && nested !== '') return nested;
  }
  return typeof error === 'string' && error !== '' ? error : undefined;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function clip(text: string): string {
  return text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;
}
