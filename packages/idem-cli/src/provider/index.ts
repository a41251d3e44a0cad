export {
  DEFAULT_KEY_RETENTION_MS,
  isLoopbackHost,
  MAX_BODY_BYTES,
  PROVIDER_MODES,
  startProvider,
  type ProviderMode,
  type ProviderOptions,
  type RunningProvider,
} from './provider-server.js';
export {
  faultSpecSchema,
  ProviderFaults,
  type ArmedFault,
  type FaultKind,
  type FaultRoute,
  type FaultSpec,
} from './provider-faults.js';
export {
  newDeploymentId,
  ProviderState,
  type Deployment,
  type KeyRecord,
  type NewDeployment,
  type WebhookDelivery,
} from './provider-state.js';
