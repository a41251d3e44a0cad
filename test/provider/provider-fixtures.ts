import { execFileSync } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { onTestFinished } from 'vitest';
import {
  startProvider,
  type ProviderOptions,
  type RunningProvider,
} from '../../packages/idem-cli/src/provider/index.js';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** A temp dir removed when the current test finishes. */
export function tempDir(prefix = 'idem-provider-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts a provider on a free loopback port, closed when the current test finishes. */
export async function provider(options: ProviderOptions): Promise<RunningProvider> {
  const running = await startProvider({ port: 0, ...options });
  onTestFinished(() => running.close());
  return running;
}

export interface JsonResponse {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown>;
}

async function toJson(response: Response): Promise<JsonResponse> {
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
}

export async function post(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<JsonResponse> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return toJson(response);
}

export async function get(base: string, path: string): Promise<JsonResponse> {
  return toJson(await fetch(`${base}${path}`));
}

/**
 * A request with exactly this `Host` header (undefined: none at all), which fetch does not let a
 * caller choose: what a browser sends for a page whose DNS name was rebound to 127.0.0.1.
 */
export function requestWithHost(
  base: string,
  method: string,
  path: string,
  host: string | undefined,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(path, base);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port,
        path: url.pathname,
        method,
        setHost: false,
        headers: {
          ...(host === undefined ? {} : { host }),
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: Record<string, unknown> = {};
          try {
            parsed = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // Node's own refusals (400 for a request without Host) have no JSON body.
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export interface DeploymentJson {
  deployment_id: string;
  service: string;
  version: string;
  client_reference?: string;
  status: string;
  created_at: string;
}

export async function deployments(base: string): Promise<DeploymentJson[]> {
  return (await get(base, '/deployments')).body.deployments as DeploymentJson[];
}

/**
 * Compiles `idem provider` (packages/idem-cli/src/cli/provider-command.ts and what it imports of the
 * CLI package: src/provider; the library comes built, through node_modules/idem) into a fresh temp dir, so child processes can run it without racing other tests over dist/.
 * Returns the path of the compiled provider-command.js.
 */
const CLI_PACKAGE = join(REPO_ROOT, 'packages', 'idem-cli');

export function buildProviderModule(): { modulePath: string; dispose: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'idem-provider-build-'));
  symlinkSync(join(REPO_ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const config = {
    extends: join(CLI_PACKAGE, 'tsconfig.build.json'),
    compilerOptions: {
      rootDir: join(CLI_PACKAGE, 'src'),
      outDir: join(dir, 'dist'),
      declaration: false,
      sourceMap: false,
    },
    files: [join(CLI_PACKAGE, 'src', 'cli', 'provider-command.ts')],
    include: [],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: REPO_ROOT, stdio: 'pipe' });
  return {
    modulePath: join(dir, 'dist', 'cli', 'provider-command.js'),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
