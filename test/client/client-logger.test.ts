import { Console } from 'node:console';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClientLoggerOption } from '../../packages/idem/src/client/client-logger.js';
import type { LogFields } from '../../packages/idem/src/core/logger.js';
import { FakeClock } from '../../packages/idem/src/testing/fake-clock.js';
import { ScriptedServer, drive, result, scriptedClient } from '../helpers/client-fixtures.js';
import { cleanup } from '../helpers/mcp-fixtures.js';

afterEach(cleanup);

/** Every line written to a stream, parsed as JSON (after the stream's pending writes). */
function captured(): { stream: PassThrough; lines: () => Promise<Array<Record<string, unknown>>> } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  return {
    stream,
    lines: async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
  };
}

interface Form {
  readonly name: string;
  readonly logger: ClientLoggerOption;
  /** The lines it received, as objects; undefined for a logger that cannot keep any. */
  readonly lines?: () => Promise<Array<Record<string, unknown>>>;
}

function forms(): Form[] {
  const idemLines: Array<Record<string, unknown>> = [];
  const record = (level: string) => (event: string, fields?: LogFields) =>
    idemLines.push({ level, event, ...fields });
  const fnLines: string[] = [];
  const forPino = captured();
  const forConsole = captured();
  return [
    {
      name: 'an Idem Logger',
      logger: { info: record('info'), warn: record('warn'), error: record('error') },
      lines: () => Promise.resolve(idemLines),
    },
    { name: 'a pino logger', logger: pino(forPino.stream), lines: forPino.lines },
    {
      // Both streams into one: where console's lines go (stdout or stderr) is toLogger's choice.
      name: 'console',
      logger: new Console({ stdout: forConsole.stream, stderr: forConsole.stream }),
      lines: forConsole.lines,
    },
    {
      name: 'a plain function',
      logger: (line: string) => fnLines.push(line),
      lines: () => Promise.resolve(fnLines.map((line) => JSON.parse(line) as Record<string, unknown>)),
    },
    {
      name: 'a logger that throws',
      logger: {
        info: () => {
          throw new Error('log sink is gone');
        },
        warn: () => undefined,
        error: () => undefined,
      },
    },
    {
      name: 'a logger that returns a rejected promise',
      logger: {
        info: () => Promise.reject(new Error('log sink is gone')) as unknown as void,
        warn: () => undefined,
        error: () => undefined,
      },
    },
  ];
}

describe('IdemClient logger: any form the Executor takes, and a failing one, leave the outcome intact', () => {
  it.each(forms())('$name', async ({ logger, lines }) => {
    const clock = new FakeClock();
    const server = new ScriptedServer(clock).script('create_note', (call) =>
      result({
        status: 'succeeded',
        operation_id: 'op_1',
        note_id: `note_${String(call.args.idempotency_key)}`,
      }),
    );
    const idem = await scriptedClient(server, clock, { logger });

    const outcome = await drive(clock, idem.call('create_note', { body: 'b' }, { intentId: 'step-1' }));

    // The server committed: the caller gets that result, and the journal settles it.
    expect(outcome).toMatchObject({ status: 'succeeded', operationId: 'op_1', attempts: 1 });
    if (outcome.status !== 'succeeded') throw new Error('unreachable');
    expect(outcome.result.note_id).toBe(`note_${outcome.key}`);
    expect(idem.journal.require('step-1')).toMatchObject({ status: 'succeeded', operationId: 'op_1' });
    expect(server.callsOf('create_note')).toHaveLength(1);
    if (lines === undefined) return;
    const written = (await lines()).filter((line) => line.event === 'idem.client.outcome');
    expect(written).toHaveLength(1);
    expect(written[0]).toMatchObject({
      intent_id: 'step-1',
      tool: 'create_note',
      status: 'succeeded',
      operation_id: 'op_1',
      attempts: 1,
    });
    expect(JSON.stringify(written[0])).not.toContain(outcome.key);
  });
});
