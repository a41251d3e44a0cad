import { describe } from 'vitest';
import { integrationSpec } from '../helpers/integration-spec.js';
import { ormHarnesses, ormIntegration } from '../helpers/orm-fixtures.js';
import { postgresAvailable } from '../helpers/postgres-fixtures.js';

// The ORM integrations on their real databases: the effect writes a `tickets` row with Kysely's
// Transaction, Drizzle's tx or Prisma's interactive-transaction client, in Idem's transaction.
describe.each(ormHarnesses.filter((h) => h.engine === 'sqlite' || postgresAvailable))('$name', (harness) => {
  integrationSpec(ormIntegration(harness));
});
