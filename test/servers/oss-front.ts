/**
 * An Alibaba Cloud OSS protocol front over the local S3 front (and so over s3rver), built from OSS's
 * documented behaviour, so ali-oss is tested for real on 127.0.0.1:
 * - verifies OSS V1 signatures, in the Authorization header (`OSS <ak>:<sig>`) and in presigned URLs
 *   (`OSSAccessKeyId`, `Expires`, `Signature`); a wrong secret, an unknown key, an expired or
 *   tampered URL get 403 as on OSS (https://www.alibabacloud.com/help/en/oss/developer-reference/include-signatures-in-the-authorization-header);
 * - maps `x-oss-*` request headers to S3's and S3's answers back (`x-oss-meta-*`, tags, storage class,
 *   `x-oss-request-id`);
 * - implements `x-oss-forbid-overwrite: true` (409 FileAlreadyExists when the object exists, atomic
 *   through the S3 front's create-only write);
 * - ranged GETs as OSS answers them: passed to the S3 front (which serves them as S3 does) with
 *   `x-oss-range-behavior: standard`; without it, a range reaching past the object (an end or a
 *   suffix past it, a start at or past its size) is ignored: 200 and the whole object, as OSS's
 *   default (https://www.alibabacloud.com/help/en/oss/user-guide/http-status-code-416);
 * - restores (`POST ?restore`) and multipart uploads pass through to the S3 front, which emulates them;
 * - injects faults on demand, as the S3 front does (control API `/__front/faults`, `reset`,
 *   `injected`): 500 InternalError, 503 ServiceUnavailable, latency, connection resets, before or
 *   after the upstream handled the request;
 * - has no compare-and-swap overwrite, like OSS: an `If-Match` on a PUT is ignored, as OSS ignores it;
 * - on demand (`POST /__front/versioning` `{ "status": "Enabled" | "Suspended" | "Off" }`) acts as a
 *   bucket with versioning enabled or suspended, which ignores `x-oss-forbid-overwrite` (OSS's
 *   documentation says so); `reset` turns it off.
 */
import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import { applyFault, FaultRules } from './fault-rules.js';
import {
  close,
  forwardHeaders,
  listen,
  parseTarget,
  readBody,
  request,
  type Upstream,
  xmlEscape,
  xmlValues,
} from './http-util.js';
import { type FaultRule, parseRange, ruleMatches } from './s3-front.js';

/** Query parameters OSS includes in the signed resource. */
const SUBRESOURCES = new Set([
  'acl',
  'append',
  'continuation-token',
  'delete',
  'lifecycle',
  'location',
  'objectMeta',
  'partNumber',
  'position',
  'restore',
  'security-token',
  'symlink',
  'tagging',
  'uploadId',
  'uploads',
  'response-content-type',
  'response-content-disposition',
  'response-cache-control',
  'response-expires',
  'x-oss-process',
]);
const MAX_SKEW_MS = 15 * 60 * 1000;
/** OSS's answers to the injected errors. */
const OSS_FAULTS = {
  '500': ['InternalError', 'We encountered an internal error. Please try again.'],
  '503': ['ServiceUnavailable', 'Please reduce your request rate.'],
  '409': ['OperationConflict', 'A conflicting operation occurred. Retry the request.'],
} as const satisfies Record<string, [string, string]>;

