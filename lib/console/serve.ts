/**
 * Serving the session console (docs/console.md): its built files (dist/console/) under `/console/`,
 * for the local server (same origin as the API) and for `agent-state-store console --api <url>`, a
 * static server on 127.0.0.1 only that forwards the console's `/v1` GET and HEAD requests to a
 * deployed API, relaying `Authorization` (so it never listens beyond loopback). Both answer with
 * `CONSOLE_CSP`. Nothing here logs a header.
 */
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The console's Content-Security-Policy: its own files only, never framed. */
export const CONSOLE_CSP = "default-src 'self'; frame-ancestors 'none'";
/** Where the console is served. */
export const CONSOLE_PATH = '/console/';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
const SECURITY = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** Answers a request for the console's files; false when the path is not the console's. */
export function consoleHandler(
  dir: string | URL,
): (req: http.IncomingMessage, res: http.ServerResponse) => boolean {
  const root = typeof dir === 'string' ? dir : fileURLToPath(dir);
  const cache = new Map<string, Buffer>();
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://console');
    if (url.pathname === '/console') {
      res.writeHead(308, { location: CONSOLE_PATH, ...SECURITY }).end();
      return true;
    }
    if (!url.pathname.startsWith(CONSOLE_PATH)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', ...SECURITY }).end();
      return true;
    }
    const name = url.pathname.slice(CONSOLE_PATH.length) || 'index.html';
    const type = TYPES[path.extname(name)];
    // Only the flat files the build writes: no folders, no dot files.
    if (!type || !/^[a-z0-9-]+\.[a-z]+$/.test(name)) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...SECURITY }).end('not found\n');
      return true;
    }
    const send = (body: Buffer) => {
      res.writeHead(200, {
        'content-type': type,
        'content-length': body.length,
        'cache-control': 'no-cache',
        ...SECURITY,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const cached = cache.get(name);
    if (cached) send(cached);
    else
      readFile(path.join(root, name)).then(
        (body) => {
          cache.set(name, body);
          send(body);
        },
        () =>
          res
            .writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...SECURITY })
            .end(`console file ${name} is missing: build it with node scripts/build.mjs console\n`),
      );
    return true;
  };
}

/** Request headers the proxy relays to the API, and answer headers it relays back. */
const RELAYED = ['authorization', 'accept', 'if-none-match', 'if-match'];
const ANSWERED = [
  'content-type',
  'etag',
  'retry-after',
  'location',
  'x-request-id',
  'cache-control',
  'allow',
];

/** Options of `startConsoleServer`. */
export interface ConsoleServerOptions {
  /** The deployed API's base URL (its `/v1` is forwarded). */
  readonly api: string;
  /** The console's built files. */
  readonly dir: string | URL;
  /** Default 0: any free port. */
  readonly port?: number;
}

/** Starts the console on 127.0.0.1 in front of `api`; resolves with the server and the console's URL. */
export async function startConsoleServer(
  options: ConsoleServerOptions,
): Promise<{ server: http.Server; url: string }> {
  const api = new URL(options.api);
  if (api.protocol !== 'http:' && api.protocol !== 'https:') throw new Error('--api must be an http(s) URL');
  const base = api.href.replace(/\/+$/, '').replace(/\/v1$/, '');
  const files = consoleHandler(options.dir);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://console');
    if (url.pathname === '/') {
      res.writeHead(302, { location: CONSOLE_PATH, ...SECURITY }).end();
      return;
    }
    if (files(req, res)) return;
    if (url.pathname !== '/v1' && !url.pathname.startsWith('/v1/')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...SECURITY }).end('not found\n');
      return;
    }
    // The console only reads: nothing else is forwarded.
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', ...SECURITY }).end();
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of RELAYED) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    fetch(`${base}${url.pathname}${url.search}`, { method: req.method, headers, redirect: 'manual' }).then(
      async (answer) => {
        const out: Record<string, string> = { ...SECURITY };
        for (const name of ANSWERED) {
          const value = answer.headers.get(name);
          if (value !== null) out[name] = value;
        }
        const body = Buffer.from(await answer.arrayBuffer());
        res.writeHead(answer.status, out).end(req.method === 'HEAD' ? undefined : body);
      },
      () => {
        res
          .writeHead(502, { 'content-type': 'application/problem+json', ...SECURITY })
          .end(JSON.stringify({ status: 502, title: 'the API could not be reached', detail: base }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return { server, url: `http://127.0.0.1:${port}${CONSOLE_PATH}` };
}
