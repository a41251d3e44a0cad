import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ProviderFaults } from '../../packages/idem-cli/src/provider/index.js';
import {
  buildProviderModule,
  deployments,
  get,
  post,
  provider,
  REPO_ROOT,
  tempDir,
} from './provider-fixtures.js';

const app = { service: 'billing', version: '1.4.2' };

function postRaw(base: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

describe('ProviderFaults', () => {
  it('hands out faults first in, first out, by route, each for its number of times', () => {
    const faults = new ProviderFaults();
    faults.arm({ kind: 'status', status: 503, route: 'webhook' });
    faults.arm({ kind: 'drop_response', route: 'create', times: 2 });
    faults.arm({ kind: 'delay', delayMs: 5 });

    expect(faults.take('create')?.kind).toBe('drop_response');
    expect(faults.take('create')).toMatchObject({ kind: 'drop_response', remaining: 0 });
    expect(faults.take('create')?.kind).toBe('delay'); // no route: matches either
    expect(faults.take('create')).toBeUndefined();
    expect(faults.pending()).toHaveLength(1);
    expect(faults.take('webhook')).toMatchObject({ kind: 'status', status: 503 });
    expect(faults.take('webhook')).toBeUndefined();
  });

  it('defaults Retry-After to 1 second for 429 only, and clears', () => {
    const faults = new ProviderFaults();
    expect(faults.arm({ kind: 'status', status: 429 }).retryAfterSeconds).toBe(1);
    expect(faults.arm({ kind: 'status', status: 503 }).retryAfterSeconds).toBeUndefined();
    expect(faults.arm({ kind: 'status', status: 503, retryAfterSeconds: 4 }).retryAfterSeconds).toBe(4);
    expect(faults.clear()).toBe(3);
    expect(faults.pending()).toEqual([]);
  });

  it('refuses invalid specs', () => {
    const faults = new ProviderFaults();
    expect(() => faults.arm({ kind: 'delay' })).toThrow(/delayMs/);
    expect(() => faults.arm({ kind: 'status' })).toThrow(/status/);
    expect(() => faults.arm({ kind: 'status', status: 200 })).toThrow(TypeError);
    expect(() => faults.arm({ kind: 'drop_response', times: 0 })).toThrow(/times/);
    expect(() => faults.arm({ kind: 'nope' } as never)).toThrow(/kind/);
    expect(() => faults.arm({ kind: 'exit', route: 'other' } as never)).toThrow(/route/);
    expect(faults.pending()).toEqual([]);
  });
});

describe('faults on a running provider', () => {
  it('drop_response: the effect is committed but the caller gets no reply', async () => {
    const p = await provider({ mode: 'key' });
    p.faults.arm({ kind: 'drop_response', route: 'create' });
    await expect(postRaw(p.url, '/deployments', app, { 'Idempotency-Key': 'k' })).rejects.toThrow();

    const [created] = await deployments(p.url);
    expect(created).toMatchObject(app);
    // The retry with the same key replays the deployment the caller never heard about.
    const retry = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.deployment_id).toBe(created?.deployment_id);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('delay: the effect is visible before the late reply arrives', async () => {
    const p = await provider({ mode: 'none' });
    p.faults.arm({ kind: 'delay', delayMs: 250, route: 'create' });
    const started = performance.now();
    let settled = false;
    const pending = postRaw(p.url, '/deployments', app).finally(() => (settled = true));

    let visible = await deployments(p.url);
    while (visible.length === 0 && performance.now() - started < 200) visible = await deployments(p.url);
    expect(visible).toHaveLength(1);
    expect(settled).toBe(false);

    const response = await pending;
    expect(response.status).toBe(201);
    expect(performance.now() - started).toBeGreaterThanOrEqual(240);
    expect(((await response.json()) as { deployment_id: string }).deployment_id).toBe(
      visible[0]?.deployment_id,
    );
  });

  it('status 503: answers without applying, for the armed number of requests', async () => {
    const p = await provider({ mode: 'key' });
    p.faults.arm({ kind: 'status', status: 503, times: 2 });
    for (let attempt = 0; attempt < 2; attempt++) {
      const failed = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
      expect(failed.status).toBe(503);
      expect(failed.body.error).toBe('injected_fault');
      expect(failed.headers.get('retry-after')).toBeNull();
      expect(await deployments(p.url)).toHaveLength(0);
    }
    const succeeded = await post(p.url, '/deployments', app, { 'Idempotency-Key': 'k' });
    expect(succeeded.status).toBe(201);
    expect(succeeded.headers.get('idempotent-replayed')).toBeNull(); // the 503s recorded no key
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('status 429 carries Retry-After; 500 applies nothing either', async () => {
    const p = await provider({ mode: 'none' });
    p.faults.arm({ kind: 'status', status: 429 });
    p.faults.arm({ kind: 'status', status: 429, retryAfterSeconds: 7 });
    p.faults.arm({ kind: 'status', status: 500 });
    const first = await post(p.url, '/deployments', app);
    expect(first.status).toBe(429);
    expect(first.headers.get('retry-after')).toBe('1');
    const second = await post(p.url, '/deployments', app);
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('7');
    expect((await post(p.url, '/deployments', app)).status).toBe(500);
    expect(await deployments(p.url)).toHaveLength(0);
  });

  it('matches faults by route', async () => {
    const p = await provider({ mode: 'none' });
    p.faults.arm({ kind: 'status', status: 503, route: 'webhook' });
    expect((await post(p.url, '/deployments', app)).status).toBe(201);
    expect((await post(p.url, '/webhooks', {}, { 'Idempotency-Key': 'e' })).status).toBe(503);
    expect((await get(p.url, '/webhooks')).body.deliveries).toEqual([]);
    expect((await post(p.url, '/webhooks', {}, { 'Idempotency-Key': 'e' })).status).toBe(201);
  });

  it('drop_response on a webhook records the delivery; the retry is a duplicate', async () => {
    const p = await provider({ mode: 'none' });
    p.faults.arm({ kind: 'drop_response', route: 'webhook' });
    await expect(postRaw(p.url, '/webhooks', { e: 1 }, { 'Idempotency-Key': 'evt' })).rejects.toThrow();
    const retry = await post(p.url, '/webhooks', { e: 1 }, { 'Idempotency-Key': 'evt' });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ delivery: 'duplicate', times_received: 2 });
  });

  it('exit: calls the exit hook with 137 after committing and never replies', async () => {
    const exits: number[] = [];
    const p = await provider({ mode: 'none', exitProcess: (code) => void exits.push(code) });
    p.faults.arm({ kind: 'exit' });
    await expect(postRaw(p.url, '/deployments', app)).rejects.toThrow();
    expect(exits).toEqual([137]);
    expect(await deployments(p.url)).toHaveLength(1);
  });

  it('serves no /_faults unless started with faultsEndpoint', async () => {
    const p = await provider({ mode: 'none' });
    for (const method of ['GET', 'POST', 'DELETE']) {
      const answer = await fetch(`${p.url}/_faults`, {
        method,
        ...(method === 'POST' ? { body: JSON.stringify({ kind: 'exit' }) } : {}),
      });
      expect(answer.status, method).toBe(404);
      expect(await answer.json()).toMatchObject({
        error: 'not_found',
        message: expect.stringMatching(/--faults/),
      });
    }
    expect(p.faults.pending()).toEqual([]);
    expect((await post(p.url, '/deployments', app)).status).toBe(201);
  });

  it('arms, lists and clears faults over HTTP', async () => {
    const p = await provider({ mode: 'none', faultsEndpoint: true });
    const armed = await post(p.url, '/_faults', { kind: 'status', status: 503, route: 'create', times: 3 });
    expect(armed.status).toBe(201);
    expect(armed.body.armed).toMatchObject({ kind: 'status', status: 503, route: 'create', remaining: 3 });
    expect((await get(p.url, '/_faults')).body.faults).toHaveLength(1);
    expect((await post(p.url, '/deployments', app)).status).toBe(503);

    const invalid = await post(p.url, '/_faults', { kind: 'delay' });
    expect(invalid.status).toBe(422);
    expect(invalid.body.message).toMatch(/delayMs/);
    expect((await post(p.url, '/_faults', '{')).status).toBe(400);

    const cleared = await fetch(`${p.url}/_faults`, { method: 'DELETE' });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toEqual({ cleared: 1 });
    expect((await post(p.url, '/deployments', app)).status).toBe(201);

    await post(p.url, '/_faults', { kind: 'drop_response' });
    await expect(postRaw(p.url, '/deployments', app)).rejects.toThrow();
    expect(await deployments(p.url)).toHaveLength(2);
  });
});

function parseLogLine(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

interface ProviderProcess {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

describe('the provider as a separate process', () => {
  let built: ReturnType<typeof buildProviderModule>;
  const RUNNER = join(REPO_ROOT, 'test', 'provider', 'fixtures', 'run-provider.mjs');

  beforeAll(() => {
    built = buildProviderModule();
  });
  afterAll(() => built?.dispose());

  function run(args: string[]): Omit<ProviderProcess, 'url'> & { listening: Promise<string> } {
    const child = spawn(process.execPath, [RUNNER, built.modulePath, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onTestFinished(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('close', (code, signal) => resolve({ code, signal })),
    );
    const listening = new Promise<string>((resolve, reject) => {
      child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        for (const line of stderr.split('\n').slice(0, -1)) {
          const entry = parseLogLine(line);
          if (entry?.event === 'provider.listening') resolve(String(entry.url));
        }
      });
      void exited.then(({ code }) => reject(new Error(`provider exited with ${code}: ${stderr}`)));
    });
    listening.catch(() => {});
    return { child, listening, exited, stdout: () => stdout, stderr: () => stderr };
  }

  it('serves over the CLI command, logs provider.listening on stderr and prints nothing on stdout', async () => {
    const proc = run(['--mode', 'reference', '--port', '0']);
    const url = await proc.listening;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await get(url, '/health')).body).toEqual({ ok: true, mode: 'reference' });
    expect(parseLogLine(proc.stderr().split('\n')[0] as string)).toMatchObject({
      level: 'info',
      event: 'provider.listening',
      mode: 'reference',
      url,
    });
    // No --faults: the fault switches are not there.
    expect(parseLogLine(proc.stderr().split('\n')[0] as string)).toMatchObject({ faults: false });
    expect((await post(url, '/_faults', { kind: 'exit' })).status).toBe(404);
    expect((await post(url, '/deployments', app)).status).toBe(201);
    proc.child.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
    expect(proc.stdout()).toBe('');
  });

  it('reports usage errors with exit code 2 and prints help on --help', async () => {
    const missing = run([]);
    expect((await missing.exited).code).toBe(2);
    expect(missing.stderr()).toMatch(/--mode is required/);
    const wrong = run(['--mode', 'maybe']);
    expect((await wrong.exited).code).toBe(2);
    expect(wrong.stderr()).toMatch(/--mode must be key, reference or none/);
    const badPort = run(['--mode', 'key', '--port', 'abc']);
    expect((await badPort.exited).code).toBe(2);
    const unknown = run(['--mode', 'key', '--verbose']);
    expect((await unknown.exited).code).toBe(2);
    const help = run(['--help']);
    expect((await help.exited).code).toBe(0);
    expect(help.stdout()).toMatch(/^Usage: idem provider --mode key\|reference\|none/);
    expect(help.stderr()).toBe('');
  });

  it('exit: the process dies after committing; restarted on the same db, the deployment is there', async () => {
    const dbPath = join(tempDir(), 'provider.sqlite');
    const first = run(['--mode', 'key', '--port', '0', '--db', dbPath, '--faults']);
    const url = await first.listening;
    expect(parseLogLine(first.stderr().split('\n')[0] as string)).toMatchObject({ faults: true });
    expect((await post(url, '/_faults', { kind: 'exit', route: 'create' })).status).toBe(201);
    await expect(postRaw(url, '/deployments', app, { 'Idempotency-Key': 'crash' })).rejects.toThrow();
    expect(await first.exited).toEqual({ code: 137, signal: null });

    const second = run(['--mode', 'key', '--port', '0', '--db', dbPath]);
    const url2 = await second.listening;
    const [survivor, ...rest] = await deployments(url2);
    expect(rest).toEqual([]);
    expect(survivor).toMatchObject({ ...app, status: 'deployed' });
    const retry = await post(url2, '/deployments', app, { 'Idempotency-Key': 'crash' });
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.deployment_id).toBe(survivor?.deployment_id);
    expect(await deployments(url2)).toHaveLength(1);
  });
});
