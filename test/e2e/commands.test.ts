import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getOperation, runCli, waitFor, waitForOperation } from '../helpers/durable-fixtures.js';
import {
  callTool,
  cleanup,
  closeQuietly,
  connectHttp,
  ensureBuilt,
  makeTempDir,
  startServerProcess,
  type ServerProcess,
} from '../helpers/mcp-fixtures.js';
import { adminPool, dropSchema, freshSchema, serverDbUrl } from '../helpers/multi-fixtures.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';

// Black-box: `node dist/cli/main.js serve --commands FILE` with an SDK v2 client over HTTP. Each
// command appends to a side file, which proves how often it ran, whatever the server says.

type Engine = 'sqlite' | 'postgres';
const engines: Engine[] = postgresAvailable ? ['sqlite', 'postgres'] : ['sqlite'];

let clients: Client[] = [];
/** Process groups of commands a killed server left running: ended after each test. */
let orphans: number[] = [];
const schemas: string[] = [];

beforeAll(() => ensureBuilt());

afterEach(async () => {
  for (const pid of orphans) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  orphans = [];
  await Promise.all(clients.map(closeQuietly));
  clients = [];
  await cleanup();
});

afterAll(async () => {
  if (schemas.length === 0) return;
  const pool = adminPool('commands');
  for (const schema of schemas) await dropSchema(pool, schema);
  await pool.end();
});

async function connect(server: ServerProcess): Promise<Client> {
  const client = await connectHttp(server.url);
  clients.push(client);
  return client;
}

interface Setup {
  dir: string;
  side: string;
  commandsFile: string;
  outputDir: string;
  args: string[];
  sideLines(): string[];
}

