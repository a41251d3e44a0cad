import type { Logger } from 'idem';
import type { FaultPoint, FaultPoints } from 'idem/testing';

/**
 * Test-only: IDEM_TEST_FAULTS="after_commit=kill,before_dispatch=throw" arms fault points in this
 * process, so end-to-end tests can crash a real server or worker at a named point. Announced loudly.
 */
export function armTestFaults(faults: FaultPoints, logger: Logger): void {
  const spec = process.env.IDEM_TEST_FAULTS;
  if (!spec) return;
  for (const part of spec.split(',')) {
    const [point, action] = part.split('=') as [FaultPoint, string];
    faults.arm(
      point,
      action === 'kill'
        ? () => process.kill(process.pid, 'SIGKILL')
        : () => {
            throw new Error(`test fault at ${point}`);
          },
    );
    logger.warn('idem.test_fault_armed', { point, action });
  }
}
