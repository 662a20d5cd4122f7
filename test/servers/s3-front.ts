/**
 * A front for s3rver that adds what s3rver lacks and S3 documents, so the s3 driver is tested
 * against S3's behaviour rather than s3rver's gaps:
 * - conditional PutObject, GetObject and DeleteObject (`If-None-Match: *`: 412 when the key exists;
 *   `If-Match`: 412 when the etag differs, 404 when the key is missing), serialised per key so that
 *   exactly one of many concurrent conditional writers wins, and reads never see a half-written
 *   object (s3rver rewrites files in place);
 * - ranged GETs (`Range: bytes=a-b`, `bytes=a-`, `bytes=-n`) served by the front from the whole
 *   object, since s3rver 3.7.1 gets suffix and one-byte ranges wrong: 206 with `Content-Range`, or
 *   416 InvalidRange;
 * - object tags (`x-amz-tagging`, `?tagging`, `x-amz-tagging-count`) and storage classes, which
 *   s3rver drops;
 * - bucket lifecycle configurations stored and returned (s3rver answers 501);
 * - `Content-MD5` and `x-amz-checksum-sha256` checked on PutObject and UploadPart (400 BadDigest);
 * - presigned URLs (`X-Amz-Signature` in the query) verified as S3 does, SigV4 with s3rver's key
 *   pair: a signed header sent with another value or not at all (a `Content-MD5` the URL signs),
 *   a changed query, or an expired URL gets 403 (s3rver checks no signature);
 *   ListParts and AbortMultipartUpload (s3rver has neither); tags and storage class of multipart
 *   uploads; the storage class in listings;
 * - archive classes (GLACIER, DEEP_ARCHIVE, and OSS's Archive ones through the OSS front): a GET
 *   answers 403 InvalidObjectState until RestoreObject (`POST ?restore`: 202, then 409
 *   RestoreAlreadyInProgress, then 200) has finished, after `restore-delay` ms (default 300);
 *   HEAD reports `x-amz-restore`;
 * - on demand: per-key errors in DeleteObjects, and faults (HTTP 500, 503 SlowDown, latency,
 *   connection resets) for the reliability tests; and a mode that ignores `If-Match` /
 *   `If-None-Match` on writes, as a proxy that drops them would (for the backend probe's tests).
 *
 * Control API (JSON, under `/__front/`): `POST faults` adds a rule, `POST delete-failures` makes
 * DeleteObjects fail keys containing a text, `POST reset` clears both, `GET requests` lists what
 * was received (method, path, bytes), `POST restore-delay` (`{ ms }`) sets how long a restore takes,
 * `POST conditions` (`{ ignore: ['if-match', 'if-none-match'], except? }`) ignores those write
 * conditions (but on keys containing `except`) until `reset`, `POST non-atomic` (`{ holdMs }`)
 * checks a PUT's condition with a HEAD, waits `holdMs`, then writes unconditionally, outside the
 * key's lock (a backend that evaluates conditions without atomicity).
 */
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import { compareKeys, KeyedMutex, pageOf, resolveRange } from '../../lib/drivers/common.js';
import { InvalidArgumentError } from '../../lib/drivers/errors.js';
import type { ByteRange, ObjectListPage } from '../../lib/drivers/types.js';
import { applyFault, FaultRules, type StoreFault } from './fault-rules.js';
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

/** A fault the front injects into matching requests. */
export interface FaultRule extends StoreFault {
  /**
   * `500`, `503` (SlowDown), `409` (ConditionalRequestConflict), `latency` (then the request
   * proceeds), `reset` (socket destroyed).
   */
  kind: '500' | '503' | '409' | 'latency' | 'reset';
  /** Only requests with this method (default any). */
  method?: string;
  /** Only requests whose path and query contain this text (default any). */
  match?: string;
  /** How many requests to hit; default 1. */
  times?: number;
  /** Latency in ms; default 200. */
  ms?: number;
  /** Inject after the upstream handled the request (the write happened, the answer is lost). */
  after?: boolean;
  /** Hit each matching request with this probability until reset (then `times` is ignored). */
  probability?: number;
}

/** S3's answers to the injected errors. */
const S3_FAULTS = {
  '500': ['InternalError', 'We encountered an internal error.'],
  '503': ['SlowDown', 'Please reduce your request rate.'],
  '409': ['ConditionalRequestConflict', 'A conflicting operation occurred. Retry the request.'],
} as const satisfies Record<string, [string, string]>;

