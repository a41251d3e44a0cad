import { describe, expect, it } from 'vitest';
import { connectionFailure } from '../../packages/idem-cli/src/cli/connection-failure.js';
import { freePort } from '../helpers/mcp-fixtures.js';

async function fetchError(url: string): Promise<unknown> {
  try {
    await fetch(url);
  } catch (error) {
    return error;
  }
  throw new Error(`fetch ${url} succeeded`);
}

describe('connectionFailure', () => {
  it('names the socket error that fetch\'s "fetch failed" hides', async () => {
    const port = await freePort();
    expect(connectionFailure(await fetchError(`http://127.0.0.1:${port}/mcp`))).toBe(
      'connection refused (ECONNREFUSED)',
    );
  });

  it('explains a port that fetch refuses to use', async () => {
    expect(connectionFailure(await fetchError('http://127.0.0.1:1/mcp'))).toBe(
      'fetch refuses to connect to this port (bad port)',
    );
  });

  it('falls back to the messages of the error and its causes', () => {
    const error = new Error('MCP error -32000: Connection closed', { cause: new Error('exit code 3') });
    expect(connectionFailure(error)).toBe('MCP error -32000: Connection closed: exit code 3');
    expect(connectionFailure('plain')).toBe('plain');
  });
});
