/** node:http adapter: the local server of `npm start`. */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { HttpHandler } from '../types.js';

/** A node:http server that answers with `handle`; bodies over `bodyLimitBytes` are cut off with 413. */
export function createNodeServer(handle: HttpHandler, bodyLimitBytes: number): http.Server {
  return http.createServer((req, res) => {
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