/** A running OSS front. */
export interface OssFront {
  readonly port: number;
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** Starts an OSS front forwarding to the S3 front at `s3Port`, knowing one key pair. */
export async function startOssFront(
  s3Port: number,
  credentials: { accessKeyId: string; accessKeySecret: string },
): Promise<OssFront> {
  const upstream = { host: '127.0.0.1', port: s3Port };
  const faults = new FaultRules<FaultRule>();
  /** The bucket's versioning status: `Off`, or `Enabled` / `Suspended` (forbid-overwrite ignored). */
  let versioning = 'Off';

  const applyOssFault = (rule: FaultRule | undefined, res: http.ServerResponse) =>
    applyFault(rule, res, OSS_FAULTS, sendError);

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (process.env.FRONT_DEBUG) console.error('OSS front error', req.method, req.url, error);
      if (!res.headersSent) sendError(res, 500, 'InternalError', String(error));
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    const method = req.method ?? 'GET';
    if (target.startsWith('/__front/')) {
      const path = target.slice('/__front/'.length);
      const body = await readBody(req);
      if (path === 'faults') faults.add(JSON.parse(body.toString()) as FaultRule);
      else if (path === 'versioning') versioning = (JSON.parse(body.toString()) as { status: string }).status;
      else if (path === 'reset') {
        faults.reset();
        versioning = 'Off';
      } else if (path === 'injected')
        return void res.writeHead(200).end(JSON.stringify({ injected: faults.injected }));
      return void res.writeHead(204).end();
    }
    if (await applyOssFault(faults.take(ruleMatches(req, false)), res)) return void req.resume();
    const { bucket, key, query } = parseTarget(target);
    const denied = authenticate(req, query, method, `/${bucket}/${key}`);
    if (denied) {
      req.resume();
      return sendError(
        res,
        403,
        denied,
        'The request signature we calculated does not match the signature you provided.',
      );
    }
    for (const name of ['OSSAccessKeyId', 'Expires', 'Signature']) query.delete(name);
    const pathname = target.split('?')[0] ?? '/';
    const path = pathname + (query.size > 0 ? `?${query.toString().replace(/=(?=&|$)/g, '')}` : '');

    const headers = forwardHeaders(
      req.headers,
      (h) => h === 'authorization' || (h === 'if-match' && method === 'PUT'),
    );
    for (const [name, value] of Object.entries(headers)) {
      if (!name.startsWith('x-oss-')) continue;
      delete headers[name];
      const rest = name.slice('x-oss-'.length);
      if (rest === 'forbid-overwrite') {
        // A versioned bucket keeps the old object as a version and overwrites.
        if (String(value) === 'true' && versioning === 'Off') headers['if-none-match'] = '*';
      } else if (rest === 'copy-source') {
        headers['x-amz-copy-source'] = value;
      } else if (rest === 'tagging-directive' || rest === 'metadata-directive') {
        headers[`x-amz-${rest}`] = String(value).toUpperCase();
      } else if (rest.startsWith('meta-') || rest === 'tagging' || rest === 'storage-class') {
        headers[`x-amz-${rest}`] = value;
      }
    }
    const body = method === 'GET' || method === 'HEAD' ? undefined : req;
    let up = await request(upstream, method, path, headers, body);
    if (method === 'GET' && headers.range && req.headers['x-oss-range-behavior'] !== 'standard') {
      if (reachesPast(parseRange(String(headers.range)), up)) {
        delete headers.range;
        up = await request(upstream, method, path, headers);
      }
    }
    if (await applyOssFault(faults.take(ruleMatches(req, true)), res)) return;
    if (method === 'POST' && query.has('restore') && up.status === 403) {
      // OSS refuses to restore an object that is not archived with 400, not S3's 403.
      return sendError(
        res,
        400,
        'OperationNotSupported',
        'The operation is not supported for this resource.',
      );
    }
    return answer(res, up, method, headers['if-none-match'] === '*' && method === 'PUT');
  }

