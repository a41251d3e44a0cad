export { FakeClock } from './fake-clock.js';
export { FaultPoints, type FaultPoint, type FaultAction } from '../core/fault-points.js';
