export { FakeClock } from './fake-clock.js';
export { FaultPoints, type FaultPoint, type FaultAction } from '../core/fault-points.js';
export {
  TransportFaults,
  type TransportFault,
  type FaultRule,
  type FaultEvent,
  type TransportFaultsOptions,
  type McpTransportLike,
  type JsonRpcMessage,
} from './transport-faults.js';
export {
  memoryStore,
  type MemoryStore,
  type MemoryStoreOptions,
  type MemoryTx,
  type MemoryReader,
} from './memory-store.js';
export {
  storeContract,
  type ContractCase,
  type ContractStore,
  type StoreContractFactory,
} from './contract/store-contract.js';
