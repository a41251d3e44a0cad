import { createHash } from 'node:crypto';

/** The journal's id and the idempotency key of one tool call, both made in code from its identity. */
export interface CallIdentity {
  readonly intentId: string;
  readonly key: string;
}

const PRINTABLE = /^[\x20-\x7e]+$/;
const MAX_INTENT_ID = 200;

/**
 * The intent id and idempotency key of the tool call `callId` (the framework's id of the call: the
 * AI SDK's `toolCallId`, …) in the run or conversation `runId`. Both follow from those two ids alone:
 * the same call, re-executed by the framework or re-run after the agent process died, gets the same
 * key even before the journal is read; another call or another run gets another key. The key is a
 * SHA-256 digest, so it says nothing of the run or the call; the intent id is `<runId>/<callId>` when
 * that is printable ASCII of at most 200 characters, else `<runId>/#<digest>`. `runId` must be 1 to
 * 120 printable ASCII characters (`validRunId`).
 */
export function callIdentity(runId: string, callId: string): CallIdentity {
  const digest = createHash('sha256').update(`idem.agent-call/1\n${runId}\n${callId}`).digest('base64url');
  const readable = `${runId}/${callId}`;
  const intentId =
    readable.length <= MAX_INTENT_ID && PRINTABLE.test(readable) ? readable : `${runId}/#${digest}`;
  return { intentId, key: `agent_${digest}` };
}

/** True when `runId` can name a run: 1 to 120 printable ASCII characters. */
export function validRunId(runId: unknown): runId is string {
  return typeof runId === 'string' && runId.length <= 120 && PRINTABLE.test(runId);
}
