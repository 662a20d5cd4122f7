/** node:http adapter: the local server of `npm start`. */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { HttpHandler } from '../types.js';

/** Presigned transfers the local server answers itself (the fs driver's, under `/v1/blobs/`). */
export interface BlobServer {
  serveBlob(
    method: string,
    token: string,
    headers: Record<string, string>,
    body: Uint8Array,
  ): Promise<{ status: number; headers: Record<string, string>; body?: Uint8Array }>;
  /** Largest body of a presigned PUT. */
  readonly limitBytes: number;
}

/**
 * A node:http server that answers with `handle`; bodies over `bodyLimitBytes` are cut off with 413.
 * With `blobs`, requests under `/v1/blobs/` are presigned transfers, answered by it.
 */
export function createNodeServer(
  handle: HttpHandler,
  bodyLimitBytes: number,
  blobs?: BlobServer,
): http.Server {
  return http.createServer((req, res) => {
    if (blobs && (req.url ?? '').startsWith('/v1/blobs/')) return void serveBlob(blobs, req, res);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      // Keep one byte past the limit, so the router answers 413 without buffering a huge body.
      if (size > bodyLimitBytes + 1) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('end', async () => {
      const url = new URL(req.url ?? '/', 'http://local');
      const rawPath = (req.url ?? '/').split('?')[0] ?? '/';
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const body = Buffer.concat(chunks);
      const response = await handle({
        method: req.method ?? 'GET',
        path: rawPath,
        query: Object.fromEntries(url.searchParams),
        headers,
        body: tooLarge ? Buffer.alloc(bodyLimitBytes + 1) : body.length > 0 ? body : undefined,
        requestId: randomUUID(),
      });
      res.writeHead(response.status, response.headers);
      res.end(response.body);
    });
  });
}

async function serveBlob(
  blobs: BlobServer,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > blobs.limitBytes) return void res.writeHead(413).end();
    chunks.push(chunk as Buffer);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers))
    if (typeof value === 'string') headers[name] = value;
  const token = (req.url ?? '').slice('/v1/blobs/'.length).split('?')[0] ?? '';
  try {
    const answer = await blobs.serveBlob(req.method ?? 'GET', token, headers, Buffer.concat(chunks));
    res.writeHead(answer.status, {
      ...answer.headers,
      'content-length': String(answer.body?.byteLength ?? 0),
    });
    res.end(answer.body);
  } catch {
    res.writeHead(500).end();
  }
}
