/**
 * Helpers of the LangGraph adapter's tests: the local API in-process on the memory or
 * the fs driver (optionally behind a driver wrapper, to fail writes on purpose), and typed clients
 * of any user whose fetch counts the HTTP calls.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttpClient, type HttpClientOptions, type HttpSessionStore } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import { createFsDriver } from '../../lib/drivers/fs.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

/** A client whose HTTP calls are counted (`calls`, reset with `reset`), and what each was. */
export interface CountedClient {
  readonly client: HttpSessionStore;
  /** `METHOD /path` of each call since the last reset. */
  readonly sent: string[];
  reset(): void;
}

/**
 * The local API on `backend` (fs: with the presigned transfers the local server answers, as `npm
 * start` runs it); `wrap` may stand between the store and the driver; `bodyLimitBytes` lowers the
 * body cap of the server and the clients.
 */
export async function localApi(
  backend: 'memory' | 'fs' = 'memory',
  {
    wrap = (d) => d,
    bodyLimitBytes,
  }: { wrap?: (d: ObjectStoreDriver) => ObjectStoreDriver; bodyLimitBytes?: number } = {},
) {
  const dir = backend === 'fs' ? await mkdtemp(join(tmpdir(), 'langgraph-')) : undefined;
  const config = loadConfig({
    STORE_BACKEND: 'memory',
    AUTH_JWT_SECRET: SECRET,
    LOG_LEVEL: 'SILENT',
    ...(bodyLimitBytes ? { BODY_LIMIT_BYTES: String(bodyLimitBytes) } : {}),
  });
  let baseUrl = '';
  const fs = dir ? createFsDriver({ root: dir, presign: { baseUrl: () => baseUrl } }) : undefined;
  const driver = wrap(fs ?? createMemoryDriver());
  const app = createApp(config, { driver, lock: createMemoryLock() });
  const serveBlob = fs?.serveBlob;
  const blobs = serveBlob && { serveBlob, limitBytes: 64 * 1024 * 1024 };
  const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES, blobs);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const tokens = new Map<string, Promise<string>>();
  const token = (user: string) => {
    if (!tokens.has(user)) tokens.set(user, hsToken({ sub: user }, '2h'));
    return tokens.get(user) as Promise<string>;
  };
  return {
    /** The store as the server sees it, for one user (to look behind the adapter). */
    store: (user: string) => createStateStore({ driver, prefix: config.STATE_PREFIX }).forUser(user),
    /** A client of `user` whose fetch counts the calls. */
    client(user: string, o: Partial<HttpClientOptions> = {}): CountedClient {
      const sent: string[] = [];
      const counting: typeof fetch = (input, init) => {
        sent.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname}`);
        return (o.fetch ?? fetch)(input, init);
      };
      const client = createHttpClient({
        baseUrl,
        token: () => token(user),
        bodyLimitBytes,
        ...o,
        fetch: counting,
      });
      return { client, sent, reset: () => sent.splice(0) };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
