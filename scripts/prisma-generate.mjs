#!/usr/bin/env node
// Generates the Prisma client of examples/prisma/schema.prisma (used by the Prisma example and its
// test). Prisma 7's client needs no engine binary, but its CLI still checks for the schema engine
// (used by migrate, not by generate) and downloads it when absent, from a host CI cannot reach:
// pointing PRISMA_SCHEMA_ENGINE_BINARY at an existing file skips that download.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import process from 'node:process';

const root = resolve(import.meta.dirname, '..');
execFileSync('npx', ['prisma', 'generate', '--schema', 'examples/prisma/schema.prisma'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
  },
});
