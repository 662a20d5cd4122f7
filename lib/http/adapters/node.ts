/**
 * node:http adapter: the local server of `npm start`. No request can stop it: a target it cannot
 * route is a 400 problem, what Node's parser refuses is answered on the socket (`clientError`), and
 * any error while answering is that request's 500 `internal` problem, reported once.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { ValidationError } from '../../contract/errors.js';
import { REQUEST_ID_HEADER } from '../../protocol/schemas.js';
import { problem, toProblem } from '../problems.js';
import { API_METHODS } from '../routes/index.js';
import type { HttpHandler, HttpResponse } from '../types.js';
import { guarded, type OnError, requestIdOf, withRequestId } from './guard.js';

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

/** What else `createNodeServer` takes. */
export interface NodeServerOptions {
  /** Told of each error that became a 500 answer; by default, the console. */
  readonly onError?: OnError;
}

/** An answer as written to the socket (blob bodies are bytes; a compressed one is base64, see HttpResponse). */
type Answer = Omit<HttpResponse, 'body'> & { readonly body?: string | Uint8Array };

const BLOBS = '/v1/blobs/';
const REQUEST_ID = REQUEST_ID_HEADER.toLowerCase();
/** A `%` not followed by two hex digits. */
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
/** The `scheme://authority` an absolute-form target starts with. */
const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;
/** What `OPTIONS *` answers: every method a route takes, and OPTIONS. */
const ALLOW = [...API_METHODS, 'OPTIONS'].join(', ');
/** Parser errors not answered 400 (as Node answers them by default). */
const PARSE_ERRORS: Record<string, readonly [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'the request line and headers are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'the request did not arrive in time'],
};

/**
 * A node:http server that answers with `handle`; bodies over `bodyLimitBytes` are cut off with 413.
 * With `blobs`, requests under `/v1/blobs/` are presigned transfers, answered by it.
 */
export function createNodeServer(
  handle: HttpHandler,
  bodyLimitBytes: number,
  blobs?: BlobServer,
  options: NodeServerOptions = {},
): http.Server {
  const onError: OnError =
    options.onError ?? ((error, requestId) => console.error('request failed', { requestId, error }));

  /** The answer to one request; undefined when the client went away before sending its body. */
  async function answer(req: http.IncomingMessage, requestId: string): Promise<Answer | undefined> {
    const method = req.method ?? 'GET';
    if (req.url === '*') {
      if (method === 'OPTIONS') return { status: 204, headers: { allow: ALLOW } };
      throw new ValidationError('target', '* is a target only for OPTIONS');
    }
    const { path, query } = parseTarget(req.url ?? '/');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    // Node keeps only the first of repeated Authorization headers: joined, as API Gateway and FC join
    // them, the router refuses them all.
    const authorization = req.headersDistinct.authorization;
    if (authorization && authorization.length > 1) headers.authorization = authorization.join(', ');
    if (blobs && path.startsWith(BLOBS)) {
      const body = await readBody(req, blobs.limitBytes);
      if (!body) return undefined;
      if (body.length > blobs.limitBytes)
        return problem('payload-too-large', 'the blob is too large', { limit: blobs.limitBytes });
      const blob = await blobs.serveBlob(method, path.slice(BLOBS.length), headers, body);
      return {
        status: blob.status,
        headers: { ...blob.headers, 'content-length': String(blob.body?.byteLength ?? 0) },
        body: blob.body,
      };
    }
    const body = await readBody(req, bodyLimitBytes);
    if (!body) return undefined;
    return handle({
      method,
      path,
      query,
      headers,
      body: body.length > 0 ? body : undefined,
      requestId,
    });
  }

  const server = http.createServer(async (req, res) => {
    // The client's X-Request-Id when valid (Node joins a repeated one with ", ": refused), else a fresh one.
    const requestId = requestIdOf(req.headers[REQUEST_ID]);
    try {
      const reply = await guarded({ requestId }, onError, () => answer(req, requestId));
      if (reply) send(res, reply, requestId, onError);
      else res.destroy();
    } catch {
      // Only `onError` itself throwing gets here: the connection is reset, the process lives on.
      res.destroy();
    }
  });
  server.on('clientError', refuse);
  return server;
}

/**
 * The path (still encoded) and query of an origin-form or absolute-form target (RFC 9112 3.2);
 * `ValidationError` naming `target` for anything else or for an invalid percent-encoding.
 */
function parseTarget(target: string): { path: string; query: Record<string, string> } {
  // URLSearchParams and the router would let a bad escape through; it is refused here, anywhere.
  if (BAD_ESCAPE.test(target)) throw new ValidationError('target', 'invalid percent-encoding');
  if (target.includes('#')) throw new ValidationError('target', 'a request target has no fragment');
  let rest = target;
  const authority = ABSOLUTE.exec(target)?.[0];
  if (authority !== undefined) {
    if (!/^https?:/i.test(target) || !URL.canParse(target))
      throw new ValidationError('target', 'not a valid http(s) URL');
    rest = target.slice(authority.length);
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  // A leading `//` reads as an authority to URL parsers (RFC 3986 4.2): refused rather than guessed.
  if (!rest.startsWith('/') || rest.startsWith('//'))
    throw new ValidationError('target', 'not a path, an absolute http(s) URL or *');
  const mark = rest.indexOf('?');
  return {
    path: mark < 0 ? rest : rest.slice(0, mark),
    query: Object.fromEntries(new URLSearchParams(mark < 0 ? '' : rest.slice(mark + 1))),
  };
}

/**
 * The body, cut to `limit + 1` bytes (it is still read to its end, so a body too large is answered
 * 413, not reset); undefined when the client went away first.
 */
async function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      if (size <= limit) chunks.push(chunk.subarray(0, limit + 1 - size));
      size += chunk.length;
    }
  } catch {
    return undefined;
  }
  return Buffer.concat(chunks);
}

/**
 * Writes an answer, with its `X-Request-Id` (blob transfers and `OPTIONS *` are answered here, not
 * by the router); when Node refuses it (a bad header), the 500 problem instead, or a reset if too late.
 */
function send(res: http.ServerResponse, answer: Answer, requestId: string, onError: OnError): void {
  try {
    const { status, headers } = withRequestId(answer, requestId);
    const { body } = answer;
    res.writeHead(status, headers);
    // A HEAD answer has no body (Node writes none for HEAD, whatever is passed).
    res.end(answer.isBase64Encoded && typeof body === 'string' ? Buffer.from(body, 'base64') : body);
  } catch (error) {
    onError(error, requestId);
    if (res.headersSent) return void res.destroy();
    const internal = withRequestId(toProblem(error, requestId).response, requestId);
    res.writeHead(internal.status, internal.headers).end(internal.body);
  }
}

/** Answers what Node's parser refused (there is no request yet) with a problem, then closes the connection. */
function refuse(error: Error & { code?: string }, socket: Duplex): void {
  // Gone, or an answer already under way on this connection: writing now would corrupt it.
  const inFlight = (socket as { _httpMessage?: http.ServerResponse })._httpMessage?.headersSent;
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight) return void socket.destroy();
  const [status, detail] = PARSE_ERRORS[error.code ?? ''] ?? [400, 'the request is not valid HTTP/1.1'];
  // No request was parsed, so none has an id yet: this answer gets its own.
  const { headers, body = '' } = withRequestId(
    problem('invalid-request', detail, {}, {}, status),
    randomUUID(),
  );
  const head = { ...headers, 'content-length': String(Buffer.byteLength(body)), connection: 'close' };
  const lines = Object.entries(head).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`, () =>
    socket.destroy(),
  );
}
