import {
  ProtocolError,
  ProtocolErrorCode,
  SdkError,
  SdkErrorCode,
  SdkHttpError,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { classifyFailure } from '../../packages/idem/src/client/classify-failure.js';
import { replyVerdict } from '../../packages/idem/src/client/reply-verdict.js';
import {
  CLIENT_FAILURE_CODES,
  isToolErrorCode,
  TOOL_ERROR_CODES,
  type ToolErrorCode,
} from '../../packages/idem/src/client/tool-error-codes.js';
import { errorLabel, replyError, type ToolError } from '../../packages/idem/src/client/tool-reply.js';
import { ERROR_CODES } from '../../packages/idem/src/core/errors.js';

const http = (status: number) =>
  new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `HTTP ${status}`, { status });
const withCode = (code: string) => Object.assign(new Error(code), { code });

// Every way a call can throw, what the client reports for it, and whether a retry is worth it.
const THROWN: Array<[string, unknown, ToolErrorCode, 'transient' | 'definitive', string]> = [
  ['HTTP 503', http(503), 'http_error', 'transient', 'http_503'],
  ['HTTP 429', http(429), 'http_error', 'transient', 'http_429'],
  ['HTTP 404', http(404), 'http_error', 'definitive', 'http_404'],
  ['HTTP 401', http(401), 'forbidden', 'definitive', 'forbidden'],
  ['HTTP 403', http(403), 'forbidden', 'definitive', 'forbidden'],
  ['HTTP 413', http(413), 'invalid_argument', 'definitive', 'invalid_argument'],
  ['UnauthorizedError', new UnauthorizedError('no token'), 'forbidden', 'definitive', 'forbidden'],
  ['SDK timeout', new SdkError(SdkErrorCode.RequestTimeout, 't'), 'timeout', 'transient', 'timeout'],
  [
    'connection closed',
    new SdkError(SdkErrorCode.ConnectionClosed, 'c'),
    'connection_closed',
    'transient',
    'connection_closed',
  ],
  [
    'not connected',
    new SdkError(SdkErrorCode.NotConnected, 'n'),
    'connection_closed',
    'transient',
    'connection_closed',
  ],
  ['"Not connected"', new Error('Not connected'), 'connection_closed', 'transient', 'connection_closed'],
  ['send failed', new SdkError(SdkErrorCode.SendFailed, 's'), 'send_failed', 'transient', 'send_failed'],
  [
    'unexpected content',
    new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, 'u'),
    'transport_error',
    'transient',
    'transport_error',
  ],
  [
    'JSON-RPC invalid params',
    new ProtocolError(ProtocolErrorCode.InvalidParams, 'p'),
    'invalid_argument',
    'definitive',
    'invalid_argument',
  ],
  [
    'JSON-RPC method not found',
    new ProtocolError(ProtocolErrorCode.MethodNotFound, 'm'),
    'protocol_error',
    'definitive',
    'protocol_error',
  ],
  ['ECONNREFUSED', withCode('ECONNREFUSED'), 'network', 'transient', 'network'],
  [
    'fetch failed (cause ECONNRESET)',
    new TypeError('fetch failed', { cause: withCode('ECONNRESET') }),
    'network',
    'transient',
    'network',
  ],
  ['a plain Error', new Error('what'), 'transport_error', 'transient', 'transport_error'],
  ['a string', 'what', 'transport_error', 'transient', 'transport_error'],
];

describe('client failure codes: one closed set', () => {
  it("is Idem's server codes plus the client's own, each once", () => {
    expect(TOOL_ERROR_CODES).toEqual([...ERROR_CODES, ...CLIENT_FAILURE_CODES]);
    expect(new Set(TOOL_ERROR_CODES).size).toBe(TOOL_ERROR_CODES.length);
    expect(isToolErrorCode('http_error')).toBe(true);
    expect(isToolErrorCode('http_503')).toBe(false);
    expect(isToolErrorCode('error')).toBe(false);
  });

  it.each(THROWN)('%s is %s', (_name, thrown, code, kind, label) => {
    const failure = classifyFailure(thrown);
    expect(failure.kind).toBe(kind);
    expect(failure.error.code).toBe(code);
    expect(isToolErrorCode(failure.error.code)).toBe(true);
    expect(failure.error.retryable).toBe(kind === 'transient');
    expect(errorLabel(failure.error)).toBe(label);
  });

  it('keeps the HTTP status beside the code', () => {
    expect(classifyFailure(http(502)).error).toMatchObject({ code: 'http_error', httpStatus: 502 });
    expect(classifyFailure(http(401)).error).toMatchObject({ code: 'forbidden', httpStatus: 401 });
  });

  it("passes a server's code of the set through, and files any other as tool_error with serverCode", () => {
    for (const code of TOOL_ERROR_CODES) {
      expect(replyError({ error: { code, message: 'm', retryable: false } })).toEqual({
        code,
        message: 'm',
        retryable: false,
      });
    }
    const foreign = replyError({ error: { code: 'RATE_LIMITED', message: 'slow down', retryable: true } });
    expect(foreign).toEqual({
      code: 'tool_error',
      serverCode: 'RATE_LIMITED',
      message: 'slow down',
      retryable: true,
    });
    expect(errorLabel(foreign as ToolError)).toBe('RATE_LIMITED');
    expect(replyError({ error: 'text' })).toBeUndefined();
  });

  it('gives every reply verdict a code of the set', () => {
    const replies = [
      { isError: false, content: { status: 'cancelled', operation_id: 'op_1' } },
      { isError: true, content: { text: 'it broke' } },
      { isError: true, content: { error: { code: 'weird', message: 'w', retryable: true } } },
      { isError: true, content: { error: { code: 'busy', message: 'b', retryable: true } } },
    ];
    const codes = replies.map((reply) => {
      const verdict = replyVerdict(reply);
      return 'error' in verdict ? verdict.error?.code : undefined;
    });
    expect(codes).toEqual(['cancelled', 'tool_error', 'tool_error', 'busy']);
    // A foreign retryable error is still retried, under its own flag.
    expect(replyVerdict(replies[2]!).kind).toBe('retry');
  });
});
