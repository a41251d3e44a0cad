import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * Runs `body` under V8's CPU profiler (sampling every 100 µs) and writes the profile, in the
 * `.cpuprofile` format of `node --cpu-prof`, to `out`: only the measured window is profiled, not the
 * suite's set-up (prefills, replay keys).
 */
export async function profiled<T>(out: string, body: () => Promise<T>): Promise<T> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  try {
    return await body();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(out, JSON.stringify(profile));
    session.disconnect();
  }
}
