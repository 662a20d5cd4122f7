/**
 * The Node entry's raw download: a GET over node:http(s) that hands the object store's bytes over
 * exactly as stored (fetch would decode a body served with its Content-Encoding, hiding the stored
 * bytes a download counts in its progress).
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { type DirectFetch, NULL_BODY } from '../transport.js';

/**
 * A request over node:http(s), answered as a fetch `Response` whose body is the bytes as sent
 * (never decoded): the transport of direct downloads when the client is given no `fetch`.
 */
export const rawFetch: DirectFetch = (url, init) => {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      target,
      { method: init.method ?? 'GET', headers: { ...init.headers }, signal: init.signal },
      (answer: IncomingMessage) => {
        try {
          const headers = new Headers();
          for (const [name, value] of Object.entries(answer.headers))
            for (const one of [value ?? []].flat()) headers.append(name, one);
          const status = answer.statusCode ?? 0;
          if (NULL_BODY.has(status)) answer.resume();
          const body = NULL_BODY.has(status)
            ? null
            : (Readable.toWeb(answer) as NodeReadableStream as unknown as ReadableStream<Uint8Array>);
          resolve(new Response(body, { status, statusText: answer.statusMessage, headers }));
        } catch (error) {
          answer.destroy();
          reject(error);
        }
      },
    );
    request.on('error', reject);
    request.end(init.body);
  });
};
