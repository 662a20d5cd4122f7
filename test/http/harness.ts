/**
 * One way to call the API per adapter (node:http, API Gateway v2 events, FC 3 events), each with the
 * identity mechanism of its platform, so one contract suite runs the routes through all three.
 */
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { APIGatewayProxyEventV2WithJWTAuthorizer, Context } from 'aws-lambda';
import { createLocalJWKSet, exportJWK, SignJWT } from 'jose';
import { loadConfig } from '../../lib/config.js';
import type { SessionLock } from '../../lib/contract/lock.js';
import type { StoreCapabilities } from '../../lib/contract/types.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { createApiGatewayHandler } from '../../lib/http/adapters/apigw.js';
import { createFunctionComputeHandler } from '../../lib/http/adapters/fc.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { type App, type AppParts, createApp } from '../../lib/http/app.js';
import { bearerJwtAuth, platformClaimsAuth } from '../../lib/http/auth.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { storeCapabilities } from '../../lib/store/capabilities.js';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The body's bytes as the platform delivers them (still compressed under a Content-Encoding). */
  bytes: Buffer;
  // biome-ignore lint/suspicious/noExplicitAny: test answers are inspected loosely
  json: () => any;
}

export interface CallOptions {
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** A raw Authorization header (node and FC) instead of a token for the user. */
  authorization?: string | null;
  /**
   * node: call over node:http, which sends only the headers given and hands the body over as sent
   * (fetch adds Accept-Encoding and decodes what it names). The other harnesses always do.
   */
  raw?: boolean;
}

/** An API under test. `user` null calls without an identity. */
export interface ApiHarness {
  readonly name: string;
  readonly app: App;
  call(user: string | null, method: string, path: string, options?: CallOptions): Promise<Answer>;
  close(): Promise<void>;
}

/**
 * The backends an API under test runs on, as an entry point hands them to `createApp`: an object
 * store's driver or an engine (lib/http/backends/), and the lock when it is not the engine's.
 */
export type BackendParts = Pick<AppParts, 'driver' | 'lock' | 'engine'>;

/** One way to call the API (an adapter) over the backends given. */
export type HarnessMaker = (parts: BackendParts, env?: Record<string, string>) => Promise<ApiHarness>;

export const SECRET = 'test-secret-for-hs256-tokens-0123456789';
const BODY_LIMIT = 64 * 1024;

/** The harnesses' configuration; `env` adds to it (CORS_ORIGINS, for one). */
function config(env: Record<string, string> = {}) {
  return loadConfig({
    STORE_BACKEND: 'memory',
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
    ...env,
  });
}

/** An HS256 token for the local server. */
export function hsToken(claims: Record<string, unknown>, expiresIn = '1h', secret = SECRET): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(new TextEncoder().encode(secret));
}

const answer = (status: number, headers: Record<string, string>, bytes: Buffer): Answer => {
  const body = bytes.toString();
  return {
    status,
    headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])),
    body,
    bytes,
    json: () => JSON.parse(body),
  };
};

/** The bytes of a platform's result body (base64 when it says so). */
const resultBytes = (result: { body?: string; isBase64Encoded?: boolean }) =>
  Buffer.from(result.body ?? '', result.isBase64Encoded ? 'base64' : 'utf8');

/** A request over node:http: only the given headers, the body as sent. */
function rawCall(url: string, method: string, headers: Record<string, string>, body?: string | Buffer) {
  return new Promise<Answer>((resolve, reject) => {
    const r = httpRequest(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h[k] = String(v);
        resolve(answer(res.statusCode ?? 0, h, Buffer.concat(chunks)));
      });
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(body);
  });
}

