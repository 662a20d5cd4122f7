/**
 * Compressed answers (node:zlib): gzip or brotli when the request's Accept-Encoding asks for one
 * (q-values honoured; brotli when both are equally acceptable) and the body is over 1 KB. Only the
 * answers of GET routes are compressed, and of those only a 2xx with a body not already encoded
 * (never a 204, a 304, a problem or a HEAD answer), and only when it gets smaller even in base64.
 * The ETag stays what it is (the version of the value, not of its bytes: If-None-Match compares
 * weakly). Every answer of a GET route says `Vary: Accept-Encoding`, compressed or not. A
 * compressed body travels base64-encoded (`isBase64Encoded`), as API Gateway and Function Compute
 * take binary bodies; the local server writes the bytes.
 */
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { HttpResponse } from './types.js';

/** Bodies of at most this many bytes are sent as they are. */
export const COMPRESS_MIN_BYTES = 1024;

/** The content codings the API answers with. */
export type AnswerEncoding = 'br' | 'gzip';

/**
 * Brotli's quality for answers made on the fly: 11 (zlib's default) takes many times longer for a
 * few percent less on JSON; 5 is still smaller than gzip's default.
 */
const BROTLI_QUALITY = 5;
const GZIP_LEVEL = 6;

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/** Adds `token` to a `Vary` header (case-insensitive, once). */
export function addVary(headers: Record<string, string>, token: string): Record<string, string> {
  const present = (headers.vary ?? '').split(',').map((t) => t.trim().toLowerCase());
  if (present.includes(token.toLowerCase()) || present.includes('*')) return headers;
  return { ...headers, vary: headers.vary ? `${headers.vary}, ${token}` : token };
}

/** A q-value (RFC 9110 12.4.2): 0 to 1, at most three decimals. */
const QVALUE = /^q\s*=\s*(0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/i;

/** The q-value of each coding an Accept-Encoding names (lower case; x-gzip is gzip); malformed elements are skipped. */
function qualities(header: string): Map<string, number> {
  const q = new Map<string, number>();
  for (const element of header.split(',')) {
    const [name = '', ...params] = element.split(';').map((part) => part.trim());
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) continue;
    let value = 1;
    let valid = true;
    for (const param of params) {
      if (!/^q\s*=/i.test(param)) continue;
      const match = QVALUE.exec(param);
      if (match) value = Number(match[1]);
      else valid = false;
    }
    if (!valid) continue;
    const coding = name.toLowerCase() === 'x-gzip' ? 'gzip' : name.toLowerCase();
    q.set(coding, Math.max(q.get(coding) ?? 0, value));
  }
  return q;
}

/**
 * The coding to answer with for an Accept-Encoding, or none: the acceptable one (q > 0) of br and
 * gzip with the higher q (`*` stands for a coding not named), br when they tie; none when neither
 * is acceptable or `identity` is named with a higher q.
 */
export function negotiateEncoding(acceptEncoding: string | undefined): AnswerEncoding | undefined {
  if (!acceptEncoding) return undefined;
  const q = qualities(acceptEncoding);
  const star = q.get('*');
  const of = (coding: string) => q.get(coding) ?? star ?? 0;
  const [br, gz] = [of('br'), of('gzip')];
  const best: AnswerEncoding | undefined = br > 0 && br >= gz ? 'br' : gz > 0 ? 'gzip' : undefined;
  if (!best) return undefined;
  // Identity is acceptable unless excluded, but preferred only when the client says so.
  const identity = q.get('identity') ?? 0;
  return identity > Math.max(br, gz) ? undefined : best;
}

/**
 * The answer of a GET route as sent: `Vary: Accept-Encoding`, and the body compressed when the
 * request accepts br or gzip and the answer may be (see the module's comment). `method` is the
 * request's (a HEAD is answered as a GET, but never compressed).
 */
export async function negotiated(
  method: string,
  acceptEncoding: string | undefined,
  response: HttpResponse,
): Promise<HttpResponse> {
  const headers = addVary(response.headers, 'Accept-Encoding');
  const { status, body } = response;
  const compressible =
    method.toUpperCase() === 'GET' &&
    status >= 200 &&
    status < 300 &&
    status !== 204 &&
    body !== undefined &&
    !response.isBase64Encoded &&
    headers['content-encoding'] === undefined &&
    Buffer.byteLength(body) > COMPRESS_MIN_BYTES;
  const encoding = compressible ? negotiateEncoding(acceptEncoding) : undefined;
  if (!encoding || body === undefined) return { ...response, headers };
  const bytes = Buffer.from(body);
  const compressed =
    encoding === 'br'
      ? await brotli(bytes, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
            [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
          },
        })
      : await gzipped(bytes, { level: GZIP_LEVEL });
  // Base64 adds a third: an answer that would not get smaller on the platforms' wire goes as it is.
  if (Math.ceil(compressed.byteLength / 3) * 4 >= bytes.byteLength) return { ...response, headers };
  return {
    ...response,
    headers: { ...headers, 'content-encoding': encoding },
    body: compressed.toString('base64'),
    isBase64Encoded: true,
  };
}
