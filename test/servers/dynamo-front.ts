/**
 * A front for dynalite that injects DynamoDB's failures on demand: throttling
 * (400 ProvisionedThroughputExceededException), 500 InternalServerError, latency, connection resets.
 * Control API as the S3 front's: `POST /__front/faults` (a rule with `probability`, or `times`),
 * `POST /__front/reset`, `GET /__front/injected`.
 */
import http from 'node:http';
import { FaultRules } from './fault-rules.js';
import { close, forwardHeaders, listen, readBody, request } from './http-util.js';

interface DynamoFault {
  kind: 'throttle' | '500' | 'latency' | 'reset';
  probability?: number;
  times?: number;
  ms?: number;
  /** Only this operation (the X-Amz-Target suffix, e.g. `UpdateItem`). */
  operation?: string;
}

export async function startDynamoFront(upstreamPort: number) {
  const upstream = { host: '127.0.0.1', port: upstreamPort };
  const faults = new FaultRules<DynamoFault>();
  const server = http.createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const body = await readBody(req);
    if ((req.url ?? '').startsWith('/__front/')) {
      const path = (req.url ?? '').slice('/__front/'.length);
      if (path === 'faults') faults.add(JSON.parse(body.toString()) as DynamoFault);
      if (path === 'reset') faults.reset();
      if (path === 'injected')
        return void res.writeHead(200).end(JSON.stringify({ injected: faults.injected }));
      return void res.writeHead(204).end();
    }
    const operation =
      String(req.headers['x-amz-target'] ?? '')
        .split('.')
        .pop() ?? '';
    const fault = faults.take((f) => !f.operation || f.operation === operation);
    if (fault?.kind === 'latency') await new Promise((r) => setTimeout(r, fault.ms ?? 200));
    else if (fault?.kind === 'reset') return void res.socket?.destroy();
    else if (fault) {
      const throttle = fault.kind === 'throttle';
      const payload = JSON.stringify({
        __type: `com.amazonaws.dynamodb.v20120810#${throttle ? 'ProvisionedThroughputExceededException' : 'InternalServerError'}`,
        message: throttle
          ? 'The level of configured provisioned throughput for the table was exceeded.'
          : 'Internal server error',
      });
      return void res
        .writeHead(throttle ? 400 : 500, { 'content-type': 'application/x-amz-json-1.0' })
        .end(payload);
    }
    const up = await request(
      upstream,
      req.method ?? 'POST',
      req.url ?? '/',
      forwardHeaders(req.headers),
      body,
    );
    res.writeHead(up.status, { ...up.headers, 'content-length': String(up.body.length) }).end(up.body);
  }

  const port = await listen(server);
  return { port, endpoint: `http://127.0.0.1:${port}`, stop: () => close(server) };
}
