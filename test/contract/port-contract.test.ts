import { describe, it } from 'vitest';
import { portSuites } from '../helpers/port-factories.js';

// The exported contract suite (idem/testing) over every store; test/helpers/port-factories.ts lists them.
describe.each(portSuites.map((s) => [s.name, s] as const))('port contract: %s', (_, suite) => {
  for (const c of suite.cases()) it(c.name, c.run);
});