  /** Returns an OSS error code when the request is not correctly signed. */
  function authenticate(req: http.IncomingMessage, q: URLSearchParams, method: string, object: string) {
    const presigned = q.has('OSSAccessKeyId');
    let accessKeyId: string;
    let signature: string;
    let date: string;
    if (presigned) {
      accessKeyId = q.get('OSSAccessKeyId') ?? '';
      signature = q.get('Signature') ?? '';
      date = q.get('Expires') ?? '';
      if (!/^\d+$/.test(date) || Number(date) * 1000 < Date.now()) return 'AccessDenied';
    } else {
      const match = /^OSS ([^:]+):(.+)$/.exec(String(req.headers.authorization ?? ''));
      if (!match) return 'AccessDenied';
      accessKeyId = match[1] ?? '';
      signature = match[2] ?? '';
      date = String(req.headers['x-oss-date'] ?? req.headers.date ?? '');
      const at = Date.parse(date);
      if (Number.isNaN(at) || Math.abs(at - Date.now()) > MAX_SKEW_MS) return 'RequestTimeTooSkewed';
    }
    if (accessKeyId !== credentials.accessKeyId) return 'InvalidAccessKeyId';
    const ossHeaders = Object.keys(req.headers)
      .filter((h) => h.startsWith('x-oss-'))
      .sort()
      .map((h) => `${h}:${String(req.headers[h]).trim()}`);
    const subresources = [...q.keys()]
      .filter((k) => SUBRESOURCES.has(k))
      .sort()
      .map((k) => (q.get(k) ? `${k}=${q.get(k)}` : k));
    const resource = object + (subresources.length > 0 ? `?${subresources.join('&')}` : '');
    const canonical = [
      method,
      String(req.headers['content-md5'] ?? ''),
      String(req.headers['content-type'] ?? ''),
      date,
      ...ossHeaders,
      resource,
    ].join('\n');
    const expected = createHmac('sha1', credentials.accessKeySecret)
      .update(canonical, 'utf8')
      .digest('base64');
    return expected === signature ? undefined : 'SignatureDoesNotMatch';
  }

  function answer(res: http.ServerResponse, up: Upstream, method: string, forbidOverwrite: boolean): void {
    if (up.status >= 300) {
      const code = xmlValues(up.body.toString('utf8'), 'Code')[0] ?? 'UnknownError';
      // OSS answers a forbidden overwrite with 409 FileAlreadyExists, not S3's 412.
      if (forbidOverwrite && code === 'PreconditionFailed') {
        sendError(
          res,
          409,
          'FileAlreadyExists',
          'The object you specified already exists and cannot be overwritten.',
        );
        return;
      }
      if (up.body.length === 0) {
        res.writeHead(up.status, { 'x-oss-request-id': randomUUID() }).end();
        return;
      }
      sendError(res, up.status, code, xmlValues(up.body.toString('utf8'), 'Message')[0] ?? '');
      return;
    }
    const headers: http.OutgoingHttpHeaders = { 'x-oss-request-id': randomUUID() };
    for (const [name, value] of Object.entries(up.headers)) {
      if (name === 'transfer-encoding' || name === 'connection') continue;
      headers[name.startsWith('x-amz-') ? `x-oss-${name.slice('x-amz-'.length)}` : name] = value;
    }
    // A HEAD answer keeps the object's length; its body is empty.
    if (method !== 'HEAD') headers['content-length'] = String(up.body.length);
    res.writeHead(up.status, headers).end(up.body);
  }

  const port = await listen(server);
  return { port, endpoint: `http://localhost:${port}`, stop: () => close(server) };
}

/** Whether a ranged answer shows the range reaching past the object (OSS's default then ignores it). */
function reachesPast(range: ReturnType<typeof parseRange>, up: Upstream): boolean {
  if (!range || up.status === 416) return up.status === 416;
  const size = Number(/\/(\d+)$/.exec(String(up.headers['content-range'] ?? ''))?.[1] ?? Number.NaN);
  if (up.status !== 206 || Number.isNaN(size)) return false;
  return range.suffix !== undefined ? range.suffix > size : range.end !== undefined && range.end >= size;
}

function sendError(res: http.ServerResponse, status: number, code: string, message: string): void {
  const requestId = randomUUID();
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message><RequestId>${requestId}</RequestId><HostId>localhost</HostId></Error>`,
  );
  res
    .writeHead(status, {
      'content-type': 'application/xml',
      'content-length': body.length,
      'x-oss-request-id': requestId,
    })
    .end(body);
}