function setup(engine: Engine): Setup {
  const dir = makeTempDir('idem-commands-e2e-');
  const side = join(dir, 'side.txt');
  const commandsFile = join(dir, 'commands.json');
  const sh = (script: string, timeout = '30s') => ({
    argv: ['sh', '-c', script],
    timeout,
    env: { SIDE: side },
  });
  writeFileSync(
    commandsFile,
    JSON.stringify({
      migrate: {
        ...sh(
          'echo "started $$" >> "$SIDE"; echo "applying 0042_add_index"; sleep 4; echo "finished" >> "$SIDE"; echo done',
        ),
        description: 'Apply pending migrations',
      },
      fail: sh('echo "ran" >> "$SIDE"; echo "ERROR: duplicate key" >&2; exit 7'),
      env: { argv: ['env'], timeout: '10s', env: { APP_MODE: 'demo' } },
      lines: sh('i=0; while [ $i -lt 300 ]; do echo "line $i"; i=$((i+1)); done; echo "ran" >> "$SIDE"'),
      once: sh('echo "ran $$" >> "$SIDE"; sleep 0.5'),
    }),
  );
  let db: string[];
  let outputDir: string;
  if (engine === 'sqlite') {
    const path = join(dir, 'idem.sqlite');
    db = ['--db', path];
    outputDir = `${path}.commands`; // the default beside the database
  } else {
    const schema = freshSchema();
    schemas.push(schema);
    outputDir = join(dir, 'output');
    db = ['--db', serverDbUrl(schema), '--db-schema', schema, '--command-output', outputDir];
  }
  return {
    dir,
    side,
    commandsFile,
    outputDir,
    args: [...db, '--commands', commandsFile, '--worker-lease', '500ms', '--worker-poll', '50ms'],
    sideLines: () =>
      existsSync(side)
        ? readFileSync(side, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
        : [],
  };
}

const run = (client: Client, command: string, key: string) =>
  callTool(client, 'run_command', { idempotency_key: key, workspace: 'default', command });

describe('idem serve without --commands', () => {
  it('lists no command tool', async () => {
    const dir = makeTempDir('idem-commands-none-');
    const server = await startServerProcess({ args: ['--db', join(dir, 'idem.sqlite')] });
    const client = await connect(server);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('get_operation');
    expect(names).not.toContain('run_command');
    expect(names).not.toContain('read_command_output');
  });
});

describe('idem serve --commands: usage errors (exit 2), before anything is created', () => {
  it.each([
    [
      '{"migrate": {"argv": "npm run migrate"}}',
      'command "migrate": argv must be a non-empty array of strings',
    ],
    ['{"migrate": {"argv": ["true"], "timeout": "10"}}', 'command "migrate": timeout: "10" has no unit'],
    ['{"migrate": {"argv": ["true"], "shell": true}}', 'unknown field "shell"'],
    ['not json', 'is not JSON'],
  ])('%s', async (text, message) => {
    const dir = makeTempDir('idem-commands-usage-');
    const file = join(dir, 'commands.json');
    writeFileSync(file, text);
    const db = join(dir, 'idem.sqlite');
    const result = await runCli(['serve', '--db', db, '--commands', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`idem: --commands: ${file}`);
    expect(result.stderr).toContain(message);
    expect(existsSync(db)).toBe(false);
    expect(existsSync(`${db}.commands`)).toBe(false);
  });

  it('a missing file, and a flag without --commands', async () => {
    const dir = makeTempDir('idem-commands-usage-');
    const missing = await runCli([
      'serve',
      '--db',
      join(dir, 'x.sqlite'),
      '--commands',
      join(dir, 'nope.json'),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--commands: cannot read .*nope\.json: ENOENT/);
    const stray = await runCli(['serve', '--db', join(dir, 'x.sqlite'), '--command-output', dir]);
    expect(stray).toMatchObject({
      code: 2,
      stderr: 'idem: --command-output needs --commands; see "idem serve --help"\n',
    });
    const limit = await runCli([
      'worker',
      '--provider-url',
      'http://127.0.0.1:1',
      '--command-output-limit',
      '10',
    ]);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--command-output-limit must be at least 4096 bytes');
  });
});

describe.each(engines)('idem serve --commands on %s', (engine) => {
  it('the server is SIGKILLed while a command runs: never started again, outcome_unknown with a next_action', async () => {
    const s = setup(engine);
    let server = await startServerProcess({ args: s.args });
    let client = await connect(server);
    const tools = (await client.listTools()).tools;
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['run_command', 'read_command_output']));
    expect(tools.find((t) => t.name === 'read_command_output')?.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'run_command')?.description).toContain(
      'migrate: Apply pending migrations',
    );

    const key = `migrate-${randomUUID()}`;
    const accepted = await run(client, 'migrate', key);
    expect(accepted.sc.status).toBe('accepted');
    const opId = accepted.sc.operation_id as string;
    await waitFor('the command to start', () => (s.sideLines().length === 1 ? true : undefined));
    orphans.push(Number(s.sideLines()[0]?.split(' ')[1]));
    await waitFor('its first line of output', async () => {
      const read = await callTool(client, 'read_command_output', { operation_id: opId });
      return (read.sc.output as string).includes('applying') ? read : undefined;
    });

    const exit = await server.kill('SIGKILL');
    expect(exit.signal).toBe('SIGKILL');
    server = await startServerProcess({ args: s.args });
    client = await connect(server);

    const final = await waitForOperation(client, opId, { timeoutMs: 15_000 });
    expect(final.status).toBe('outcome_unknown');
    expect(final.error).toMatchObject({ code: 'outcome_unknown', retryable: false });
    expect(final.next_action).toContain('command "migrate"');
    expect(final.next_action).toContain('read_command_output');
    expect(final.next_action).toMatch(/process group \d+/);
    // The same key again: reported, never started.
    const again = await run(client, 'migrate', key);
    expect(again.isError).toBe(true);
    expect(again.sc).toMatchObject({ status: 'outcome_unknown', operation_id: opId });
    // What it printed before the crash is still there, from the file.
    const read = await callTool(client, 'read_command_output', { operation_id: opId });
    expect(read.sc).toMatchObject({ finished: true, started: true });
    expect(read.sc.output).toContain('applying 0042_add_index');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(s.sideLines().filter((l) => l.startsWith('started'))).toHaveLength(1);
    expect((await getOperation(client, opId)).attempts).toBe(1);
  });

  it("output files go once the operation's receipt is swept (--retention), logged as counts only", async () => {
    const s = setup(engine);
    const server = await startServerProcess({
      args: [...s.args, '--retention', '2s', '--sweep-interval', '200ms'],
    });
    const client = await connect(server);
    const key = randomUUID();
    const opId = (await run(client, 'fail', key)).sc.operation_id as string;
    expect((await waitForOperation(client, opId)).status).toBe('failed');
    // While the record exists its output is there: read_command_output reads it from the file.
    const read = await callTool(client, 'read_command_output', { operation_id: opId });
    expect(read.sc).toMatchObject({ finished: true, started: true });
    expect(read.sc.output).toContain('ERROR: duplicate key');

    const [pruned] = await server.waitForLogs((l) => l.event === 'commands.output_pruned', 1, 15_000);
    expect(pruned).toMatchObject({ level: 'info', operations: 1, files: 2 });
    expect(existsSync(join(s.outputDir, `${opId}.out`))).toBe(false);
    expect(existsSync(join(s.outputDir, `${opId}.json`))).toBe(false);
    expect(existsSync(s.outputDir)).toBe(true);
    // The receipt is a tombstone now: the key is refused, the command never runs again.
    const again = await run(client, 'fail', key);
    expect(again.sc.error).toMatchObject({ code: 'key_expired' });
    expect((await callTool(client, 'read_command_output', { operation_id: opId })).sc.error).toMatchObject({
      code: 'not_found',
    });
    expect(s.sideLines()).toEqual(['ran']);
    expect(server.stderrLines().join('\n')).not.toContain('ERROR: duplicate key');
  });

  it('cancel_operation during a long command: cancelled, with the evidence', async () => {
    const s = setup(engine);
    const server = await startServerProcess({ args: s.args });
    const client = await connect(server);
    const opId = (await run(client, 'migrate', randomUUID())).sc.operation_id as string;
    await waitFor('the command to start', () => (s.sideLines().length === 1 ? true : undefined));
    const cancel = await callTool(client, 'cancel_operation', { operation_id: opId });
    expect(cancel.sc.cancel).toBe('requested');
    const final = await waitForOperation(client, opId);
    expect(final.status).toBe('cancelled');
    expect(final.result).toMatchObject({ stopped_by: 'cancel', signal: 'SIGTERM', command: 'migrate' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(s.sideLines()).toHaveLength(1); // "finished" never written
  });

  it('a non-zero exit, the environment, offsets, and one process for a key sent at once', async () => {
    const s = setup(engine);
    const server = await startServerProcess({
      args: s.args,
      env: { IDEM_TOKEN: 'tok-leak-probe', SERVICE_API_KEY: 'sk-leak-probe' },
    });
    const client = await connect(server);

    const failed = await waitForOperation(
      client,
      (await run(client, 'fail', randomUUID())).sc.operation_id as string,
    );
    expect(failed).toMatchObject({
      status: 'failed',
      error: { code: 'internal', retryable: false },
      result: { exit_code: 7, last_lines: ['ERROR: duplicate key'] },
    });
    expect(failed.error?.message).toContain('exited with code 7');

    const envOp = await waitForOperation(
      client,
      (await run(client, 'env', randomUUID())).sc.operation_id as string,
    );
    expect(envOp.status).toBe('succeeded');
    const env = await callTool(client, 'read_command_output', { operation_id: envOp.operation_id });
    const printed = env.sc.output as string;
    expect(printed).toContain('APP_MODE=demo');
    expect(printed).not.toContain('leak-probe');
    expect(printed).not.toMatch(/^IDEM_/m);

    const linesOp = await waitForOperation(
      client,
      (await run(client, 'lines', randomUUID())).sc.operation_id as string,
    );
    const total = (linesOp.result as { output_bytes: number }).output_bytes;
    let offset = 0;
    let text = '';
    for (let i = 0; i < 100 && offset < total; i += 1) {
      const part = await callTool(client, 'read_command_output', {
        operation_id: linesOp.operation_id,
        offset,
        limit: 500,
      });
      expect(part.sc.offset).toBe(offset);
      text += part.sc.output as string;
      offset = part.sc.next_offset as number;
    }
    expect(text.split('\n').slice(0, 3)).toEqual(['line 0', 'line 1', 'line 2']);
    expect(text.endsWith('line 299\n')).toBe(true);
    expect(Buffer.byteLength(text)).toBe(total);

    const before = s.sideLines().length;
    const key = randomUUID();
    const more = await Promise.all([connect(server), connect(server), connect(server)]);
    const calls = await Promise.all([client, ...more, client, ...more].map((c) => run(c, 'once', key)));
    const ids = new Set(calls.map((c) => c.sc.operation_id));
    expect(ids.size).toBe(1);
    const onceOp = await waitForOperation(client, [...ids][0] as string);
    expect(onceOp.status).toBe('succeeded');
    expect(s.sideLines().length - before).toBe(1);
    expect(s.sideLines().filter((l) => l.startsWith('ran '))).toHaveLength(1);

    // Output never reaches the server's logs.
    expect(server.stderrLines().join('\n')).not.toContain('ERROR: duplicate key');
    expect(server.stderrLines().join('\n')).not.toContain('line 299');
    if (engine === 'sqlite') expect(existsSync(s.outputDir)).toBe(true);
  });
});
