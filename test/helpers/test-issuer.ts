import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';

interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

export interface SignOptions {
  /** Seconds from now; negative for an expired token; null for none. Default 300. */
  expiresInSec?: number | null;
  /** `exp` as given (seconds since the epoch, fractions allowed); wins over `expiresInSec`. */
  expiresAtSec?: number;
  issuer?: string;
  audience?: string | string[];
  notBeforeSec?: number;
  /** Sign with this key instead of the current one (e.g. a retired or foreign key). */
  key?: SigningKey;
}

/**
 * An authorization server for tests: real ES256 keys, a JWKS endpoint on loopback (`/jwks`), and
 * tokens signed with jose. `rotate()` publishes a new key in place of the current one.
 */
export class TestIssuer {
  #keys: SigningKey[] = [];
  #jwksRequests = 0;

  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    readonly jwksUrl: string,
  ) {}

  static async start(): Promise<TestIssuer> {
    const holder: { self?: TestIssuer } = {};
    const server = createServer((req, res) => {
      const self = holder.self;
      if (req.url !== '/jwks' || self === undefined) {
        res.writeHead(404).end();
        return;
      }
      self.#jwksRequests += 1;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ keys: self.#keys.map((key) => key.jwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const self = new TestIssuer(server, `http://127.0.0.1:${port}`, `http://127.0.0.1:${port}/jwks`);
    self.#keys = [await TestIssuer.newKey()];
    holder.self = self;
    return self;
  }

  static async newKey(): Promise<SigningKey> {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const kid = `k-${randomUUID()}`;
    return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
  }

  get currentKey(): SigningKey {
    return this.#keys[0] as SigningKey;
  }

  get jwksRequests(): number {
    return this.#jwksRequests;
  }

  /** Replaces the published key with a new one; returns the retired key. */
  async rotate(): Promise<SigningKey> {
    const retired = this.currentKey;
    this.#keys = [await TestIssuer.newKey()];
    return retired;
  }

  async sign(claims: JWTPayload, audience: string, options: SignOptions = {}): Promise<string> {
    const key = options.key ?? this.currentKey;
    const now = Math.floor(Date.now() / 1000);
    let jwt = new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
      .setIssuer(options.issuer ?? this.issuer)
      .setAudience(options.audience ?? audience)
      .setIssuedAt(now)
      .setJti(randomUUID());
    const expires = options.expiresInSec === undefined ? 300 : options.expiresInSec;
    if (options.expiresAtSec !== undefined) jwt = jwt.setExpirationTime(options.expiresAtSec);
    else if (expires !== null) jwt = jwt.setExpirationTime(now + expires);
    if (options.notBeforeSec !== undefined) jwt = jwt.setNotBefore(now + options.notBeforeSec);
    return jwt.sign(key.privateKey);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
