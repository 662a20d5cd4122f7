/**
 * No request stops the node:http server. Raw sockets (fetch normalises the target); every
 * case is followed by `GET /v1/health` on a new connection, which must still answer 200.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lib/config.js';
import { createMemoryDriver } from '../../lib/drivers/memory.js';
import { type BlobServer, createNodeServer } from '../../lib/http/adapters/node.js';
import { createApp } from '../../lib/http/app.js';
import { createMemoryLock } from '../../lib/lock/memory.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (within the wait). */
  closed: boolean;
}

/** Writes `bytes` on a new connection and reads what comes back until the server closes it (or 2 s). */
function raw(port: number, bytes: Buffer | string, keepOpen = false): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks).toString('latin1')), closed });
    };
    const timer = setTimeout(() => done(false), 2000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('close', () => done(true));
    socket.on('error', () => {});
    if (keepOpen) socket.write(bytes);
    else socket.end(bytes);
  });
}

/** The status, headers and (de-chunked) body of a raw HTTP/1.1 answer. */
function parse(text: string): Omit<RawAnswer, 'closed'> {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) return { status: 0, headers: {}, body: text };
  const [statusLine = '', ...lines] = text.slice(0, split).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = text.slice(split + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    let out = '';
    for (let at = 0; ; ) {
      const eol = body.indexOf('\r\n', at);
      const size = Number.parseInt(body.slice(at, eol), 16);
      if (!(size > 0)) break;
      out += body.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
    body = out;
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

const get = (target: string, method = 'GET') =>
  `${method} ${target} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n`;

const onError = vi.fn();
/** Paths the wrapped handler misbehaves on. */
const BOOM = '/test/boom';
const BAD_HEADER = '/test/bad-header';
const blobs: BlobServer = {
  serveBlob: async () => {
    throw new Error('blob boom');
  },
  limitBytes: 1024,
};
let server: ReturnType<typeof createNodeServer>;
let port: number;

beforeAll(async () => {
  const config = loadConfig({
    STORE_BACKEND: 'memory',
    AUTH_JWT_SECRET: 'x'.repeat(32),
    LOG_LEVEL: 'SILENT',
  });
  const app = createApp(config, { driver: createMemoryDriver(), lock: createMemoryLock() });
  server = createNodeServer(
    async (request) => {
      if (request.path === BOOM) throw new Error('handler boom');
      if (request.path === BAD_HEADER) return { status: 200, headers: { 'x-bad': 'a\nb' }, body: 'x' };
      return app.handle(request);
    },
    config.BODY_LIMIT_BYTES,
    blobs,
    { onError },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** Asserts the server still answers health on a new connection. */
async function stillServes() {
  const health = await raw(port, get('/v1/health'));
  expect(health.status).toBe(200);
}

describe('node:http adapter: request targets', () => {
  it.each([
    ['//'],
    ['http://[::1/'],
    ['/%zz'],
    ['/v1/health?x=%zz'],
    ['/v1/health%'],
    ['/v1/health#fragment'],
  ])('GET %s is a 400 invalid-request problem naming the target', async (target) => {
    const answer = await raw(port, get(target));
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'invalid-request', field: 'target' });
    await stillServes();
  });

  it('routes an absolute-form target by its path and query', async () => {
    const answer = await raw(port, get('http://example.com/v1/health?probe=1'));
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'ok' });
    await stillServes();
  });

  it('answers OPTIONS * with 204 and Allow; another method on * is a 400 problem', async () => {
    const options = await raw(port, get('*', 'OPTIONS'));
    expect(options.status).toBe(204);
    expect(options.headers.allow?.split(', ')).toEqual(expect.arrayContaining(['GET', 'PUT', 'OPTIONS']));
    await stillServes();
    const other = await raw(port, get('*'));
    expect(other.status).toBe(400);
    expect(other.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(other.body)).toMatchObject({ code: 'invalid-request', field: 'target' });
    await stillServes();
  });
});

describe('node:http adapter: what the parser refuses (clientError)', () => {
  it.each([
    [
      'a NUL byte in the target',
      400,
      Buffer.from('GET /v1/\x00health HTTP/1.1\r\nhost: x\r\n\r\n', 'latin1'),
    ],
    ['a raw non-ASCII byte', 400, Buffer.from('GET /v1/\xffhealth HTTP/1.1\r\nhost: x\r\n\r\n', 'latin1')],
    ['a target over 16 KB', 431, `GET /${'a'.repeat(http.maxHeaderSize)} HTTP/1.1\r\nhost: x\r\n\r\n`],
  ])('%s: a %d problem, then the connection is closed', async (_name, status, bytes) => {
    const answer = await raw(port, bytes, true);
    expect(answer.status).toBe(status);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body)).toMatchObject({ status, code: 'invalid-request' });
    expect(answer.closed).toBe(true);
    await stillServes();
  });
});

describe('node:http adapter: errors while answering', () => {
  it.each([
    ['the handler throws', BOOM],
    ['the answer cannot be written (invalid header)', BAD_HEADER],
    ['the blob server throws', '/v1/blobs/token'],
  ])('%s: a 500 internal problem with the request id, logged once', async (_name, target) => {
    onError.mockClear();
    const answer = await raw(port, get(target));
    expect(answer.status).toBe(500);
    expect(answer.headers['content-type']).toBe('application/problem+json');
    const body = JSON.parse(answer.body);
    expect(body).toMatchObject({ code: 'internal', requestId: expect.any(String) });
    expect(onError).toHaveBeenCalledTimes(1);
    // The error and the request id; node:http has no platform id (undefined, or not passed).
    const [error, requestId, platformRequestId] = onError.mock.calls[0] ?? [];
    expect({ error, requestId, platformRequestId }).toStrictEqual({
      error: expect.any(Error),
      requestId: body.requestId,
      platformRequestId: undefined,
    });
    await stillServes();
  });

  it('drops a request whose client went away mid-body, without an error', async () => {
    onError.mockClear();
    const head = 'PUT /v1/sessions/s/state/k HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n';
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.write(`${head}{"partial":`, () => r()));
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(onError).not.toHaveBeenCalled();
    await stillServes();
  });
});
