/**
 * A counting HTTP proxy on 127.0.0.1: the benchmark counts requests and bytes OUTSIDE the code under
 * test, on the wire, as a bill would. Every request is forwarded as it came to one upstream on
 * 127.0.0.1 and classified by its method and query:
 * - S3: GET and HEAD of an object are GET-class; PUT (CopyObject included), POST (DeleteObjects and
 *   multipart calls included) and LIST (a GET of the bucket — `list-type`, `prefix`, `?uploads`,
 *   `?versions` — or ListParts, `?uploadId`) are PUT-class, and LIST is also counted apart; DELETE is
 *   free (S3 does not bill it) and counted apart.
 * - OSS (path-style, as the oss driver addresses a local endpoint) the same way: AppendObject
 *   (`POST ?append`) is a write, PUT-class; GET and HEAD of an object GET-class; a GET of the bucket
 *   (ListObjects) LIST.
 * - DynamoDB (the JSON protocol): the `X-Amz-Target` operation, a write (`UpdateItem`, `PutItem`,
 *   `DeleteItem`, ...) or a read (`GetItem`, `Query`, `Scan`, ...).
 * Bytes are the bodies: up (request bodies) and down (answer bodies), headers not included.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What went through the proxy. */
export interface Traffic {
  /** Every request forwarded. */
  requests: number;
  /** S3 GET-class: GET and HEAD of an object. */
  getClass: number;
  /** S3 PUT-class: PUT, COPY, POST and LIST. */
  putClass: number;
  /** LIST requests (also in `putClass`). */
  list: number;
  /** DELETE requests (free on S3). */
  deletes: number;
  /** DynamoDB writes and reads. */
  ddbWrites: number;
  ddbReads: number;
  bytesUp: number;
  bytesDown: number;
}

export const NO_TRAFFIC: Traffic = {
  requests: 0,
  getClass: 0,
  putClass: 0,
  list: 0,
  deletes: 0,
  ddbWrites: 0,
  ddbReads: 0,
  bytesUp: 0,
  bytesDown: 0,
};

/** `a − b`, field by field. */
export function minus(a: Traffic, b: Traffic): Traffic {
  const out = { ...a };
  for (const k of Object.keys(out) as Array<keyof Traffic>) out[k] = a[k] - b[k];
  return out;
}

/** `a + b`, field by field. */
export function plus(a: Traffic, b: Traffic): Traffic {
  const out = { ...a };
  for (const k of Object.keys(out) as Array<keyof Traffic>) out[k] = a[k] + b[k];
  return out;
}

/** `t / n`, field by field (means). */
export function divide(t: Traffic, n: number): Traffic {
  const out = { ...t };
  for (const k of Object.keys(out) as Array<keyof Traffic>) out[k] = t[k] / n;
  return out;
}

const DYNAMO_READS = new Set([
  'GetItem',
  'BatchGetItem',
  'Query',
  'Scan',
  'DescribeTable',
  'TransactGetItems',
]);

/** The class of one request (exported for the unit test of the classification). */
export function classify(
  method: string,
  url: string,
  headers: http.IncomingHttpHeaders,
): 'get' | 'put' | 'list' | 'delete' | 'ddb-write' | 'ddb-read' {
  const target = headers['x-amz-target'];
  if (typeof target === 'string' && target.startsWith('DynamoDB_')) {
    return DYNAMO_READS.has(target.slice(target.indexOf('.') + 1)) ? 'ddb-read' : 'ddb-write';
  }
  const parsed = new URL(url, 'http://proxy');
  const query = parsed.searchParams;
  // Path-style: /<bucket> is the bucket, /<bucket>/<key> an object.
  const onBucket = parsed.pathname.replace(/^\/+/, '').replace(/\/+$/, '').split('/').length === 1;
  switch (method) {
    case 'DELETE':
      return 'delete';
    case 'GET':
      if (onBucket || query.has('list-type') || query.has('uploads') || query.has('uploadId')) return 'list';
      if (query.has('versions')) return 'list';
      return 'get';
    case 'HEAD':
      return 'get';
    default:
      return 'put';
  }
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'expect', 'proxy-connection', 'upgrade', 'te', 'trailer'];

function withoutHopByHop(headers: http.IncomingHttpHeaders): http.IncomingHttpHeaders {
  const out = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

/** A running counting proxy. */
export interface CountingProxy {
  readonly endpoint: string;
  /** The traffic so far (a copy). */
  snapshot(): Traffic;
  /** Counts `fn`'s traffic (nothing else may run through the proxy meanwhile). */
  measure<T>(fn: () => Promise<T>): Promise<{ result: T; traffic: Traffic; ms: number }>;
  stop(): Promise<void>;
}

/** Starts a counting proxy on 127.0.0.1 in front of `upstreamPort` on 127.0.0.1. */
export async function startCountingProxy(upstreamPort: number): Promise<CountingProxy> {
  const total: Traffic = { ...NO_TRAFFIC };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const kind = classify(req.method ?? 'GET', req.url ?? '/', req.headers);
    total.requests++;
    if (kind === 'get') total.getClass++;
    else if (kind === 'put') total.putClass++;
    else if (kind === 'list') {
      total.putClass++;
      total.list++;
    } else if (kind === 'delete') total.deletes++;
    else if (kind === 'ddb-write') total.ddbWrites++;
    else total.ddbReads++;
    // Hop-by-hop headers stay on their hop: a `Connection: close` passed on would close the
    // front's end of a pooled socket the agent then reuses.
    const headers = withoutHopByHop(req.headers);
    const upstream = http.request(
      { host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.url, headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
        answer.on('data', (chunk: Buffer) => {
          total.bytesDown += chunk.byteLength;
        });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.on('data', (chunk: Buffer) => {
      total.bytesUp += chunk.byteLength;
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    snapshot: () => ({ ...total }),
    async measure(fn) {
      const before = { ...total };
      const started = performance.now();
      const result = await fn();
      return { result, traffic: minus(total, before), ms: performance.now() - started };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
