// Preloaded (node --import) into a process under the clock-step nemesis: on SIGUSR2 it reads an
// offset in milliseconds from FAULTS_CLOCK_FILE and from then on answers Date.now() and new Date()
// that far from the real wall clock (a step, forward or back, as an NTP correction or an operator's
// `date -s` makes). performance.now() is left alone: a monotonic clock does not step.
import { readFileSync } from 'node:fs';
import process from 'node:process';

const file = process.env.FAULTS_CLOCK_FILE;
const RealDate = Date;
let offset = 0;

class SteppedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(RealDate.now() + offset);
    else super(...args);
  }

  static now() {
    return RealDate.now() + offset;
  }
}

globalThis.Date = SteppedDate;
process.on('SIGUSR2', () => {
  if (file === undefined) return;
  const next = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isFinite(next)) return;
  offset = next;
  process.stderr.write(`${JSON.stringify({ event: 'faults.clock_stepped', offset_ms: offset })}\n`);
});
