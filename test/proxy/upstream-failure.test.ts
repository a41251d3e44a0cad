import { ProtocolError, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { upstreamFailure } from '../../packages/idem-cli/src/proxy/upstream-failure.js';

const plain = { timeoutMs: 1_000, aborted: false };

describe('upstreamFailure', () => {
  it('says nothing was sent only for a refusal before the request was written', () => {
    const refused = Object.assign(new TypeError('fetch failed'), {
      cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' }),
    });
    expect(upstreamFailure(refused, plain)).toMatchObject({ sent: false, kind: 'connection_refused' });
    expect(upstreamFailure(new SdkError(SdkErrorCode.NotConnected, 'Not connected'), plain)).toMatchObject({
      sent: false,
      kind: 'not_connected',
    });
    expect(
      upstreamFailure(new SdkError(SdkErrorCode.MethodNotSupportedByProtocolVersion, 'no'), plain),
    ).toMatchObject({ sent: false, kind: 'not_connected' });
    expect(upstreamFailure(new Error('Not connected'), plain)).toMatchObject({ sent: false });
  });

  it('treats every JSON-RPC error from the upstream as after the call, whatever its code', () => {
    for (const code of [-32602, -32601, -32600, -32603, -32000, -32001, 42]) {
      const failure = upstreamFailure(new ProtocolError(code, 'refused'), plain);
      expect(failure).toMatchObject({ sent: true, kind: 'upstream_error' });
      expect(failure.reason).toContain(String(code));
    }
  });

  it('classifies what may have reached the upstream by kind', () => {
    const cases: [unknown, string][] = [
      [new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out'), 'timeout'],
      [new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), 'connection_closed'],
      [new SdkError(SdkErrorCode.SendFailed, 'write EPIPE'), 'send_failed'],
      [new SdkError(SdkErrorCode.InvalidResult, 'Invalid result'), 'invalid_answer'],
      [new SdkError(SdkErrorCode.UnsupportedResultType, 'input_required'), 'invalid_answer'],
      [
        new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, 'Error POSTing', { status: 500 }),
        'http_status',
      ],
      [new SdkError(SdkErrorCode.CapabilityNotSupported, 'no'), 'other'],
      [new Error('socket hang up'), 'other'],
      ['a string', 'other'],
    ];
    for (const [error, kind] of cases)
      expect(upstreamFailure(error, plain)).toMatchObject({ sent: true, kind });
    expect(upstreamFailure(new SdkError(SdkErrorCode.RequestTimeout, 'x'), plain).reason).toMatch(/1000 ms/);
    // Our own signal (the lease was lost) ended the wait: still after the call was sent.
    expect(
      upstreamFailure(new SdkError(SdkErrorCode.RequestTimeout, 'x'), { timeoutMs: 1_000, aborted: true }),
    ).toMatchObject({ sent: true, kind: 'aborted' });
  });
});
