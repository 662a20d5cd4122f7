/**
 * Readable failures: the bundled Lambda handler (dist/aws/api.mjs, with its source map beside it)
 * fails for real against the S3 front — a listing answered with malformed XML, which the SDK cannot
 * parse — and the ERROR line it logs carries a stack trace that names the source files under lib/
 * when source maps are enabled (NODE_OPTIONS=--enable-source-maps, as both clouds set it), and only
 * the bundle when they are not.
 *
 * The S3 front has no fault that answers malformed XML, so a small proxy here forwards every request
 * to the front and cuts the body of ListObjectsV2 answers short.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

const run = promisify(execFile);
let proxy: http.Server;
let endpoint: string;
let listings = 0;

beforeAll(async () => {
  await run('node', ['scripts/build.mjs', 'aws/api']);
  const upstream = new URL(inject('servers').s3);
  proxy = http.createServer((req, res) => {
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
      },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          let body = Buffer.concat(chunks);
          const headers = { ...answer.headers };
          if (req.method === 'GET' && (req.url ?? '').includes('list-type=2')) {
            listings++;
            body = Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult><Name>');
            headers['content-length'] = String(body.length);
          }
          res.writeHead(answer.statusCode ?? 502, headers).end(body);
        });
      },
    );
    req.pipe(forward);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => proxy.close(r));
});

/** Invokes the bundle for GET /v1/sessions as alice; returns its answer and its ERROR log lines. */
async function listSessions(nodeOptions: string) {
  const event = {
    version: '2.0',
    routeKey: 'GET /v1/sessions',
    rawPath: '/v1/sessions',
    rawQueryString: '',
    headers: {},
    requestContext: {
      http: { method: 'GET', path: '/v1/sessions' },
      requestId: 'r-source-maps',
      authorizer: { jwt: { claims: { sub: 'alice' }, scopes: [] } },
    },
    isBase64Encoded: false,
  };
  const script = `import('./dist/aws/api.mjs').then((m) => m.handler(JSON.parse(process.env.EVENT), { functionName: 'f', awsRequestId: 'r1', getRemainingTimeInMillis: () => 10000 })).then((r) => console.log(JSON.stringify({ answer: r })))`;
  const { stdout, stderr } = await run('node', ['--input-type=module', '-e', script], {
    env: {
      ...process.env,
      NODE_OPTIONS: nodeOptions,
      EVENT: JSON.stringify(event),
      AWS_LAMBDA_FUNCTION_NAME: 'f',
      STORE_BACKEND: 's3',
      S3_BUCKET: inject('servers').bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      LOCK_BACKEND: 'dynamodb',
      LOCK_TABLE: 'unused',
      DYNAMODB_ENDPOINT: inject('servers').dynamodb,
      LOG_LEVEL: 'ERROR',
    },
    timeout: 30_000,
  });
  // Powertools Logger writes ERROR lines to stderr, the others to stdout.
  const lines = `${stdout}\n${stderr}`
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
  return {
    answer: lines.find((l) => l.answer)?.answer,
    errors: lines.filter((l) => l.level === 'ERROR'),
  };
}

describe('readable failures from the bundles', () => {
  it('logs a stack trace naming the files under lib/ with source maps enabled, only the bundle without', async () => {
    const mapped = await listSessions('--enable-source-maps');
    expect(listings).toBeGreaterThan(0);
    expect(mapped.answer.statusCode).toBe(500);
    // The event has no X-Request-Id: the answer's id is a fresh one, logged with API Gateway's beside it.
    const { requestId } = JSON.parse(mapped.answer.body);
    expect(JSON.parse(mapped.answer.body)).toMatchObject({ code: 'internal', requestId: expect.any(String) });
    expect(requestId).not.toBe('r-source-maps');
    expect(mapped.errors).toHaveLength(1);
    expect(mapped.errors[0]).toMatchObject({ requestId, platformRequestId: 'r-source-maps' });
    const stack: string = mapped.errors[0].error.stack;
    // The real failure: the SDK could not parse the listing.
    expect(stack).toMatch(/XML/);
    // Frames of this repository's sources, mapped back from the minified bundle: the first one and
    // several others name a file under lib/ with its line and column.
    const frames = stack.split('\n').filter((l) => l.trim().startsWith('at '));
    const sources = new Set(frames.map((f) => /\/(lib\/[\w/.-]+\.ts):\d+:\d+/.exec(f)?.[1]).filter(Boolean));
    expect(frames[0]).toMatch(/\/lib\/[\w/.-]+\.ts:\d+:\d+\)$/);
    expect(sources.size).toBeGreaterThanOrEqual(3);
    expect(stack).not.toMatch(/api\.mjs:\d+:\d+/);

    const plain = await listSessions('');
    expect(plain.answer.statusCode).toBe(500);
    const unmapped: string = plain.errors[0].error.stack;
    expect(unmapped).toMatch(/dist\/aws\/api\.mjs:\d+:\d+/);
    expect(unmapped).not.toMatch(/\/lib\/[\w/.-]+\.ts:\d+/);
  });
});
