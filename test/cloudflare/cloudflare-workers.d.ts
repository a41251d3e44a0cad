// The few Cloudflare Workers types examples/cloudflare-worker.ts and the workerd test worker use,
// named as @cloudflare/workers-types names them (not a dependency: its globals clash with Node's).
import type { DurableObjectSqlStorage } from 'idem/cloudflare';

declare global {
  interface DurableObjectState {
    readonly storage: DurableObjectSqlStorage;
  }
  interface DurableObjectId {
    toString(): string;
  }
  interface DurableObjectStub {
    fetch(request: Request): Promise<Response>;
  }
  interface DurableObjectNamespace<_T = unknown> {
    idFromName(name: string): DurableObjectId;
    newUniqueId(): DurableObjectId;
    get(id: DurableObjectId): DurableObjectStub;
  }
}

declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
    fetch?(request: Request): Response | Promise<Response>;
  }
}
