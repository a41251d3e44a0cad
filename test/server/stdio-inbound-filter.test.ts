import { describe, expect, it } from 'vitest';
import { stdioInboundFilter } from '../../packages/idem-cli/src/server/stdio-inbound-filter.js';

/** What the filter hands on and what it answers itself, for input written in these chunks. */
async function run(chunks: Buffer[]): Promise<{ passed: string; answers: string[] }> {
  const answers: string[] = [];
  const filter = stdioInboundFilter((line) => answers.push(line));
  const out: Buffer[] = [];
  filter.on('data', (chunk: Buffer) => out.push(chunk));
  const ended = new Promise((resolve) => filter.on('end', resolve));
  for (const chunk of chunks) filter.write(chunk);
  filter.end();
  await ended;
  return { passed: Buffer.concat(out).toString('utf8'), answers };
}

describe('stdioInboundFilter and UTF-8', () => {
  it('passes a line whose characters are split across chunks through unchanged', async () => {
    const line = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"é😀"}}\n');
    // Cut inside é (2 bytes) and inside 😀 (4 bytes).
    const at = [line.indexOf(0xc3) + 1, line.indexOf(0xf0) + 2];
    const { passed, answers } = await run([
      line.subarray(0, at[0]),
      line.subarray(at[0], at[1]),
      line.subarray(at[1]),
    ]);
    expect(answers).toEqual([]);
    expect(passed).toBe(line.toString('utf8'));
  });

  it('answers -32700 for a line that is not UTF-8 and hands on the lines around it', async () => {
    const good = '{"jsonrpc":"2.0","id":1,"method":"ping"}\n';
    const bad = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"'),
      Buffer.from([0xed, 0xa0, 0x80]),
      Buffer.from('"}}\n'),
    ]);
    const { passed, answers } = await run([Buffer.from(good), bad, Buffer.from(good)]);
    expect(passed).toBe(good + good);
    expect(answers.map((a) => JSON.parse(a) as unknown)).toEqual([
      {
        jsonrpc: '2.0',
        error: { code: -32700, message: 'Parse error: the line is not valid UTF-8' },
        id: null,
      },
    ]);
  });
});
