import type { Suite } from '../lib/types.js';
import { mcpSuite } from './mcp.js';
import { postgresSuite } from './postgres.js';
import { powertoolsSuite } from './powertools.js';
import { receiptsSuite, sweepSuite } from './receipts.js';
import { sqliteSuite } from './sqlite.js';
import { sweepLoadSuite } from './sweep-load.js';

/** Every suite, in the order the orchestrator runs them. */
export const SUITES: Record<string, Suite> = {
  'sqlite-full': sqliteSuite('FULL'),
  'sqlite-normal': sqliteSuite('NORMAL'),
  postgres: postgresSuite,
  powertools: powertoolsSuite,
  mcp: mcpSuite,
  receipts: receiptsSuite,
  sweep: sweepSuite,
  'sweep-load': sweepLoadSuite,
};
