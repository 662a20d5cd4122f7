/** Small HTTP helpers shared by the local S3 and OSS fronts. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A buffered upstream answer. */
export interface Upstream {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Reads a request or response body whole. */
export async function readBody(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Sends one request upstream and buffers the answer. */
export function request(
  target: { host: string; port: number },
  method: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
  body?: Buffer | NodeJS.ReadableStream,
): Promise<Upstream> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: target.host, port: target.port, method, path, headers }, (res) => {
      readBody(res).then(
        (b) => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: b }),
        reject,
      );
    });
    req.on('error', reject);
    if (body === undefined) req.end();
    else if (Buffer.isBuffer(body)) req.end(body);
    else body.pipe(req);
  });
}

/** Copies request headers, dropping the hop-by-hop ones and those named in `drop`. */
export function forwardHeaders(
  headers: http.IncomingHttpHeaders,
  drop: (name: string) => boolean = () => false,
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === 'connection' || name === 'host' || drop(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Escapes text for XML. */
export function xmlEscape(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** Reverses the XML escapes servers and SDKs use. */
export function xmlUnescape(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, h: string) => String.fromCodePoint(Number.parseInt(h, 16)))
    .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Every `<tag>…</tag>` text in an XML document, unescaped. */
export function xmlValues(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) =>
    xmlUnescape(m[1] ?? ''),
  );
}

/** Starts a server on 127.0.0.1 with an ephemeral port. */
export async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Closes a server and every connection it holds. */
export async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Splits a request target into bucket, key and query WITHOUT normalising `.` or `..` segments. */
export function parseTarget(target: string): { bucket: string; key: string; query: URLSearchParams } {
  const at = target.indexOf('?');
  const path = at < 0 ? target : target.slice(0, at);
  const [, bucket = '', ...rest] = path.split('/');
  return {
    bucket: decodeURIComponent(bucket),
    key: rest.length > 0 ? decodeURIComponent(rest.join('/')) : '',
    query: new URLSearchParams(at < 0 ? '' : target.slice(at + 1)),
  };
}
