/**
 * The framework adapters' operations: each adapter's steady state prepared through the
 * typed client against the HTTP API served in-process (s3 driver, S3 front over s3rver, counted by
 * a proxy; the memory lock), then each operation called `repeat` times: HTTP calls counted at the
 * client's fetch, S3 requests at the proxy, means per call and $ per million calls at list prices.
 */
import type { AddressInfo } from 'node:net';
import { createHttpClient } from '../lib/client/index.js';
import { createS3Driver } from '../lib/drivers/s3.js';
import { createNodeServer } from '../lib/http/adapters/node.js';
import { bearerJwtAuth } from '../lib/http/auth.js';
import { createRouter } from '../lib/http/router.js';
import { createMemoryLock } from '../lib/lock/memory.js';
import { createStateStore } from '../lib/store/store.js';
import { hsToken, SECRET } from '../test/http/harness.js';
import { divide, minus, startCountingProxy, type Traffic } from './counting-proxy.js';
import type { FrameworkBench } from './frameworks/types.js';
import { dollarsPerMillion, HTTP_CALL_DOLLARS } from './store-bench.js';

export interface FrameworkRow {
  readonly framework: string;
  readonly operation: string;
  /** Means per call. */
  readonly httpCalls: number;
  readonly traffic: Traffic;
  /** $ per million calls: S3 at list prices plus API Gateway and Lambda per HTTP call. */
  readonly dollars: number;
}

export async function runFrameworkBench(options: {
  s3Port: number;
  bucket: string;
  benches: readonly FrameworkBench[];
  repeat: number;
}): Promise<FrameworkRow[]> {
  const proxy = await startCountingProxy(options.s3Port);
  const driver = createS3Driver({
    bucket: options.bucket,
    endpoint: proxy.endpoint,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  const handle = createRouter({
    store: createStateStore({ driver, prefix: `frameworks-${Date.now()}/` }),
    lock: createMemoryLock(),
    auth: bearerJwtAuth({ secret: SECRET }),
  });
  const server = createNodeServer(handle, 8 * 1024 * 1024);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  let calls = 0;
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  /** A client of a user of its own per framework: one framework's sessions never meet another's. */
  const clientOf = (user: string) =>
    createHttpClient({
      baseUrl,
      token: () => hsToken({ sub: user }),
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
  const rows: FrameworkRow[] = [];
  try {
    for (const [i, bench] of options.benches.entries()) {
      for (const op of await bench.prepare(clientOf(`bench-${i}`))) {
        const [callsBefore, before] = [calls, proxy.snapshot()];
        for (let i = 0; i < options.repeat; i++) await op.run();
        const traffic = divide(minus(proxy.snapshot(), before), options.repeat);
        const httpCalls = (calls - callsBefore) / options.repeat;
        rows.push({
          framework: bench.framework,
          operation: op.name,
          httpCalls,
          traffic,
          dollars: dollarsPerMillion(traffic).s3 + httpCalls * HTTP_CALL_DOLLARS * 1e6,
        });
      }
    }
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await driver.close();
    await proxy.stop();
  }
  return rows;
}

/** The rows as a Markdown table. */
export function frameworkTable(rows: readonly FrameworkRow[]): string {
  const n = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(2));
  return [
    '| framework | operation | HTTP calls | S3 PUT-class | S3 GET-class | S3 LIST | $ per million calls (S3 + API Gateway + Lambda) |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.framework} | ${r.operation} | ${n(r.httpCalls)} | ${n(r.traffic.putClass)} | ${n(r.traffic.getClass)} | ${n(r.traffic.list)} | ${r.dollars.toFixed(2)} |`,
    ),
  ].join('\n');
}
