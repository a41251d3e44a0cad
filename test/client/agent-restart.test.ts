import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IntentJournal } from '../../packages/idem/src/client/intent-journal.js';
import type { IntentOutcome } from '../../packages/idem/src/client/intent-outcome.js';
import { ensureClientBuilt, noteIdsInDb } from '../helpers/client-fixtures.js';
import {
  REPO_ROOT,
  cleanEnv,
  cleanup,
  makeTempDir,
  startServerProcess,
  track,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';

const AGENT = join(REPO_ROOT, 'test', 'client', 'fixtures', 'agent.mjs');

let server: ServerProcess;
let dbPath: string;

beforeAll(async () => {
  ensureClientBuilt();
  dbPath = join(makeTempDir(), 'notes.sqlite');
  server = await startServerProcess({ args: ['--db', dbPath] });
});
afterAll(cleanup);

function agent(args: string[]): {
  proc: ChildProcess;
  lines: string[];
  until(pred: (line: string) => boolean): Promise<string>;
} {
  const proc = track(
    spawn(process.execPath, [AGENT, ...args], { cwd: REPO_ROOT, env: cleanEnv(), stdio: 'pipe' }),
  );
  const lines: string[] = [];
  const waiters: Array<{ pred: (l: string) => boolean; resolve: (l: string) => void }> = [];
  let partial = '';
  let stderr = '';
  proc.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const w of waiters.filter((w) => w.pred(line))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const until = (pred: (line: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const seen = lines.find(pred);
      if (seen !== undefined) return resolve(seen);
      waiters.push({ pred, resolve });
      proc.once('exit', (code, signal) =>
        reject(new Error(`agent exited (${code ?? signal}); stdout ${lines.join('|')}; stderr ${stderr}`)),
      );
    });
  return { proc, lines, until };
}

describe('an agent killed after sending and before receiving', () => {
  it('resumes from its journal after a restart: the same note id, no second note', async () => {
    const journalPath = join(makeTempDir(), 'intents.sqlite');
    const body = `agent restart ${randomUUID()}`;

    const first = agent(['call', server.url, journalPath, body]);
    await first.until((line) => line.startsWith('response-dropped'));
    first.proc.kill('SIGKILL');
    await new Promise((resolve) => first.proc.once('exit', resolve));

    // The server acted; the agent never saw the answer; its journal holds the intent and its key.
    const created = noteIdsInDb(dbPath, body);
    expect(created).toHaveLength(1);
    const journal = IntentJournal.open(journalPath);
    const [intent, ...others] = journal.unsettled();
    journal.close();
    expect(others).toEqual([]);
    expect(intent).toMatchObject({ tool: 'create_note', status: 'pending', attempts: 1 });
    expect(intent?.args).toEqual({ workspace: 'default', body });

    const second = agent(['resume', server.url, journalPath]);
    await second.until((line) => line === 'done');
    const outcomes = second.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as IntentOutcome);

    expect(outcomes).toHaveLength(1);
    const outcome = outcomes[0] as IntentOutcome;
    if (outcome.status !== 'succeeded') throw new Error(`expected success, got ${JSON.stringify(outcome)}`);
    expect(outcome.intentId).toBe(intent?.intentId);
    expect(outcome.key).toBe(intent?.key);
    expect(outcome.replayed).toBe(true);
    expect(outcome.result.note_id).toBe(created[0]);
    expect(noteIdsInDb(dbPath, body)).toEqual(created);

    // Exactly two create_note calls reached the server: the first execution and the replay.
    const calls = await server.waitForLogs((l) => l.event === 'idem.call' && l.tool === 'create_note@v1', 2);
    expect(calls.map((l) => l.outcome)).toEqual(['executed', 'replayed']);

    const after = IntentJournal.open(journalPath);
    expect(after.unsettled()).toEqual([]);
    expect(after.require(outcome.intentId)).toMatchObject({
      status: 'succeeded',
      operationId: outcome.operationId,
    });
    after.close();
  });
});
