import { Transform } from 'node:stream';
import { prototypeKeyRefusal } from 'idem/mcp';

/** Past this many bytes without a newline, input is handed on as it is (the SDK's own bound applies). */
const MAX_LINE_BYTES = 8 * 1024 * 1024;

/**
 * Sits between stdin and the SDK's stdio transport, one newline-delimited message at a time, and
 * answers itself (through `answer`, one JSON line) what the SDK would drop without a word or read
 * wrongly: a line that is not UTF-8 (-32700 Parse error: the SDK would read its bad bytes as U+FFFD,
 * and two different lines would be the same arguments), a line that is not JSON (-32700, as
 * JSON-RPC 2.0 prescribes), an array (MCP over stdio has no batches; an empty one is an Invalid
 * Request in any case: -32600), and a `tools/call` whose arguments hold a `__proto__` key
 * (`invalid_argument`, see prototypeKeyRefusal). Every other line passes through unchanged.
 */
export function stdioInboundFilter(answer: (line: string) => void): Transform {
  // The bytes of the line being read, split on newline bytes: a line is decoded only once whole.
  let partial: Buffer[] = [];
  let partialBytes = 0;
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  const lineOf = (bytes: Buffer): string | undefined => {
    let line: string;
    try {
      line = decoder.decode(bytes);
    } catch {
      answer(errorLine(-32700, 'Parse error: the line is not valid UTF-8'));
      return undefined;
    }
    const text = line.replace(/\r$/, '');
    if (text.trim() === '') return `${line}\n`;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      answer(errorLine(-32700, 'Parse error: the line is not JSON'));
      return undefined;
    }
    if (Array.isArray(message)) {
      answer(
        errorLine(
          -32600,
          message.length === 0
            ? 'Invalid Request: empty JSON-RPC batch'
            : 'Invalid Request: JSON-RPC batches are not supported; send one message per line',
        ),
      );
      return undefined;
    }
    const refusal = prototypeKeyRefusal(message);
    if (refusal !== undefined) {
      answer(JSON.stringify(refusal));
      return undefined;
    }
    return `${line}\n`;
  };
  const takePartial = (tail: Buffer): Buffer => {
    const whole = partial.length === 0 ? tail : Buffer.concat([...partial, tail]);
    partial = [];
    partialBytes = 0;
    return whole;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      let out = '';
      let start = 0;
      for (let end = chunk.indexOf(0x0a); end !== -1; end = chunk.indexOf(0x0a, start)) {
        out += lineOf(takePartial(chunk.subarray(start, end))) ?? '';
        start = end + 1;
      }
      if (start < chunk.length) {
        partial.push(chunk.subarray(start));
        partialBytes += chunk.length - start;
      }
      if (partialBytes > MAX_LINE_BYTES) {
        done(
          null,
          out === ''
            ? takePartial(Buffer.alloc(0))
            : Buffer.concat([Buffer.from(out), takePartial(Buffer.alloc(0))]),
        );
        return;
      }
      done(null, out === '' ? undefined : out);
    },
    flush(done) {
      done(null, partialBytes === 0 ? undefined : takePartial(Buffer.alloc(0)));
    },
  });
}

function errorLine(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
}
