/**
 * Helpers of the client behaviour tests: a scripted node:http server (one that may
 * never answer), a fake fetch that records what the client sent, and the local API on the memory
 * driver with its store at hand.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { vi } from 'vitest';
import { createHttpClient, type HttpClientOptions, type HttpSessionStore } from '../../lib/client/index.js';
import { loadConfig } from '../../lib/config.js';
import type { SessionStore } from '../../lib/contract/types.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import type { ObjectStoreDriver } from '../../lib/drivers/types.js';
import { createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';
import { createStateStore } from '../../lib/store/store.js';
import { hsToken, SECRET } from '../http/harness.js';

/** A node:http server answering with `handler` (which may leave a request unanswered). */
export async function scriptedServer(
  handler: (request: IncomingMessage, response: ServerResponse, n: number) => void,
) {
  const requests: IncomingMessage[] = [];
  const server = createServer((request, response) => {
    requests.push(request);
    handler(request, response, requests.length);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Lets real I/O run (under fake timers, which leave setImmediate alone here) until `done()`. */
export async function until(done: () => boolean, turns = 10_000) {
  for (let i = 0; i < turns && !done(); i++) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error('condition not reached');
}

/** Fake timers for the waits, real I/O. */
export const FAKE_TIMERS: Parameters<typeof vi.useFakeTimers>[0] = {
  toFake: ['setTimeout', 'clearTimeout', 'Date'],
};

export interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  signal: AbortSignal | undefined;
}

/** A fetch answering with `answer` (the n-th call, from 1), recording every request. */
export function fakeFetch(answer: (sent: Sent, n: number) => Response | Promise<Response>) {
  const calls: Sent[] = [];
  const fetch = (async (input: unknown, init?: RequestInit) => {
    const sent: Sent = {
      method: init?.method ?? 'GET',
      url: String(input),
      headers: Object.fromEntries(
        Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]),
      ),
      body: typeof init?.body === 'string' ? init.body : undefined,
      signal: init?.signal ?? undefined,
    };
    calls.push(sent);
    return answer(sent, calls.length);
  }) as typeof globalThis.fetch;
  return { calls, fetch };
}

/** A promise that never settles (a fetch that ignores its signal). */
export const never = <T>() => new Promise<T>(() => {});

/** A problem answer. */
export const problem = (status: number, code: string, extra: Record<string, unknown> = {}, headers = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: code, status, code, detail: code, ...extra }), {
    status,
    headers: { 'content-type': 'application/problem+json', 'x-request-id': 'fake', ...headers },
  });

/** The local API (memory driver, memory lock), its store written directly, and clients of alice. */
export async function localApi(driver: ObjectStoreDriver = createMemoryDriver()) {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: SECRET, LOG_LEVEL: 'SILENT' });
  const store: SessionStore = createStateStore({ driver, prefix: config.STATE_PREFIX }).forUser('alice');
  const lock = createMemoryLock();
  const app = createApp(config, { driver, lock });
  const server = createNodeServer(app.handle, config.BODY_LIMIT_BYTES);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    store,
    /** The server's lock: leases whose tokens its writes accept. */
    lock,
    client: (o: Partial<HttpClientOptions> = {}): HttpSessionStore =>
      createHttpClient({ baseUrl, token: () => hsToken({ sub: 'alice' }), ...o }),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
