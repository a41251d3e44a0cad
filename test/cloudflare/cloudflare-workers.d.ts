// The few Cloudflare Workers types examples/cloudflare-worker.ts and the workerd test worker use,
// named as @cloudflare/workers-types names them (not a dependency: its globals clash with Node's).

interface DurableObjectState {
  // eslint-disable-next-line @typescript-eslint/consistent-type-imports -- a global declaration file cannot import
  readonly storage: import('idem/cloudflare').DurableObjectSqlStorage;
}
interface DurableObjectId {
  toString(): string;
}
interface DurableObjectStub {
  fetch(request: Request): Promise<Response>;
}
// eslint-disable-next-line @typescript-eslint/no-unused-vars
interface DurableObjectNamespace<T = unknown> {
  idFromName(name: string): DurableObjectId;
  newUniqueId(): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
}

declare module 'cloudflare:workers' {
  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
    fetch?(request: Request): Response | Promise<Response>;
  }
}
