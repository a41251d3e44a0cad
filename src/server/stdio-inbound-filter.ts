import { Transform } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { prototypeKeyRefusal } from '../mcp/prototype-key-refusal.js';

/** Past this many bytes without a newline, input is handed on as it is (the SDK's own bound applies). */
const MAX_LINE_BYTES = 8 * 1024 * 1024;

/**
 * Sits between stdin and the SDK's stdio transport, one newline-delimited message at a time, and
 * answers itself (through `answer`, one JSON line) what the SDK would drop without a word:
 * a line that is not JSON (-32700 Parse error, as JSON-RPC 2.0 prescribes), an array (MCP over
 * stdio has no batches; an empty one is an Invalid Request in any case: -32600), and a
 * `tools/call` whose arguments hold a `__proto__` key (`invalid_argument`, see prototypeKeyRefusal).
 * Every other line passes through unchanged.
 */
export function stdioInboundFilter(answer: (line: string) => void): Transform {
  let partial = '';
  const decoder = new StringDecoder('utf8');
  const lineOf = (line: string): string | undefined => {
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
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      partial += decoder.write(chunk);
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      let out = '';
      for (const line of lines) out += lineOf(line) ?? '';
      if (Buffer.byteLength(partial) > MAX_LINE_BYTES) {
        out += partial;
        partial = '';
      }
      done(null, out === '' ? undefined : out);
    },
    flush(done) {
      partial += decoder.end();
      done(null, partial === '' ? undefined : partial);
    },
  });
}

function errorLine(code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null });
}