/** Whether a rule applies to a request, before or after the upstream handled it. */
export const ruleMatches = (req: http.IncomingMessage, after: boolean) => (f: FaultRule) =>
  Boolean(f.after) === after &&
  (!f.method || f.method === req.method) &&
  (!f.match || (req.url ?? '').includes(f.match));

interface ObjectExtras {
  tags: string;
  storageClass: string;
  /** When a restore was asked for, the time its copy is readable. */
  restoredAt?: number;
}

/** Classes whose objects must be restored before a GET (S3's and OSS's). */
const ARCHIVE_CLASSES = new Set(['GLACIER', 'DEEP_ARCHIVE', 'Archive', 'ColdArchive', 'DeepColdArchive']);

interface Upload {
  id: string;
  extras: ObjectExtras;
  parts: Map<number, { etag: string; size: number }>;
}

/** A running front. */
export interface S3Front {
  readonly port: number;
  readonly endpoint: string;
  stop(): Promise<void>;
}

/** Starts a front on 127.0.0.1 forwarding to s3rver at `upstreamPort`. */
export async function startS3Front(upstreamPort: number): Promise<S3Front> {
  const upstream = { host: '127.0.0.1', port: upstreamPort };
  const extras = new Map<string, ObjectExtras>();
  const lifecycles = new Map<string, Buffer>();
  const mutex = new KeyedMutex();
  const faults = new FaultRules<FaultRule>();
  let deleteFailures: string[] = [];
  let received: Array<{ method: string; path: string; bytes: number }> = [];
  let restoreDelayMs = 300;
  /** Write conditions ignored, as a proxy that drops them would (`if-match`, `if-none-match`). */
  let ignoredConditions = new Set<string>();
  /** Keys whose conditions are honoured all the same (a proxy that spares what looks like a probe). */
  let sparedKeys: string | undefined;
  /**
   * A front that checks a write's condition itself with a HEAD, holds this long, then writes
   * unconditionally, outside the key's lock: evaluation without atomicity (undefined: atomic).
   */
  let nonAtomicHoldMs: number | undefined;
  const uploads = new Map<string, Upload>();

  function takeFault(req: http.IncomingMessage, after: boolean): FaultRule | undefined {
    return faults.take(ruleMatches(req, after));
  }

  const applyS3Fault = (rule: FaultRule | undefined, res: http.ServerResponse) =>
    applyFault(rule, res, S3_FAULTS, sendError);

  const server = http.createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (process.env.FRONT_DEBUG) console.error('S3 front error', req.method, req.url, error);
      if (!res.headersSent) sendError(res, 500, 'InternalError', String(error));
      else res.destroy();
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const target = req.url ?? '/';
    if (target.startsWith('/__front/'))
      return control(target.slice('/__front/'.length).split('?')[0] ?? '', req, res);
    received.push({
      method: req.method ?? '',
      path: req.url ?? '',
      bytes: Number(req.headers['content-length'] ?? 0),
    });
    if (await applyS3Fault(takeFault(req, false), res)) return;

    const refused = presignedRefusal(req.method ?? 'GET', target, req.headers);
    if (refused) {
      req.resume();
      return sendError(res, 403, refused.code, refused.message);
    }

    const { bucket, key, query: q } = parseTarget(target);
    const id = `${bucket}/${key}`;
    const method = req.method ?? 'GET';

    if (!key) {
      if (q.has('lifecycle')) return lifecycle(bucket, method, req, res);
      if (method === 'POST' && q.has('delete')) return deleteObjects(bucket, req, res);
      if (method === 'GET' && q.get('list-type') === '2') return listObjects(bucket, q, req, res);
      return proxy(req, res);
    }
    if (q.has('tagging')) return tagging(id, method, req, res);
    if (q.has('restore') && method === 'POST') return mutex.run(id, () => restore(id, req, res));
    if (q.has('uploads') || q.has('uploadId')) return multipart(id, method, q, req, res);
    if (method === 'PUT' && req.headers['x-amz-copy-source'])
      return mutex.run(id, () => copyObject(id, req, res));
    if (method === 'PUT' && nonAtomicHoldMs !== undefined) return putObject(id, req, res, nonAtomicHoldMs);
    if (method === 'PUT') return mutex.run(id, () => putObject(id, req, res));
    if (method === 'DELETE') return mutex.run(id, () => deleteObject(id, req, res));
    // s3rver replaces files in place: a read racing a write of the same key can break off. S3's
    // replace is atomic, so reads wait for the key's writes here.
    return mutex.run(id, () => getObject(id, req, res));
  }

  async function control(path: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = req.method === 'POST' ? JSON.parse((await readBody(req)).toString() || '{}') : undefined;
    if (path === 'faults') faults.add(body as FaultRule);
    else if (path === 'delete-failures') deleteFailures.push(...(body as { match: string[] }).match);
    else if (path === 'restore-delay') restoreDelayMs = (body as { ms: number }).ms;
    else if (path === 'conditions') {
      ignoredConditions = new Set((body as { ignore: string[] }).ignore);
      sparedKeys = (body as { except?: string }).except;
    } else if (path === 'non-atomic') nonAtomicHoldMs = (body as { holdMs: number }).holdMs;
    else if (path === 'reset') {
      ignoredConditions = new Set();
      sparedKeys = undefined;
      nonAtomicHoldMs = undefined;
      faults.reset();
      deleteFailures = [];
      received = [];
    } else if (path === 'requests') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received));
      return;
    } else if (path === 'injected') {
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ injected: faults.injected }));
      return;
    } else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(204).end();
  }

  async function headUpstream(id: string): Promise<Upstream> {
    return request(upstream, 'HEAD', `/${encodePath(id)}`, {});
  }

  /**
   * s3rver 3.7.1 answers a PutObject (and a copy, and a multipart completion) before its write of
   * the file has finished (it does not wait for the write stream), and serves an object's size as
   * the file's size at read time: a GET right after the answer can get the object empty or cut
   * short. With the key's lock still held, wait until the file has its whole size (a HEAD is a stat).
   */
  async function settled(id: string, size: number): Promise<void> {
    for (let attempt = 0; attempt < 1000; attempt++) {
      const head = await headUpstream(id);
      if (head.status !== 200 || Number(head.headers['content-length']) === size) return;
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Evaluates If-Match / If-None-Match against the current object; answers and returns false on failure. */
  async function conditionHolds(id: string, headers: http.IncomingHttpHeaders, res: http.ServerResponse) {
    const spared = sparedKeys !== undefined && id.includes(sparedKeys);
    const ifMatch = ignoredConditions.has('if-match') && !spared ? undefined : headers['if-match'];
    const ifNoneMatch =
      ignoredConditions.has('if-none-match') && !spared ? undefined : headers['if-none-match'];
    if (!ifMatch && !ifNoneMatch) return true;
    const current = await headUpstream(id);
    const exists = current.status === 200;
    const etag = bare(String(current.headers.etag ?? ''));
    if (ifNoneMatch === '*' && exists) {
      sendError(
        res,
        412,
        'PreconditionFailed',
        'At least one of the pre-conditions you specified did not hold',
      );
      return false;
    }
    if (ifMatch) {
      if (!exists) {
        sendError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
        return false;
      }
      if (bare(ifMatch) !== etag) {
        sendError(
          res,
          412,
          'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold',
        );
        return false;
      }
    }
    return true;
  }

  async function putObject(
    id: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
    holdMs?: number,
  ): Promise<void> {
    if (!(await conditionHolds(id, req.headers, res))) {
      req.resume();
      return;
    }
    if (holdMs !== undefined) await new Promise((resolve) => setTimeout(resolve, holdMs));
    const body = await checkedBody(req, res);
    if (!body) return;
    const up = await request(upstream, 'PUT', req.url ?? '', forwardHeaders(req.headers, dropped), body);
    if (up.status === 200) {
      await settled(id, body.length);
      extras.set(id, extrasOf(req.headers));
    }
    await answer(req, res, up);
  }

  /** The body, when its Content-MD5 and x-amz-checksum-sha256 (if sent) match; else answers 400. */
  async function checkedBody(
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<Buffer | undefined> {
    const body = await readBody(req);
    const md5 = req.headers['content-md5'];
    const sha256 = req.headers['x-amz-checksum-sha256'];
    if (md5 !== undefined && createHash('md5').update(body).digest('base64') !== md5) {
      sendError(res, 400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');
      return undefined;
    }
    if (sha256 !== undefined && createHash('sha256').update(body).digest('base64') !== sha256) {
      sendError(res, 400, 'BadDigest', 'The SHA256 you specified did not match the calculated checksum.');
      return undefined;
    }
    return body;
  }

  /**
   * Multipart uploads: s3rver stores parts and assembles them; the front keeps each upload's parts
   * (for ListParts and the etag check of Complete), tags and storage class.
   */
  async function multipart(
    id: string,
    method: string,
    q: URLSearchParams,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    if (method === 'POST' && q.has('uploads')) {
      const up = await request(upstream, 'POST', req.url ?? '', forwardHeaders(req.headers, dropped), req);
      const uploadId = xmlValues(up.body.toString('utf8'), 'UploadId')[0];
      if (up.status === 200 && uploadId)
        uploads.set(uploadId, { id, extras: extrasOf(req.headers), parts: new Map() });
      return answer(req, res, up);
    }
    const uploadId = q.get('uploadId') ?? '';
    const upload = uploads.get(uploadId);
    if (!upload || upload.id !== id) {
      req.resume();
      return sendError(res, 404, 'NoSuchUpload', 'The specified upload does not exist.');
    }
    if (method === 'PUT') {
      const body = await checkedBody(req, res);
      if (!body) return;
      const up = await request(upstream, 'PUT', req.url ?? '', forwardHeaders(req.headers, dropped), body);
      if (up.status === 200) {
        const etag = createHash('md5').update(body).digest('hex');
        upload.parts.set(Number(q.get('partNumber')), { etag, size: body.length });
      }
      return answer(req, res, up);
    }
    if (method === 'GET') {
      const parts = [...upload.parts.entries()]
        .sort(([a], [b]) => a - b)
        .map(
          ([n, p]) =>
            `<Part><PartNumber>${n}</PartNumber><ETag>"${p.etag}"</ETag><Size>${p.size}</Size></Part>`,
        )
        .join('');
      return sendXml(
        res,
        200,
        `<ListPartsResult><UploadId>${uploadId}</UploadId><IsTruncated>false</IsTruncated>${parts}</ListPartsResult>`,
      );
    }
    if (method === 'DELETE') {
      uploads.delete(uploadId);
      return void res.writeHead(204).end();
    }
    // Complete: every named part must exist with that etag (S3's InvalidPart).
    const xml = (await readBody(req)).toString('utf8');
    const numbers = xmlValues(xml, 'PartNumber').map(Number);
    const etags = xmlValues(xml, 'ETag').map(bare);
    if (numbers.some((n, i) => upload.parts.get(n)?.etag !== etags[i]?.toLowerCase())) {
      return sendError(res, 400, 'InvalidPart', 'One or more of the specified parts could not be found.');
    }
    const size = numbers.reduce((total, n) => total + (upload.parts.get(n)?.size ?? 0), 0);
    const up = await mutex.run(id, async () => {
      const done = await request(
        upstream,
        'POST',
        req.url ?? '',
        forwardHeaders(req.headers),
        Buffer.from(xml),
      );
      if (done.status === 200) await settled(id, size);
      return done;
    });
    if (up.status === 200) {
      extras.set(id, upload.extras);
      uploads.delete(uploadId);
    }
    return answer(req, res, up);
  }

  /** RestoreObject on an archived object: 202 (started), 409 (running), 200 (done). */
  async function restore(id: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    req.resume();
    const current = await headUpstream(id);
    if (current.status !== 200) return sendError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
    const extra = extras.get(id);
    if (!extra || !ARCHIVE_CLASSES.has(extra.storageClass)) {
      return sendError(
        res,
        403,
        'InvalidObjectState',
        "Restore is not allowed for the object's current storage class.",
      );
    }
    if (extra.restoredAt === undefined) {
      extra.restoredAt = Date.now() + restoreDelayMs;
      return void res.writeHead(202).end();
    }
    if (extra.restoredAt > Date.now()) {
      return sendError(res, 409, 'RestoreAlreadyInProgress', 'Object restore is already in progress');
    }
    res.writeHead(200).end();
  }

  /**
   * ListObjectsV2, with the storage class the front knows instead of s3rver's STANDARD. With a
   * delimiter the front groups the names itself (s3rver answers a delimited listing of names
   * deeper than one level with no common prefixes): it reads every name under the prefix flat and
   * pages them as the in-process drivers do (`pageOf`: its cursor, the base64url of the last key
   * or prefix returned, is the front's continuation token).
   */
  async function listObjects(
    bucket: string,
    query: URLSearchParams,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ) {
    const withClass = (inner: string) => {
      const key = xmlValues(inner, 'Key')[0] ?? '';
      const storageClass = extras.get(`${bucket}/${key}`)?.storageClass ?? 'STANDARD';
      return inner.replace(
        /<StorageClass>[^<]*<\/StorageClass>/,
        `<StorageClass>${storageClass}</StorageClass>`,
      );
    };
    const delimiter = query.get('delimiter') || undefined;
    if (delimiter === undefined) {
      const up = await request(upstream, 'GET', req.url ?? '', forwardHeaders(req.headers));
      const xml = up.body
        .toString('utf8')
        .replace(
          /<Contents>([\s\S]*?)<\/Contents>/g,
          (_: string, inner: string) => `<Contents>${withClass(inner)}</Contents>`,
        );
      return answer(req, res, { ...up, body: Buffer.from(xml) });
    }
    const prefix = query.get('prefix') ?? '';
    const contents = new Map<string, string>();
    let token: string | undefined;
    do {
      const q = new URLSearchParams({ 'list-type': '2', 'max-keys': '1000' });
      if (prefix) q.set('prefix', prefix);
      if (token) q.set('continuation-token', token);
      const up = await request(upstream, 'GET', `/${encodeURIComponent(bucket)}?${q}`, {});
      if (up.status !== 200) return answer(req, res, up);
      const xml = up.body.toString('utf8');
      for (const [, inner = ''] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g))
        contents.set(xmlValues(inner, 'Key')[0] ?? '', inner);
      token =
        xmlValues(xml, 'IsTruncated')[0] === 'true' ? xmlValues(xml, 'NextContinuationToken')[0] : undefined;
    } while (token);
    const names = [...contents.keys()].sort(compareKeys);
    const startAfter = query.get('start-after') || undefined;
    const cursor = query.get('continuation-token') ?? undefined;
    let page: ObjectListPage;
    try {
      page = pageOf(
        names.map((key) => ({ key, etag: '', size: 0, lastModified: new Date(0), storageClass: '' })),
        {
          prefix,
          delimiter,
          startAfter,
          cursor,
          limit: Math.min(1000, Number(query.get('max-keys') ?? 1000) || 1000),
        },
        's3-front',
      );
    } catch (error) {
      if (!(error instanceof InvalidArgumentError)) throw error;
      return sendError(res, 400, 'InvalidArgument', 'The continuation token provided is incorrect');
    }
    const opt = (tag: string, value: string | undefined) =>
      value ? `<${tag}>${xmlEscape(value)}</${tag}>` : '';
    req.resume();
    // Through `answer`, as a listing s3rver made: a fault set for after the request applies too.
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${xmlEscape(bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix>${opt('StartAfter', startAfter)}${opt('ContinuationToken', cursor)}<KeyCount>${page.objects.length + page.prefixes.length}</KeyCount><MaxKeys>${query.get('max-keys') ?? 1000}</MaxKeys>${opt('Delimiter', delimiter)}<IsTruncated>${page.nextCursor !== undefined}</IsTruncated>${opt('NextContinuationToken', page.nextCursor)}${page.objects.map((o) => `<Contents>${withClass(contents.get(o.key) ?? '')}</Contents>`).join('')}${page.prefixes.map((p) => `<CommonPrefixes><Prefix>${xmlEscape(p)}</Prefix></CommonPrefixes>`).join('')}</ListBucketResult>`;
    await answer(req, res, {
      status: 200,
      headers: { 'content-type': 'application/xml' },
      body: Buffer.from(xml),
    });
  }

  /** s3rver cannot copy keys holding reserved characters (it only decodeURIs the source): copy by GET + PUT. */
  async function copyObject(id: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const raw = String(req.headers['x-amz-copy-source']);
    const { bucket, key } = parseTarget(raw.startsWith('/') ? raw : `/${raw}`);
    const source = `${bucket}/${key}`;
    const from = await request(upstream, 'GET', `/${encodePath(source)}`, {});
    if (from.status !== 200) return answer(req, res, from);
    const replace = String(req.headers['x-amz-metadata-directive'] ?? 'COPY').toUpperCase() === 'REPLACE';
    const headers: http.OutgoingHttpHeaders = { 'content-length': from.body.length };
    const metaSource = replace ? req.headers : from.headers;
    for (const [name, value] of Object.entries(metaSource))
      if (name.startsWith('x-amz-meta-')) headers[name] = value;
    headers['content-type'] =
      (replace ? req.headers['content-type'] : undefined) ?? from.headers['content-type'];
    const encoding = replace ? req.headers['content-encoding'] : from.headers['content-encoding'];
    if (encoding) headers['content-encoding'] = encoding;
    const up = await request(upstream, 'PUT', `/${encodePath(id)}`, headers, from.body);
    if (up.status !== 200) return answer(req, res, up);
    await settled(id, from.body.length);
    const tagsReplaced = String(req.headers['x-amz-tagging-directive'] ?? 'COPY').toUpperCase() === 'REPLACE';
    extras.set(id, {
      tags: tagsReplaced ? String(req.headers['x-amz-tagging'] ?? '') : (extras.get(source)?.tags ?? ''),
      storageClass: String(req.headers['x-amz-storage-class'] ?? 'STANDARD'),
    });
    const etag = String(up.headers.etag ?? '');
    sendXml(
      res,
      200,
      `<CopyObjectResult><LastModified>${new Date().toISOString()}</LastModified><ETag>${xmlEscape(etag)}</ETag></CopyObjectResult>`,
    );
  }

  async function getObject(id: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (req.headers['if-match'] && !(await conditionHolds(id, { 'if-match': req.headers['if-match'] }, res)))
      return;
    const archived = extras.get(id);
    const restored = archived?.restoredAt !== undefined && archived.restoredAt <= Date.now();
    if (req.method === 'GET' && archived && ARCHIVE_CLASSES.has(archived.storageClass) && !restored) {
      return sendError(
        res,
        403,
        'InvalidObjectState',
        "The operation is not valid for the object's storage class",
      );
    }
    const range = req.method === 'GET' ? parseRange(req.headers.range) : undefined;
    if (range) return rangedGet(id, range, req, res);
    await new Promise<void>((resolve, reject) => {
      const up = http.request(
        {
          ...upstream,
          method: req.method,
          path: req.url,
          headers: forwardHeaders(req.headers, (h) => h === 'if-match' || h === 'range'),
        },
        (upRes) => {
          const headers = { ...upRes.headers };
          if (upRes.statusCode === 200) decorate(id, headers);
          res.writeHead(upRes.statusCode ?? 500, headers);
          upRes.pipe(res);
          upRes.on('end', resolve);
          upRes.on('error', reject);
        },
      );
      up.on('error', reject);
      up.end();
    });
  }

  /** The headers of the object's extras (tag count, storage class, restore) added to a GET's answer. */
  function decorate(id: string, headers: http.OutgoingHttpHeaders): void {
    const extra = extras.get(id);
    const count = extra?.tags ? new URLSearchParams(extra.tags).size : 0;
    if (count > 0) headers['x-amz-tagging-count'] = String(count);
    if (extra && extra.storageClass !== 'STANDARD') headers['x-amz-storage-class'] = extra.storageClass;
    if (extra?.restoredAt !== undefined) {
      headers['x-amz-restore'] =
        extra.restoredAt > Date.now()
          ? 'ongoing-request="true"'
          : `ongoing-request="false", expiry-date="${new Date(extra.restoredAt + 86_400_000).toUTCString()}"`;
    }
  }

  /**
   * A GET with a Range, served here: s3rver 3.7.1 answers `bytes=-10` with the first 11 bytes and
   * `bytes=0-0` with the whole object. The object is read whole from s3rver (the key's lock is held)
   * and sliced as S3 does: 206 with `Content-Range: bytes a-b/size`, an end past the object clipped,
   * a suffix longer than it giving all of it; 416 InvalidRange (`Content-Range: bytes *\/size`) when
   * the start is at or past the size or the object is empty.
   */
  async function rangedGet(
    id: string,
    range: ByteRange,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const up = await request(
      upstream,
      'GET',
      req.url ?? '',
      forwardHeaders(req.headers, (h) => h === 'if-match' || h === 'range'),
    );
    if (up.status !== 200) return answer(req, res, up);
    const size = up.body.length;
    let selected: { start: number; end: number };
    try {
      selected = resolveRange(range, size, id, 's3-front');
    } catch {
      const body = Buffer.from(
        `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message><RangeRequested>${xmlEscape(String(req.headers.range))}</RangeRequested><ActualObjectSize>${size}</ActualObjectSize><RequestId>front</RequestId></Error>`,
      );
      res
        .writeHead(416, {
          'content-type': 'application/xml',
          'content-length': body.length,
          'content-range': `bytes */${size}`,
        })
        .end(body);
      return;
    }
    const headers: http.OutgoingHttpHeaders = { ...up.headers };
    delete headers['transfer-encoding'];
    decorate(id, headers);
    const body = up.body.subarray(selected.start, selected.end + 1);
    headers['content-range'] = `bytes ${selected.start}-${selected.end}/${size}`;
    headers['content-length'] = String(body.length);
    headers['accept-ranges'] = 'bytes';
    res.writeHead(206, headers).end(body);
  }

  async function deleteObject(
    id: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    if (req.headers['if-match']) {
      const current = await headUpstream(id);
      if (
        current.status !== 200 ||
        bare(String(current.headers.etag ?? '')) !== bare(String(req.headers['if-match']))
      ) {
        sendError(
          res,
          412,
          'PreconditionFailed',
          'At least one of the pre-conditions you specified did not hold',
        );
        return;
      }
    }
    const up = await request(
      upstream,
      'DELETE',
      req.url ?? '',
      forwardHeaders(req.headers, (h) => h.startsWith('if-')),
    );
    if (up.status < 300) extras.delete(id);
    await answer(req, res, up);
  }

  /**
   * DeleteObjects, done key by key: s3rver deletes a batch in parallel and its folder clean-up races
   * itself (500 InternalError). Keys named by `delete-failures` are refused with AccessDenied.
   */
  async function deleteObjects(
    bucket: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const xml = (await readBody(req)).toString('utf8');
    const quiet = /<Quiet>true<\/Quiet>/.test(xml);
    let result = '';
    for (const key of xmlValues(xml, 'Key')) {
      if (deleteFailures.some((m) => key.includes(m))) {
        result += `<Error><Key>${xmlEscape(key)}</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`;
        continue;
      }
      const id = `${bucket}/${key}`;
      const up = await mutex.run(id, () => request(upstream, 'DELETE', `/${encodePath(id)}`, {}));
      if (up.status < 300) {
        extras.delete(id);
        if (!quiet) result += `<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`;
      } else {
        const code = xmlValues(up.body.toString('utf8'), 'Code')[0] ?? 'InternalError';
        result += `<Error><Key>${xmlEscape(key)}</Key><Code>${code}</Code><Message>delete failed</Message></Error>`;
      }
    }
    sendXml(
      res,
      200,
      `<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${result}</DeleteResult>`,
    );
  }

  async function tagging(id: string, method: string, req: http.IncomingMessage, res: http.ServerResponse) {
    const body = await readBody(req);
    const current = await headUpstream(id);
    if (current.status !== 200) return sendError(res, 404, 'NoSuchKey', 'The specified key does not exist.');
    const extra = extras.get(id) ?? { tags: '', storageClass: 'STANDARD' };
    if (method === 'GET') {
      const set = [...new URLSearchParams(extra.tags)]
        .map(([k, v]) => `<Tag><Key>${xmlEscape(k)}</Key><Value>${xmlEscape(v)}</Value></Tag>`)
        .join('');
      return sendXml(res, 200, `<Tagging><TagSet>${set}</TagSet></Tagging>`);
    }
    const xml = body.toString('utf8');
    const keys = xmlValues(xml, 'Key');
    const values = xmlValues(xml, 'Value');
    const tags =
      method === 'PUT'
        ? new URLSearchParams(keys.map((k, i): [string, string] => [k, values[i] ?? ''])).toString()
        : '';
    extras.set(id, { ...extra, tags });
    res.writeHead(method === 'PUT' ? 200 : 204).end();
  }

  async function lifecycle(
    bucket: string,
    method: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ) {
    const body = await readBody(req);
    if (method === 'PUT') lifecycles.set(bucket, body);
    if (method === 'DELETE') lifecycles.delete(bucket);
    if (method !== 'GET') return void res.writeHead(method === 'PUT' ? 200 : 204).end();
    const stored = lifecycles.get(bucket);
    if (!stored)
      return sendError(
        res,
        404,
        'NoSuchLifecycleConfiguration',
        'The lifecycle configuration does not exist',
      );
    sendXml(res, 200, stored.toString('utf8'));
  }

  async function proxy(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const up = await request(upstream, req.method ?? 'GET', req.url ?? '', forwardHeaders(req.headers), req);
    await answer(req, res, up);
  }

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, up: Upstream): Promise<void> {
    if (await applyS3Fault(takeFault(req, true), res)) return;
    const headers = { ...up.headers };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(up.body.length);
    res.writeHead(up.status, headers).end(up.body);
  }

  const port = await listen(server);
  return { port, endpoint: `http://127.0.0.1:${port}`, stop: () => close(server) };
}

/** Headers the front keeps itself instead of passing them to s3rver. */
const dropped = (h: string) =>
  h.startsWith('if-') ||
  h === 'x-amz-tagging' ||
  h === 'x-amz-storage-class' ||
  h.startsWith('x-amz-checksum');

/**
 * One byte range of a `Range` header (`bytes=a-b`, `bytes=a-`, `bytes=-n`); undefined for anything
 * else, which S3 ignores (the whole object, 200), as it does a second range.
 */
export function parseRange(header: string | undefined): ByteRange | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec((header ?? '').trim());
  if (!match) return undefined;
  const [, first = '', last = ''] = match;
  if (first === '' && last === '') return undefined;
  if (first === '') return { suffix: Number(last) };
  if (last === '') return { start: Number(first) };
  if (Number(last) < Number(first)) return undefined;
  return { start: Number(first), end: Number(last) };
}

function extrasOf(headers: http.IncomingHttpHeaders): ObjectExtras {
  return {
    tags: String(headers['x-amz-tagging'] ?? ''),
    storageClass: String(headers['x-amz-storage-class'] ?? 'STANDARD'),
  };
}

function bare(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

function encodePath(id: string): string {
  return id.split('/').map(encodeURIComponent).join('/');
}

function sendXml(res: http.ServerResponse, status: number, xml: string): void {
  const body = Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n${xml}`);
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': body.length }).end(body);
}

function sendError(res: http.ServerResponse, status: number, code: string, message: string): void {
  sendXml(
    res,
    status,
    `<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message><RequestId>front</RequestId></Error>`,
  );
}

/** The secret keys the front verifies presigned URLs with (s3rver's default key pair). */
const PRESIGN_SECRETS: Readonly<Record<string, string>> = { S3RVER: 'S3RVER' };

/** RFC 3986 encoding, as SigV4 canonicalizes query strings. */
const sigv4Encode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Why S3 would refuse a presigned request (SigV4 in the query), or undefined when it would not (or
 * the request is not presigned): the signature recomputed from the method, the path as sent, the
 * query without `X-Amz-Signature`, and the signed headers as received (a signed header that is
 * absent or has another value breaks it), under the secret of `X-Amz-Credential`'s key; and the
 * expiry (`X-Amz-Date` + `X-Amz-Expires`).
 */
export function presignedRefusal(
  method: string,
  target: string,
  headers: http.IncomingHttpHeaders,
  now = Date.now(),
): { code: string; message: string } | undefined {
  const at = target.indexOf('?');
  if (at < 0) return undefined;
  const rawPath = target.slice(0, at);
  const pairs = target
    .slice(at + 1)
    .split('&')
    .filter((p) => p !== '')
    .map((p) => {
      const eq = p.indexOf('=');
      const k = decodeURIComponent(eq < 0 ? p : p.slice(0, eq));
      const v = eq < 0 ? '' : decodeURIComponent(p.slice(eq + 1).replace(/\+/g, '%20'));
      return [k, v] as [string, string];
    });
  const q = new Map(pairs);
  const signature = q.get('X-Amz-Signature');
  if (signature === undefined) return undefined;
  const mismatch = {
    code: 'SignatureDoesNotMatch',
    message: 'The request signature we calculated does not match the signature you provided.',
  };
  const credential = q.get('X-Amz-Credential') ?? '';
  const [accessKey = '', ...scopeParts] = credential.split('/');
  const secret = PRESIGN_SECRETS[accessKey];
  if (secret === undefined)
    return { code: 'InvalidAccessKeyId', message: 'The AWS Access Key Id you provided does not exist.' };
  const amzDate = q.get('X-Amz-Date') ?? '';
  const expires = Number(q.get('X-Amz-Expires') ?? '0');
  const date = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!date) return mismatch;
  const [, y = 0, mo = 1, d = 0, h = 0, mi = 0, se = 0] = date.map(Number);
  const signedAt = Date.UTC(y, mo - 1, d, h, mi, se);
  if (now > signedAt + expires * 1000) return { code: 'AccessDenied', message: 'Request has expired' };
  const signedHeaders = (q.get('X-Amz-SignedHeaders') ?? '').split(';').filter((h) => h !== '');
  const canonicalHeaders = signedHeaders
    .map((h) => {
      const value = headers[h];
      const text = Array.isArray(value) ? value.join(',') : (value ?? '');
      return `${h}:${text.trim().replace(/\s+/g, ' ')}\n`;
    })
    .join('');
  const canonicalQuery = pairs
    .filter(([k]) => k !== 'X-Amz-Signature')
    .map(([k, v]) => [sigv4Encode(k), sigv4Encode(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const payload = q.get('X-Amz-Content-Sha256') ?? 'UNSIGNED-PAYLOAD';
  const canonical = [
    method,
    rawPath,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders.join(';'),
    payload,
  ].join('\n');
  const scope = scopeParts.join('/');
  const toSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n');
  let key: Buffer = Buffer.from(`AWS4${secret}`);
  for (const part of scopeParts) key = createHmac('sha256', key).update(part).digest();
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  return expected === signature ? undefined : mismatch;
}
