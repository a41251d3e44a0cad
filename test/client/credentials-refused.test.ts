import { SdkErrorCode, SdkHttpError, UnauthorizedError } from '@modelcontextprotocol/client';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { classifyFailure } from '../../packages/idem/src/client/classify-failure.js';
import { connectTarget } from '../../packages/idem/src/client/connect-target.js';
import { credentialsRefusal } from '../../packages/idem/src/client/credentials-refusal.js';
import { IdemClient } from '../../packages/idem/src/client/idem-client.js';
import { TOOL_ERROR_CODES } from '../../packages/idem/src/client/tool-error-codes.js';
import { tempJournal } from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';
import { REFUSALS, startRefusingServer, type RefusingServer } from '../helpers/refusing-server.js';

const servers: RefusingServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await cleanup();
});

/** The SDK v2 transport's error for a refused POST, as it builds it. */
function postError(status: number, text: string): SdkHttpError {
  return new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
    status,
    statusText: status === 401 ? 'Unauthorized' : 'Forbidden',
    text,
  });
}

describe('credentialsRefusal: a 401/403 says that the server refused the credentials, with the status', () => {
  it.each(Object.entries(REFUSALS))('%s', (_, refusal) => {
    const expected =
      `the server refused the credentials (HTTP ${refusal.status})` +
      (refusal.reason === undefined ? '' : `: ${refusal.reason}`);
    expect(credentialsRefusal(postError(refusal.status, refusal.body))).toEqual({
      httpStatus: refusal.status,
      message: expected,
    });
    // SDK 1.x's transport (inside a v2 client) carries the status as `code` and the body in its message.
    const v1 = new StreamableHTTPError(refusal.status, `Error POSTing to endpoint: ${refusal.body}`);
    expect(credentialsRefusal(v1)).toEqual({ httpStatus: refusal.status, message: expected });
    expect(classifyFailure(v1)).toEqual({
      kind: 'definitive',
      error: { code: 'forbidden', message: expected, retryable: false, httpStatus: refusal.status },
    });
  });

  it('the SDK UnauthorizedError (an auth provider gave up): forbidden, no status claimed', () => {
    expect(classifyFailure(new UnauthorizedError('Failed to re-authenticate'))).toEqual({
      kind: 'definitive',
      error: {
        code: 'forbidden',
        message: 'the server refused the credentials: Failed to re-authenticate',
        retryable: false,
      },
    });
  });

  it('other statuses and errors are not refusals of credentials', () => {
    expect(credentialsRefusal(postError(404, 'no'))).toBeUndefined();
    expect(
      credentialsRefusal(new StreamableHTTPError(503, 'Error POSTing to endpoint: busy')),
    ).toBeUndefined();
    expect(credentialsRefusal(new Error('Error POSTing to endpoint: '))).toBeUndefined();
    expect(classifyFailure(new StreamableHTTPError(503, 'busy'))).toMatchObject({
      kind: 'transient',
      error: { code: 'http_error', httpStatus: 503, retryable: true },
    });
    const long = 'x'.repeat(500);
    expect(credentialsRefusal(postError(403, long))?.message).toHaveLength(
      'the server refused the credentials (HTTP 403): '.length + 200,
    );
  });
});

describe('IdemClient against a server that refuses the credentials (loopback HTTP)', () => {
  it.each(Object.entries(REFUSALS))(
    '%s: forbidden at once, saying so with the status',
    async (_, refusal) => {
      const server = await startRefusingServer(refusal);
      servers.push(server);
      const idem = new IdemClient({
        connect: (options) => connectTarget({ url: server.url, token: 'not-a-valid-token' }, options),
        journal: tempJournal().journal,
      });

      const outcome = await idem.call('create_note', { workspace: 'default', body: 'b' });
      await idem.close();

      expect(outcome).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: { code: 'forbidden', retryable: false, httpStatus: refusal.status },
      });
      if (outcome.status !== 'failed') throw new Error('unreachable');
      expect(TOOL_ERROR_CODES).toContain(outcome.error.code);
      expect(outcome.error.message).toBe(
        `the server refused the credentials (HTTP ${refusal.status})` +
          (refusal.reason === undefined ? '' : `: ${refusal.reason}`),
      );
      expect(outcome.error.message).not.toContain('not-a-valid-token');
      // Refused at the handshake: one request, never retried.
      expect(server.requests).toEqual([{ method: 'POST', authorization: 'Bearer not-a-valid-token' }]);
    },
  );
});
