/**
 * HTTP: requests per second with p50 and p99 for GET state and a one-item append through the local
 * server; per function, the minified bundle size and the time to import it in a fresh node process
 * as a ratio to importing the compiled but unbundled output.
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { loadConfig } from '../lib/config.js';
import { createMemoryDriver } from '../lib/drivers/memory.js';
import { createNodeServer } from '../lib/http/adapters/node.js';
import { createApp } from '../lib/http/app.js';
import { createMemoryLock } from '../lib/lock/memory.js';

export async function runHttpBench(requests: number): Promise<string> {
  const config = loadConfig({ STORE_BACKEND: 'memory', AUTH_JWT_SECRET: 'bench', LOG_LEVEL: 'SILENT' });
  const server = createNodeServer(
    createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() }).handle,
    config.BODY_LIMIT_BYTES,
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/sessions/bench`;
  const token = await new SignJWT({ sub: 'bench' })
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode('bench'));
  const headers = { authorization: `Bearer ${token}` };
  await fetch(`${base}/state/plan`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ step: 1, text: 'x'.repeat(1000) }),
  });
  const rows: string[] = [];
  const measure = async (name: string, fn: (i: number) => Promise<Response>) => {
    const times: number[] = [];
    const started = performance.now();
    for (let i = 0; i < requests; i++) {
      const t = performance.now();
      const res = await fn(i);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${name}: ${res.status}`);
      times.push(performance.now() - t);
    }
    const seconds = (performance.now() - started) / 1000;
    times.sort((a, b) => a - b);
    const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))] as number;
    rows.push(
      `| ${name} | ${requests} | ${(requests / seconds).toFixed(0)} | ${q(0.5).toFixed(2)} | ${q(0.99).toFixed(2)} |`,
    );
  };
  await measure('GET state (1 KB)', () => fetch(`${base}/state/plan`, { headers }));
  await measure('append 1 item', (i) =>
    fetch(`${base}/lists/turns/items`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ items: [{ i, text: 'x'.repeat(1000) }], expectedCount: i }),
    }),
  );
  await new Promise<void>((r) => server.close(() => r()));
  return ['| request | n | requests/s | p50 ms | p99 ms |', '|---|---:|---:|---:|---:|', ...rows].join('\n');
}

/** Bundle size and import time (bundled vs compiled-unbundled, fresh process, median of 5). */
export function bundleTable(): string {
  const env = {
    ...process.env,
    NODE_OPTIONS: '',
    AWS_LAMBDA_FUNCTION_NAME: 'bench',
    FC_FUNCTION_NAME: '',
    STORE_BACKEND: 's3',
    S3_BUCKET: 'bench',
    LOCK_BACKEND: 'dynamodb',
    LOCK_TABLE: 'bench',
    AWS_REGION: 'us-east-1',
    LOG_LEVEL: 'SILENT',
  };
  const fcEnv = {
    ...env,
    AWS_LAMBDA_FUNCTION_NAME: '',
    FC_FUNCTION_NAME: 'bench',
    STORE_BACKEND: 'oss',
    OSS_BUCKET: 'bench-bucket',
    OSS_REGION: 'oss-cn-hangzhou',
    ALIBABA_CLOUD_ACCESS_KEY_ID: 'bench',
    ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'bench',
    AUTH_JWKS_URL: 'http://127.0.0.1:1/jwks',
  };
  const time = (file: string, e: NodeJS.ProcessEnv) => {
    const samples = Array.from({ length: 5 }, () =>
      Number(
        execFileSync(
          'node',
          [
            '-e',
            `const t=performance.now();import(${JSON.stringify(file)}).then(()=>console.log(performance.now()-t))`,
          ],
          { env: e },
        ).toString(),
      ),
    ).sort((a, b) => a - b);
    return samples[2] as number;
  };
  // Cold start: from the process's start (node's own boot included) to the first answer of a health event.
  const health = {
    aws: `m.handler({ version: '2.0', routeKey: '$default', rawPath: '/v1/health', rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: '/v1/health' }, requestId: 'r1' }, isBase64Encoded: false }, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 1000 })`,
    fc: `m.handler(Buffer.from(JSON.stringify({ rawPath: '/v1/health', headers: {}, queryParameters: {}, requestContext: { requestId: 'r1', http: { method: 'GET' } } })))`,
  };
  const coldStart = (file: string, call: string, e: NodeJS.ProcessEnv) => {
    const script = `import(${JSON.stringify(file)}).then((m) => ${call}).then(() => console.log(performance.now()))`;
    const samples = Array.from({ length: 5 }, () =>
      Number(execFileSync('node', ['-e', script], { env: e }).toString().trim().split('\n').at(-1)),
    ).sort((a, b) => a - b);
    return samples[2] as number;
  };
  const rows = [
    ['aws/api (Lambda)', 'dist/aws/api.mjs', '.bench-build/functions/aws/api.js', env, health.aws],
    [
      'aliyun/api (Function Compute)',
      'dist/aliyun/api.mjs',
      '.bench-build/functions/aliyun/api.js',
      fcEnv,
      health.fc,
    ],
  ] as const;
  const lines = [
    '| function | minified bundle | import bundled ms | import unbundled ms | ratio | cold start to first answer ms |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  for (const [name, bundle, plain, e, call] of rows) {
    const bundled = time(`${process.cwd()}/${bundle}`, e);
    const unbundled = time(`${process.cwd()}/${plain}`, e);
    const cold = coldStart(`${process.cwd()}/${bundle}`, call, e);
    lines.push(
      `| ${name} | ${(statSync(bundle).size / 1024).toFixed(0)} KB | ${bundled.toFixed(0)} | ${unbundled.toFixed(0)} | ${(bundled / unbundled).toFixed(2)} | ${cold.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * Source maps' cost: cold start (process start to the first answer of a health event) and the p50
 * of 200 more health events in the same process, for each function bundle, with NODE_OPTIONS empty
 * and with --enable-source-maps (as deployed); medians of 5 processes.
 */
export function sourceMapTable(): string {
  const base = {
    ...process.env,
    STORE_BACKEND: 's3',
    S3_BUCKET: 'bench',
    LOCK_BACKEND: 'dynamodb',
    LOCK_TABLE: 'bench',
    AWS_REGION: 'us-east-1',
    LOG_LEVEL: 'SILENT',
  };
  const functions = [
    {
      name: 'aws/api (Lambda)',
      bundle: 'dist/aws/api.mjs',
      env: { ...base, AWS_LAMBDA_FUNCTION_NAME: 'bench', FC_FUNCTION_NAME: '' },
      call: `m.handler({ version: '2.0', routeKey: '$default', rawPath: '/v1/health', rawQueryString: '', headers: {}, requestContext: { http: { method: 'GET', path: '/v1/health' }, requestId: 'r1' }, isBase64Encoded: false }, { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 1000 })`,
    },
    {
      name: 'aliyun/api (Function Compute)',
      bundle: 'dist/aliyun/api.mjs',
      env: {
        ...base,
        AWS_LAMBDA_FUNCTION_NAME: '',
        FC_FUNCTION_NAME: 'bench',
        STORE_BACKEND: 'oss',
        OSS_BUCKET: 'bench-bucket',
        OSS_REGION: 'oss-cn-hangzhou',
        ALIBABA_CLOUD_ACCESS_KEY_ID: 'bench',
        ALIBABA_CLOUD_ACCESS_KEY_SECRET: 'bench',
        AUTH_JWKS_URL: 'http://127.0.0.1:1/jwks',
      },
      call: `m.handler(Buffer.from(JSON.stringify({ rawPath: '/v1/health', headers: {}, queryParameters: {}, requestContext: { requestId: 'r1', http: { method: 'GET' } } })))`,
    },
  ];
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
  const lines = [
    '| function | source maps | map size | cold start to first answer ms | p50 of 200 warm health events ms |',
    '|---|---|---:|---:|---:|',
  ];
  for (const f of functions) {
    const file = `${process.cwd()}/${f.bundle}`;
    const script = `const m = await import(${JSON.stringify(file)}); await ${f.call}; const cold = performance.now(); const t = []; for (let i = 0; i < 200; i++) { const s = performance.now(); await ${f.call}; t.push(performance.now() - s); } t.sort((a, b) => a - b); console.log(JSON.stringify({ cold, p50: t[100] }));`;
    for (const options of ['', '--enable-source-maps']) {
      const samples = Array.from({ length: 5 }, () => {
        const out = execFileSync('node', ['--input-type=module', '-e', script], {
          env: { ...f.env, NODE_OPTIONS: options },
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        return JSON.parse(out.toString().trim().split('\n').at(-1) as string) as {
          cold: number;
          p50: number;
        };
      });
      lines.push(
        `| ${f.name} | ${options ? 'enabled' : 'off'} | ${(statSync(`${f.bundle}.map`).size / 1024).toFixed(0)} KB | ${median(samples.map((x) => x.cold)).toFixed(0)} | ${median(samples.map((x) => x.p50)).toFixed(3)} |`,
      );
    }
  }
  return lines.join('\n');
}