export async function nodeHarness(
  parts: BackendParts,
  env: Record<string, string> = {},
): Promise<ApiHarness> {
  const c = config(env);
  const app = createApp(c, parts);
  const server = createNodeServer(app.handle, c.BODY_LIMIT_BYTES);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    name: 'node:http (local, HS256)',
    app,
    async call(user, method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      const authorization =
        o.authorization !== undefined
          ? o.authorization
          : user === null
            ? null
            : `Bearer ${await hsToken({ sub: user })}`;
      if (authorization) headers.authorization = authorization;
      if (o.raw) return rawCall(`${base}${path}`, method, headers, o.body);
      const res = await fetch(`${base}${path}`, { method, headers, body: o.body });
      return answer(res.status, Object.fromEntries(res.headers), Buffer.from(await res.arrayBuffer()));
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export async function apiGatewayHarness(
  parts: BackendParts,
  env: Record<string, string> = {},
): Promise<ApiHarness> {
  const app = createApp(config(env), { ...parts, auth: platformClaimsAuth() });
  const handler = createApiGatewayHandler(app);
  const context = {
    functionName: 'agent-state-api',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:agent-state-api',
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    getRemainingTimeInMillis: () => 30_000,
  } as unknown as Context;
  return {
    name: 'API Gateway v2 event (JWT authorizer claims)',
    app,
    async call(user, method, path, o = {}) {
      const [rawPath, rawQueryString = ''] = path.split('?') as [string, string?];
      const body = o.body === undefined ? undefined : Buffer.from(o.body);
      const event = {
        version: '2.0',
        routeKey: '$default',
        rawPath,
        rawQueryString,
        headers: { host: 'api.example.com', ...o.headers },
        requestContext: {
          accountId: '123456789012',
          apiId: 'api',
          domainName: 'api.example.com',
          domainPrefix: 'api',
          http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
          requestId: randomUUID(),
          routeKey: '$default',
          stage: '$default',
          time: new Date().toUTCString(),
          timeEpoch: Date.now(),
          ...(user === null
            ? {}
            : {
                authorizer: {
                  principalId: '',
                  integrationLatency: 0,
                  jwt: { claims: { sub: user }, scopes: [] },
                },
              }),
        },
        body: body?.toString('base64'),
        isBase64Encoded: body !== undefined,
      } as unknown as APIGatewayProxyEventV2WithJWTAuthorizer;
      const result = (await handler(event, context)) as {
        statusCode: number;
        headers: Record<string, string>;
        body: string;
        isBase64Encoded?: boolean;
      };
      return answer(result.statusCode, result.headers ?? {}, resultBytes(result));
    },
    close: async () => {},
  };
}

export async function functionComputeHarness(
  parts: BackendParts,
  env: Record<string, string> = {},
): Promise<ApiHarness> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const auth = bearerJwtAuth(
    { getKey: createLocalJWKSet({ keys: [jwk] }) },
    { issuer: 'https://idp.example.com', audience: 'agent-state' },
  );
  const app = createApp(config(env), { ...parts, auth });
  const handler = createFunctionComputeHandler(app);
  const token = (sub: string) =>
    new SignJWT({ sub })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://idp.example.com')
      .setAudience('agent-state')
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(privateKey);
  return {
    name: 'Function Compute 3 event (JWKS-verified bearer)',
    app,
    async call(user, method, path, o = {}) {
      const [rawPath, rawQuery = ''] = path.split('?') as [string, string?];
      const headers: Record<string, string> = { ...o.headers };
      const authorization =
        o.authorization !== undefined
          ? o.authorization
          : user === null
            ? null
            : `Bearer ${await token(user)}`;
      if (authorization) headers.Authorization = authorization;
      const body = o.body === undefined ? undefined : Buffer.from(o.body);
      const event = {
        version: 'v1',
        rawPath,
        headers,
        queryParameters: Object.fromEntries(new URLSearchParams(rawQuery)),
        body: body?.toString('base64') ?? '',
        isBase64Encoded: true,
        requestContext: {
          accountId: '1',
          domainName: 'fc',
          domainPrefix: 'fc',
          requestId: randomUUID(),
          time: '',
          timeEpoch: '',
          http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
        },
      };
      const result = await handler(Buffer.from(JSON.stringify(event)));
      return answer(result.statusCode, result.headers, resultBytes(result));
    },
    close: async () => {},
  };
}

/**
 * An app on the memory driver taking API Gateway's verified claims (for events built by hand); with
 * `throws`, its router throws on every request (to see what the adapters answer then).
 */
export function platformApp(throws = false): App {
  const made = createApp(config(), {
    driver: createMemoryDriver(),
    lock: createMemoryLock(),
    auth: platformClaimsAuth(),
  });
  if (!throws) return made;
  return {
    ...made,
    handle: async () => {
      throw new Error('router boom');
    },
  };
}

export { BODY_LIMIT };

/** The adapters, each with its platform's identity mechanism. */
export const ADAPTERS: readonly HarnessMaker[] = [nodeHarness, apiGatewayHarness, functionComputeHarness];

/** How a contract suite asks for its backend. */
export interface BackendOptions {
  /** The lock's clock instead of the real one (a suite moves it to expire a lease). */
  readonly now?: () => number;
}

/** A backend made for one API: the parts, the lock the app serves, and the faults it can inject. */
export interface MadeBackend {
  readonly parts: BackendParts;
  readonly lock: SessionLock;
  /** Deletes of names containing the text fail (AccessDenied, as a raced RGW DeleteObjects can); undefined: none fails. */
  readonly failDeletes?: (containing: string | undefined) => void;
  close(): Promise<void>;
}

/**
 * A backend the contract suites (test/http/*-suite.ts) run on. A suite skips a case by what the
 * backend declares, never by its name.
 */
export interface ContractBackend {
  readonly name: string;
  /** What its store declares (`GET /v1/capabilities`). */
  readonly capabilities: StoreCapabilities;
  /** Whether it can be made to fail deletes (`MadeBackend.failDeletes`): a store of objects that a DELETE may leave behind. */
  readonly deleteFaults: boolean;
  /** Fresh parts (their own prefix, tables or memory): one API's. */
  make(options?: BackendOptions): Promise<MadeBackend>;
}

/** An API the suites call: a harness, and its backend's lock and faults. */
export interface ContractApi extends ApiHarness {
  readonly lock: SessionLock;
  readonly failDeletes?: (containing: string | undefined) => void;
}

/** An adapter over a backend: what a suite is given. */
export interface ContractHarness {
  /** `<adapter> on <backend>`. */
  readonly name: string;
  readonly backend: ContractBackend;
  /** A fresh API on fresh parts of the backend; `close()` releases both. */
  make(options?: BackendOptions): Promise<ContractApi>;
}

/** The backend through each adapter. */
export function contractHarnesses(backend: ContractBackend): ContractHarness[] {
  return ADAPTERS.map((adapter) => ({
    name: `${adapter.name} on ${backend.name}`,
    backend,
    async make(options) {
      const made = await backend.make(options);
      const api = await adapter(made.parts).catch(async (error: unknown) => {
        await made.close();
        throw error;
      });
      return {
        ...api,
        lock: made.lock,
        ...(made.failDeletes ? { failDeletes: made.failDeletes } : {}),
        close: async () => {
          await api.close();
          await made.close();
        },
      };
    },
  }));
}

/** The fs driver with presigned URLs (at a port nothing answers: the suites only read them) and the memory lock. */
export const fsBackend: ContractBackend = {
  name: 'fs (presigned URLs)',
  capabilities: storeCapabilities(fsPresignDriver('.').capabilities),
  deleteFaults: false,
  make: async (options = {}) => {
    const root = await mkdtemp(path.join(tmpdir(), 'fs-contract-'));
    const lock = createMemoryLock(options.now ? { now: options.now } : {});
    return {
      parts: { driver: fsPresignDriver(root), lock },
      lock,
      close: () => rm(root, { recursive: true, force: true }),
    };
  },
};

function fsPresignDriver(root: string) {
  return createFsDriver({ root, presign: { baseUrl: 'http://127.0.0.1:9' } });
}

/** The memory driver and lock (deletes can be made to fail). */
export const memoryBackend: ContractBackend = {
  name: 'memory',
  capabilities: storeCapabilities(createMemoryDriver().capabilities),
  deleteFaults: true,
  make: async (options = {}) => {
    let failing: string | undefined;
    const driver = createMemoryDriver({
      deleteFault: (name) => (failing && name.includes(failing) ? 'AccessDenied' : undefined),
    });
    const lock = createMemoryLock(options.now ? { now: options.now } : {});
    return {
      parts: { driver, lock },
      lock,
      failDeletes: (containing) => {
        failing = containing;
      },
      close: () => driver.close(),
    };
  },
};
