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
 * - has no compare-and-swap overwrite, like OSS: `If-Match` or `If-None-Match` on a PUT answers
 *   400 NotImplemented, as OSS does (create-only is `x-oss-forbid-overwrite` only);
 * - AppendObject as OSS documents it (https://www.alibabacloud.com/help/en/oss/developer-reference/appendobject):
 *   `POST /<key>?append&position=P` succeeds only when P is the object's length (0 creates an absent
 *   object, or appends to an empty appendable one), else 409 PositionNotEqualToLength with
 *   `x-oss-next-append-position`; 409 ObjectNotAppendable on a normal object; the creating append's
 *   content type, `x-oss-meta-*`, `x-oss-tagging` and storage class (not the cold archives: 400
 *   InvalidArgument) are kept, later appends' are ignored. Appendable objects live in the front's own
 *   append-only temporary files, served by GET/HEAD (ranges as OSS answers them), `?tagging`, DELETE
 *   and DeleteMultipleObjects, and merged into ListObjects (V1 and V2) in key order (`<Type>`
 *   Appendable or Normal). Their answers carry `x-oss-object-type: Appendable`,
 *   `x-oss-next-append-position` and `x-oss-hash-crc64ecma` (CRC-64/ECMA-182 as OSS computes it:
 *   reflected, initial value and final XOR all ones, the CRC-64/XZ parameters). A PUT, CopyObject or
 *   completed multipart upload over an appendable object replaces it with a normal one; CopyObject
 *   FROM an appendable object is refused (OSS's documentation says appendable objects cannot be
 *   copied without naming the error; the front answers 400 InvalidArgument, and the driver reads the
 *   object type rather than that code). One lock per key covers PUT, DELETE, COPY, append and reads;
 * - on demand (`POST /__front/versioning` `{ "status": "Enabled" | "Suspended" | "Off" }`) acts as a
 *   bucket with versioning enabled or suspended, which ignores `x-oss-forbid-overwrite` (OSS's
 *   documentation says so); `reset` turns it off;
 * - on demand (`POST /__front/append-position` `{ "ignore": true }`) appends at the end whatever
 *   position is asked, as a backend that ignored the position would, for the backend probe's tests;
 *   `reset` turns it off;
 * - the bucket calls `npm run bootstrap` makes, as OSS documents them (the bucket's ACL, storage
 *   class and encryption rule kept here, the bucket itself in s3rver):
 *   PutBucket (https://www.alibabacloud.com/help/en/oss/developer-reference/putbucket): `PUT /<bucket>`
 *   with an optional `CreateBucketConfiguration` (StorageClass, DataRedundancyType) and `x-oss-acl`
 *   (default private); for a bucket the caller already owns, 200 and the ACL changed when one is
 *   given (OSS: "subsequent calls modify its metadata"); 409 BucketAlreadyExists for a bucket of
 *   another account; 400 InvalidBucketName, InvalidArgument (ACL, redundancy), InvalidStorageClass.
 *   GetBucketInfo (`?bucketInfo`, https://www.alibabacloud.com/help/en/oss/developer-reference/getbucketinfo):
 *   name, creation date, storage class, owner, `AccessControlList/Grant`, and
 *   `ServerSideEncryptionRule/SSEAlgorithm` (`None` without a rule). GetBucketAcl / PutBucketAcl
 *   (`?acl`, `x-oss-acl`). PutBucketEncryption / GetBucketEncryption / DeleteBucketEncryption
 *   (`?encryption`, https://www.alibabacloud.com/help/en/oss/developer-reference/putbucketencryption):
 *   SSEAlgorithm AES256, KMS or SM4, KMSMasterKeyID only with KMS (else 400 InvalidArgument), 400
 *   InvalidEncryptionAlgorithmError for another algorithm; 404 NoSuchServerSideEncryptionRule
 *   without a rule. Lifecycle (`?lifecycle`) is stored by the S3 front as sent (tests read it
 *   there); here a missing bucket gets 404 NoSuchBucket and a bucket without rules 404
 *   NoSuchLifecycle, OSS's codes. DeleteBucket passes through (the bucket's state goes with it);
 * - on demand (`POST /__front/foreign-buckets` `{ "names": [...] }`) treats buckets as another
 *   account's: PutBucket gets 409 BucketAlreadyExists, the other bucket calls 403 AccessDenied;
 *   `reset` forgets them.
 *
 * Not emulated for appendable objects: versioning, archive restores, server-side encryption. Not
 * emulated for buckets: ACLs (and encryption rules) are kept and reported, not enforced (every
 * request needs a signature; objects are not encrypted), Block Public Access, bucket policies.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import nodePath from 'node:path';
import { compareKeys, KeyedMutex, resolveRange } from '../../lib/drivers/common.js';
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
  'bucketInfo',
  'continuation-token',
  'delete',
  'encryption',
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
  /** Appends land at the end whatever their position (a backend that ignores it), until `reset`. */
  let ignorePosition = false;
  /** Appendable objects by `bucket/key`; their bytes are in files under `folder`. */
  const appendables = new Map<string, Appendable>();
  const folder = await fsp.mkdtemp(nodePath.join(tmpdir(), 'oss-front-append-'));
  /** One lock per `bucket/key`: PUT, DELETE, COPY (of the target), append and the key's reads. */
  const locks = new KeyedMutex();
  /** What OSS keeps about each bucket and s3rver does not, by name (a bucket s3rver has but the front never saw gets the defaults). */
  const buckets = new Map<string, BucketState>();
  /** Buckets of another account, until `reset`. */
  let foreignBuckets = new Set<string>();

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
      else if (path === 'append-position')
        ignorePosition = (JSON.parse(body.toString()) as { ignore: boolean }).ignore;
      else if (path === 'foreign-buckets')
        for (const name of (JSON.parse(body.toString()) as { names: string[] }).names)
          foreignBuckets.add(name);
      else if (path === 'reset') {
        faults.reset();
        versioning = 'Off';
        ignorePosition = false;
        foreignBuckets = new Set();
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
    if (!key) {
      if (method === 'GET' && isListing(query)) return listObjects(bucket, query, req, res);
      if (method === 'POST' && query.has('delete')) return deleteObjects(bucket, req, res);
      if (isBucketCall(method, query)) return bucketCall(bucket, method, query, req, res);
      await forward(req, res, method, query);
      return;
    }
    const id = `${bucket}/${key}`;
    if (method === 'POST' && query.has('append')) return locks.run(id, () => append(id, query, req, res));
    return locks.run(id, async () => {
      const appendable = appendables.get(id);
      if (appendable && query.has('tagging')) return appendableTagging(appendable, method, req, res);
      if (method === 'PUT' && !query.has('partNumber')) {
        if (req.headers['if-match'] !== undefined || req.headers['if-none-match'] !== undefined) {
          req.resume();
          // OSS has no conditional PutObject (create-only is x-oss-forbid-overwrite).
          return sendError(
            res,
            400,
            'NotImplemented',
            'A header you provided implies functionality that is not implemented.',
          );
        }
        const source = req.headers['x-oss-copy-source'];
        if (source !== undefined && appendables.has(copySourceId(String(source)))) {
          req.resume();
          return sendError(
            res,
            400,
            'InvalidArgument',
            'The source object is an appendable object, which CopyObject cannot copy.',
          );
        }
        const forbidden =
          String(req.headers['x-oss-forbid-overwrite'] ?? '') === 'true' && versioning === 'Off';
        if (appendable && forbidden) {
          req.resume();
          return sendError(
            res,
            409,
            'FileAlreadyExists',
            'The object you specified already exists and cannot be overwritten.',
          );
        }
        // A PUT (or a copy) over an appendable object makes it a normal one.
        const status = await forward(req, res, method, query);
        if (appendable && status < 300) await drop(id);
        return;
      }
      if (appendable && !query.has('uploadId') && !query.has('uploads')) {
        if (method === 'GET' || method === 'HEAD') return readAppendable(appendable, method, req, res);
        if (method === 'DELETE') {
          req.resume();
          await drop(id);
          return void res.writeHead(204, { 'x-oss-request-id': randomUUID() }).end();
        }
      }
      const status = await forward(req, res, method, query);
      // A completed multipart upload over an appendable object replaces it too.
      if (appendable && method === 'POST' && query.has('uploadId') && status < 300) await drop(id);
    });
  }

  /** Passes the request on to the S3 front, OSS headers mapped to S3's; returns the answer's status. */
  async function forward(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    method: string,
    query: URLSearchParams,
  ): Promise<number> {
    const pathname = (req.url ?? '/').split('?')[0] ?? '/';
    const path = pathname + (query.size > 0 ? `?${query.toString().replace(/=(?=&|$)/g, '')}` : '');
    const headers = forwardHeaders(req.headers, (h) => h === 'authorization');
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
    if (await applyOssFault(faults.take(ruleMatches(req, true)), res)) return 500;
    if (method === 'POST' && query.has('restore') && up.status === 403) {
      // OSS refuses to restore an object that is not archived with 400, not S3's 403.
      sendError(res, 400, 'OperationNotSupported', 'The operation is not supported for this resource.');
      return 400;
    }
    const object = (method === 'GET' || method === 'HEAD') && !query.has('tagging') && !query.has('uploadId');
    answer(res, up, method, headers['if-none-match'] === '*' && method === 'PUT', object);
    return up.status;
  }

  /** The state of a bucket s3rver has (the defaults for one the front never saw), or undefined. */
  async function bucketState(bucket: string): Promise<BucketState | undefined> {
    const head = await request(upstream, 'HEAD', `/${encodeURIComponent(bucket)}`, {});
    if (head.status !== 200) {
      buckets.delete(bucket);
      return undefined;
    }
    let state = buckets.get(bucket);
    if (!state) {
      state = { acl: 'private', storageClass: 'Standard', dataRedundancyType: 'LRS', created: new Date() };
      buckets.set(bucket, state);
    }
    return state;
  }

  /** PutBucket, GetBucketInfo, the bucket's ACL, encryption and lifecycle, DeleteBucket (see the header). */
  async function bucketCall(
    bucket: string,
    method: string,
    query: URLSearchParams,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const body = await readBody(req);
    const create = method === 'PUT' && query.size === 0;
    if (foreignBuckets.has(bucket)) {
      if (create) {
        return sendError(
          res,
          409,
          'BucketAlreadyExists',
          'The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.',
        );
      }
      return sendError(res, 403, 'AccessDenied', 'You do not have permission to access this bucket.');
    }
    if (create) return putBucket(bucket, body.toString('utf8'), req, res);
    const state = await bucketState(bucket);
    if (!state) return sendError(res, 404, 'NoSuchBucket', 'The specified bucket does not exist.');
    if (query.has('lifecycle')) {
      const headers: http.OutgoingHttpHeaders = { 'content-length': String(body.length) };
      if (req.headers['content-type']) headers['content-type'] = req.headers['content-type'];
      const path = `/${encodeURIComponent(bucket)}?lifecycle`;
      const up = await request(upstream, method, path, headers, method === 'PUT' ? body : undefined);
      if (
        up.status === 404 &&
        xmlValues(up.body.toString('utf8'), 'Code')[0] === 'NoSuchLifecycleConfiguration'
      ) {
        return sendError(res, 404, 'NoSuchLifecycle', 'No Row found in Lifecycle Table.');
      }
      return answer(res, up, method, false, false);
    }
    if (query.has('bucketInfo') && method === 'GET') return sendXml(res, 200, bucketInfoXml(bucket, state));
    if (query.has('acl') && method === 'GET') {
      return sendXml(
        res,
        200,
        `<AccessControlPolicy>${OWNER}<AccessControlList><Grant>${state.acl}</Grant></AccessControlList></AccessControlPolicy>`,
      );
    }
    if (query.has('acl') && method === 'PUT') {
      const acl = String(req.headers['x-oss-acl'] ?? '');
      if (!BUCKET_ACLS.has(acl))
        return sendError(res, 400, 'InvalidArgument', 'no such bucket access control exists');
      state.acl = acl;
      return void res.writeHead(200, { 'x-oss-request-id': randomUUID(), 'content-length': '0' }).end();
    }
    if (query.has('encryption')) return bucketEncryption(state, method, body.toString('utf8'), res);
    if (method === 'DELETE' && query.size === 0) {
      const up = await request(upstream, 'DELETE', `/${encodeURIComponent(bucket)}`, {});
      if (up.status < 300) buckets.delete(bucket);
      return answer(res, up, method, false, false);
    }
    sendError(res, 405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
  }

  /** PutBucket: creates the bucket in s3rver, or (the caller owns it already) changes its ACL if one is given. */
  async function putBucket(
    bucket: string,
    xml: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const acl = req.headers['x-oss-acl'] === undefined ? undefined : String(req.headers['x-oss-acl']);
    if (!BUCKET_NAME.test(bucket)) {
      return sendError(res, 400, 'InvalidBucketName', 'The specified bucket is not valid.');
    }
    if (acl !== undefined && !BUCKET_ACLS.has(acl)) {
      return sendError(res, 400, 'InvalidArgument', 'no such bucket access control exists');
    }
    const storageClass = xmlValues(xml, 'StorageClass')[0] ?? 'Standard';
    const dataRedundancyType = xmlValues(xml, 'DataRedundancyType')[0] ?? 'LRS';
    if (!BUCKET_CLASSES.has(storageClass)) {
      return sendError(res, 400, 'InvalidStorageClass', 'The storage class you specified is not valid.');
    }
    if (!REDUNDANCY_TYPES.has(dataRedundancyType)) {
      return sendError(res, 400, 'InvalidArgument', 'The data redundancy type you specified is not valid.');
    }
    const ok = () =>
      void res
        .writeHead(200, { location: `/${bucket}`, 'content-length': '0', 'x-oss-request-id': randomUUID() })
        .end();
    const existing = await bucketState(bucket);
    if (existing) {
      if (acl !== undefined) existing.acl = acl;
      return ok();
    }
    const up = await request(upstream, 'PUT', `/${encodeURIComponent(bucket)}`, {});
    if (up.status >= 300 && (await bucketState(bucket)) === undefined)
      return answer(res, up, 'PUT', false, false);
    buckets.set(bucket, { acl: acl ?? 'private', storageClass, dataRedundancyType, created: new Date() });
    ok();
  }

  /** GetBucketInfo's answer. */
  function bucketInfoXml(bucket: string, state: BucketState): string {
    const sse = state.encryption
      ? `<SSEAlgorithm>${state.encryption.algorithm}</SSEAlgorithm>${state.encryption.kmsMasterKeyId ? `<KMSMasterKeyID>${xmlEscape(state.encryption.kmsMasterKeyId)}</KMSMasterKeyID>` : ''}`
      : '<SSEAlgorithm>None</SSEAlgorithm>';
    const host = `localhost:${port}`;
    return `<BucketInfo><Bucket><AccessMonitor>Disabled</AccessMonitor><CreationDate>${state.created.toISOString()}</CreationDate><ExtranetEndpoint>${host}</ExtranetEndpoint><IntranetEndpoint>${host}</IntranetEndpoint><Location>${LOCATION}</Location><StorageClass>${state.storageClass}</StorageClass><TransferAcceleration>Disabled</TransferAcceleration><CrossRegionReplication>Disabled</CrossRegionReplication><DataRedundancyType>${state.dataRedundancyType}</DataRedundancyType><Name>${xmlEscape(bucket)}</Name><ResourceGroupId>rg-default-id</ResourceGroupId>${versioning === 'Off' ? '' : `<Versioning>${versioning}</Versioning>`}${OWNER}<AccessControlList><Grant>${state.acl}</Grant></AccessControlList><ServerSideEncryptionRule>${sse}</ServerSideEncryptionRule><BucketPolicy><LogBucket></LogBucket><LogPrefix></LogPrefix></BucketPolicy></Bucket></BucketInfo>`;
  }

  /** `?encryption` of a bucket: PutBucketEncryption, GetBucketEncryption, DeleteBucketEncryption. */
  async function bucketEncryption(
    state: BucketState,
    method: string,
    xml: string,
    res: http.ServerResponse,
  ): Promise<void> {
    const done = (status: number) =>
      void res.writeHead(status, { 'x-oss-request-id': randomUUID(), 'content-length': '0' }).end();
    if (method === 'DELETE') {
      delete state.encryption;
      return done(204);
    }
    if (method === 'GET') {
      const rule = state.encryption;
      if (!rule) {
        return sendError(
          res,
          404,
          'NoSuchServerSideEncryptionRule',
          'The server side encryption configuration was not found.',
        );
      }
      const key = rule.kmsMasterKeyId
        ? `<KMSMasterKeyID>${xmlEscape(rule.kmsMasterKeyId)}</KMSMasterKeyID>`
        : '';
      return sendXml(
        res,
        200,
        `<ServerSideEncryptionRule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>${rule.algorithm}</SSEAlgorithm>${key}</ApplyServerSideEncryptionByDefault></ServerSideEncryptionRule>`,
      );
    }
    if (method !== 'PUT') {
      return sendError(
        res,
        405,
        'MethodNotAllowed',
        'The specified method is not allowed against this resource.',
      );
    }
    const algorithm = xmlValues(xml, 'SSEAlgorithm')[0];
    const kmsMasterKeyId = xmlValues(xml, 'KMSMasterKeyID')[0] || undefined;
    if (algorithm === undefined || !/<ApplyServerSideEncryptionByDefault>/.test(xml)) {
      return sendError(res, 400, 'MalformedXML', 'The XML you provided was not well-formed.');
    }
    if (!SSE_ALGORITHMS.has(algorithm)) {
      return sendError(
        res,
        400,
        'InvalidEncryptionAlgorithmError',
        'The encryption request you specified is not valid.',
      );
    }
    if (kmsMasterKeyId !== undefined && algorithm !== 'KMS') {
      return sendError(
        res,
        400,
        'InvalidArgument',
        'KMSMasterKeyID is not applicable if the default sse algorithm is not KMS.',
      );
    }
    state.encryption = { algorithm, ...(kmsMasterKeyId ? { kmsMasterKeyId } : {}) };
    done(200);
  }

  /** Removes an appendable object (its key's lock held). */
  async function drop(id: string): Promise<void> {
    const gone = appendables.get(id);
    appendables.delete(id);
    if (gone) await fsp.rm(gone.file, { force: true });
  }

  /** AppendObject (the key's lock held). */
  async function append(
    id: string,
    query: URLSearchParams,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const body = await readBody(req);
    const position = query.get('position');
    if (position === null || !/^\d+$/.test(position)) {
      return sendError(res, 400, 'InvalidArgument', 'The position of the append is missing or not a number.');
    }
    const md5 = req.headers['content-md5'];
    if (md5 !== undefined && createHash('md5').update(body).digest('base64') !== md5) {
      return sendError(res, 400, 'InvalidDigest', 'The Content-MD5 you specified is not valid.');
    }
    let object = appendables.get(id);
    const length = object?.size ?? 0;
    if (!object) {
      const normal = await request(upstream, 'HEAD', `/${encodePath(id)}`, {});
      if (normal.status === 200) {
        return sendError(res, 409, 'ObjectNotAppendable', 'The object is not appendable.');
      }
      const bucket = id.slice(0, id.indexOf('/'));
      if ((await request(upstream, 'HEAD', `/${encodeURIComponent(bucket)}`, {})).status === 404) {
        return sendError(res, 404, 'NoSuchBucket', 'The specified bucket does not exist.');
      }
    }
    if (Number(position) !== length && !ignorePosition) {
      return sendError(res, 409, 'PositionNotEqualToLength', 'Position is not equal to file length.', {
        'x-oss-next-append-position': String(length),
      });
    }
    if (!object) {
      const storageClass = String(req.headers['x-oss-storage-class'] ?? 'Standard');
      if (!APPENDABLE_CLASSES.has(storageClass)) {
        return sendError(res, 400, 'InvalidArgument', `An appendable object cannot be ${storageClass}.`);
      }
      const metadata: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers))
        if (name.startsWith('x-oss-meta-') && value !== undefined) metadata[name] = String(value);
      object = {
        file: nodePath.join(folder, randomUUID()),
        createdId: randomUUID(),
        size: 0,
        crc: 0n,
        etag: '',
        lastModified: new Date(),
        contentType: String(req.headers['content-type'] ?? 'application/octet-stream'),
        ...(req.headers['content-encoding']
          ? { contentEncoding: String(req.headers['content-encoding']) }
          : {}),
        metadata,
        tags: String(req.headers['x-oss-tagging'] ?? ''),
        storageClass,
      };
      await fsp.writeFile(object.file, new Uint8Array(0));
      appendables.set(id, object);
    }
    await fsp.appendFile(object.file, body);
    object.size += body.length;
    object.crc = crc64ecma(body, object.crc);
    object.etag = createHash('md5').update(`${object.createdId}:${object.size}`).digest('hex').toUpperCase();
    object.lastModified = new Date();
    res
      .writeHead(200, {
        etag: `"${object.etag}"`,
        'content-length': '0',
        'x-oss-next-append-position': String(object.size),
        'x-oss-hash-crc64ecma': String(object.crc),
        'x-oss-request-id': randomUUID(),
      })
      .end();
  }

  /** GET or HEAD of an appendable object (its key's lock held), ranges and If-Match as OSS answers them. */
  async function readAppendable(
    object: Appendable,
    method: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    req.resume();
    const ifMatch = req.headers['if-match'];
    if (ifMatch !== undefined && bare(String(ifMatch)) !== object.etag) {
      return sendError(
        res,
        412,
        'PreconditionFailed',
        'At least one of the pre-conditions you specified did not hold.',
      );
    }
    const headers: http.OutgoingHttpHeaders = {
      'content-type': object.contentType,
      etag: `"${object.etag}"`,
      'last-modified': object.lastModified.toUTCString(),
      'accept-ranges': 'bytes',
      'x-oss-object-type': 'Appendable',
      'x-oss-next-append-position': String(object.size),
      'x-oss-hash-crc64ecma': String(object.crc),
      'x-oss-storage-class': object.storageClass,
      'x-oss-request-id': randomUUID(),
      ...(object.contentEncoding ? { 'content-encoding': object.contentEncoding } : {}),
      ...object.metadata,
    };
    const tagCount = new URLSearchParams(object.tags).size;
    if (tagCount > 0) headers['x-oss-tagging-count'] = String(tagCount);
    const range = method === 'GET' ? parseRange(req.headers.range) : undefined;
    let selected: { start: number; end: number } | undefined;
    if (range) {
      const standard = req.headers['x-oss-range-behavior'] === 'standard';
      try {
        selected = resolveRange(range, object.size, '', 'oss-front');
      } catch {
        if (standard) {
          return sendError(res, 416, 'InvalidRange', 'The requested range is not satisfiable', {
            'content-range': `bytes */${object.size}`,
          });
        }
      }
      // OSS's default ignores a range reaching past the object: the whole object, 200.
      const past = range.suffix !== undefined ? range.suffix > object.size : (range.end ?? 0) >= object.size;
      if (!standard && past) selected = undefined;
    }
    const from = selected?.start ?? 0;
    const to = selected?.end ?? object.size - 1;
    const count = Math.max(0, to - from + 1);
    headers['content-length'] = String(count);
    if (selected) headers['content-range'] = `bytes ${from}-${to}/${object.size}`;
    if (method === 'HEAD') return void res.writeHead(200, headers).end();
    const body = Buffer.alloc(count);
    if (count > 0) {
      const handle = await fsp.open(object.file, 'r');
      try {
        await handle.read(body, 0, count, from);
      } finally {
        await handle.close();
      }
    }
    res.writeHead(selected ? 206 : 200, headers).end(body);
  }

  /** `?tagging` of an appendable object (its key's lock held). */
  async function appendableTagging(
    object: Appendable,
    method: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const body = (await readBody(req)).toString('utf8');
    if (method === 'GET') {
      const set = [...new URLSearchParams(object.tags)]
        .map(([k, v]) => `<Tag><Key>${xmlEscape(k)}</Key><Value>${xmlEscape(v)}</Value></Tag>`)
        .join('');
      return sendXml(res, 200, `<Tagging><TagSet>${set}</TagSet></Tagging>`);
    }
    const keys = xmlValues(body, 'Key');
    const values = xmlValues(body, 'Value');
    object.tags =
      method === 'PUT'
        ? new URLSearchParams(keys.map((k, i): [string, string] => [k, values[i] ?? ''])).toString()
        : '';
    res.writeHead(method === 'PUT' ? 200 : 204, { 'x-oss-request-id': randomUUID() }).end();
  }

  /**
   * ListObjects (V1) and ListObjectsV2 with the appendable objects merged in, in key order: the S3
   * front's entries after the page's start (`start-after` upstream), then the front's own, grouped
   * by the delimiter. The front's continuation token (and V1 marker) is the last key or prefix
   * returned, so paging resumes exactly after it and a common prefix is never returned twice.
   */
  async function listObjects(
    bucket: string,
    query: URLSearchParams,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const v2 = query.get('list-type') === '2';
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') || undefined;
    const limit = Math.min(1000, Math.max(1, Number(query.get('max-keys') ?? 100) || 100));
    let after = (v2 ? query.get('start-after') : query.get('marker')) || undefined;
    const token = v2 ? query.get('continuation-token') : null;
    if (token !== null) {
      const decoded = token.startsWith(TOKEN)
        ? Buffer.from(token.slice(TOKEN.length), 'base64url').toString('utf8')
        : undefined;
      if (decoded === undefined || `${TOKEN}${Buffer.from(decoded).toString('base64url')}` !== token) {
        return sendError(res, 400, 'InvalidArgument', 'The continuation token is not valid.');
      }
      if (after === undefined || compareKeys(decoded, after) > 0) after = decoded;
    }
    const later = (name: string) => after === undefined || compareKeys(name, after) > 0;
    const entries = new Map<string, ListEntry>();
    // The S3 front's entries: enough of them that the first `limit` of the merge are known.
    let cursor: string | undefined;
    let exhausted = false;
    let found = 0;
    while (!exhausted && found <= limit) {
      const q = new URLSearchParams({ 'list-type': '2', 'max-keys': '1000' });
      if (prefix) q.set('prefix', prefix);
      if (delimiter) q.set('delimiter', delimiter);
      if (cursor) q.set('continuation-token', cursor);
      else if (after !== undefined) q.set('start-after', after);
      const up = await request(upstream, 'GET', `/${encodeURIComponent(bucket)}?${q}`, {});
      if (up.status !== 200) return answer(res, up, 'GET', false, false);
      const xml = up.body.toString('utf8');
      for (const [, inner = ''] of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
        const name = xmlValues(inner, 'Key')[0] ?? '';
        if (!later(name)) continue;
        entries.set(name, { name, xml: /<Type>/.test(inner) ? inner : `${inner}<Type>Normal</Type>` });
        found++;
      }
      for (const [, inner = ''] of xml.matchAll(/<CommonPrefixes>([\s\S]*?)<\/CommonPrefixes>/g)) {
        const name = xmlValues(inner, 'Prefix')[0] ?? '';
        // A prefix returned last time comes back after it (its keys sort after it): skipped.
        if (name === after) continue;
        entries.set(name, { name, prefix: true });
        found++;
      }
      cursor = xmlValues(xml, 'NextContinuationToken')[0];
      exhausted = xmlValues(xml, 'IsTruncated')[0] !== 'true' || !cursor;
    }
    for (const [id, object] of appendables) {
      if (!id.startsWith(`${bucket}/`)) continue;
      const name = id.slice(bucket.length + 1);
      if (!name.startsWith(prefix) || !later(name)) continue;
      const at = delimiter === undefined ? -1 : name.indexOf(delimiter, prefix.length);
      if (at >= 0) {
        const common = name.slice(0, at + (delimiter as string).length);
        if (common !== after) entries.set(common, { name: common, prefix: true });
        continue;
      }
      entries.set(name, {
        name,
        xml: `<Key>${xmlEscape(name)}</Key><LastModified>${object.lastModified.toISOString()}</LastModified><ETag>"${object.etag}"</ETag><Type>Appendable</Type><Size>${object.size}</Size><StorageClass>${object.storageClass}</StorageClass>`,
      });
    }
    const sorted = [...entries.values()].sort((a, b) => compareKeys(a.name, b.name));
    const page = sorted.slice(0, limit);
    const truncated = sorted.length > limit || !exhausted;
    const last = page.at(-1)?.name;
    const next = truncated && last !== undefined ? last : undefined;
    // V1 always names the owner (ali-oss's V1 reads it), V2 with fetch-owner only.
    const owner = !v2 || query.get('fetch-owner') === 'true';
    const contents = page
      .filter((e) => !e.prefix)
      .map((e) => `<Contents>${e.xml}${owner && !/<Owner>/.test(e.xml ?? '') ? OWNER : ''}</Contents>`)
      .join('');
    const prefixes = page
      .filter((e) => e.prefix)
      .map((e) => `<CommonPrefixes><Prefix>${xmlEscape(e.name)}</Prefix></CommonPrefixes>`)
      .join('');
    const opt = (tag: string, value: string | null | undefined) =>
      value === null || value === undefined || value === '' ? '' : `<${tag}>${xmlEscape(value)}</${tag}>`;
    const head = v2
      ? `${opt('StartAfter', query.get('start-after'))}${opt('ContinuationToken', token)}<MaxKeys>${limit}</MaxKeys>${opt('Delimiter', delimiter)}<IsTruncated>${truncated}</IsTruncated>${opt('NextContinuationToken', next === undefined ? undefined : `${TOKEN}${Buffer.from(next).toString('base64url')}`)}<KeyCount>${page.length}</KeyCount>`
      : `<Marker>${xmlEscape(query.get('marker') ?? '')}</Marker><MaxKeys>${limit}</MaxKeys>${opt('Delimiter', delimiter)}<IsTruncated>${truncated}</IsTruncated>${opt('NextMarker', next)}`;
    req.resume();
    sendXml(
      res,
      200,
      `<ListBucketResult><Name>${xmlEscape(bucket)}</Name><Prefix>${xmlEscape(prefix)}</Prefix>${head}${contents}${prefixes}</ListBucketResult>`,
    );
  }

  /** DeleteMultipleObjects: the appendable keys here (each under its lock), the others upstream. */
  async function deleteObjects(
    bucket: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): Promise<void> {
    const xml = (await readBody(req)).toString('utf8');
    const quiet = /<Quiet>true<\/Quiet>/.test(xml);
    const keys = xmlValues(xml, 'Key');
    let deleted = '';
    const rest: string[] = [];
    for (const key of keys) {
      const id = `${bucket}/${key}`;
      const removed = await locks.run(id, async () => {
        if (!appendables.has(id)) return false;
        await drop(id);
        return true;
      });
      if (!removed) rest.push(key);
      else if (!quiet) deleted += `<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`;
    }
    if (rest.length === 0) {
      return sendXml(res, 200, `<DeleteResult>${deleted}</DeleteResult>`);
    }
    const body = Buffer.from(
      `<?xml version="1.0" encoding="UTF-8"?><Delete><Quiet>${quiet}</Quiet>${rest.map((k) => `<Object><Key>${xmlEscape(k)}</Key></Object>`).join('')}</Delete>`,
    );
    const headers = forwardHeaders(
      req.headers,
      (h) => h === 'authorization' || h === 'content-md5' || h === 'content-length',
    );
    headers['content-length'] = String(body.length);
    const up = await request(upstream, 'POST', `/${encodeURIComponent(bucket)}?delete`, headers, body);
    if (await applyOssFault(faults.take(ruleMatches(req, true)), res)) return;
    if (up.status === 200 && deleted) {
      up.body = Buffer.from(
        up.body.toString('utf8').replace(/<\/DeleteResult>\s*$/, `${deleted}</DeleteResult>`),
      );
    }
    answer(res, up, 'POST', false, false);
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

  function answer(
    res: http.ServerResponse,
    up: Upstream,
    method: string,
    forbidOverwrite: boolean,
    object: boolean,
  ): void {
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
    // An object written by PutObject, CopyObject or a multipart upload.
    if (object) headers['x-oss-object-type'] = 'Normal';
    // A HEAD answer keeps the object's length; its body is empty.
    if (method !== 'HEAD') headers['content-length'] = String(up.body.length);
    res.writeHead(up.status, headers).end(up.body);
  }

  const port = await listen(server);
  return {
    port,
    endpoint: `http://localhost:${port}`,
    stop: async () => {
      await close(server);
      await fsp.rm(folder, { recursive: true, force: true });
    },
  };
}

/** An appendable object the front keeps: its bytes in `file`, the rest here. */
interface Appendable {
  readonly file: string;
  /** Drawn at creation: with the size, it makes the etag. */
  readonly createdId: string;
  size: number;
  /** CRC-64/ECMA-182 of the bytes so far, as `x-oss-hash-crc64ecma` states it. */
  crc: bigint;
  etag: string;
  lastModified: Date;
  readonly contentType: string;
  readonly contentEncoding?: string;
  /** `x-oss-meta-*` headers as they came. */
  readonly metadata: Record<string, string>;
  /** Query-string form, as `x-oss-tagging` carries them. */
  tags: string;
  readonly storageClass: string;
}

/** One entry of a merged listing: an object (its `<Contents>` inner XML) or a common prefix. */
interface ListEntry {
  readonly name: string;
  readonly xml?: string;
  readonly prefix?: true;
}

/** What the front keeps about a bucket (s3rver has the bucket itself). */
interface BucketState {
  acl: string;
  readonly storageClass: string;
  readonly dataRedundancyType: string;
  readonly created: Date;
  /** The default server-side encryption rule, if one was put. */
  encryption?: { readonly algorithm: string; readonly kmsMasterKeyId?: string };
}

/** Bucket ACLs (`x-oss-acl`). */
const BUCKET_ACLS = new Set(['private', 'public-read', 'public-read-write']);
/** A bucket's storage classes (`CreateBucketConfiguration/StorageClass`). */
const BUCKET_CLASSES = new Set(['Standard', 'IA', 'Archive', 'ColdArchive', 'DeepColdArchive']);
/** `CreateBucketConfiguration/DataRedundancyType`. */
const REDUNDANCY_TYPES = new Set(['LRS', 'ZRS']);
/** PutBucketEncryption's `SSEAlgorithm`. */
const SSE_ALGORITHMS = new Set(['AES256', 'KMS', 'SM4']);
/** OSS bucket names: 3 to 63 lowercase letters, digits and hyphens, starting and ending with a letter or digit. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
/** The region GetBucketInfo names (the front has none). */
const LOCATION = 'oss-local';

/** The classes AppendObject accepts (not the cold archives). */
const APPENDABLE_CLASSES = new Set(['Standard', 'IA', 'Archive']);
/** The owner listings name (the one account the front knows). */
const OWNER = '<Owner><ID>front-owner</ID><DisplayName>front-owner</DisplayName></Owner>';
/** The front's continuation tokens start with this. */
const TOKEN = 'front-';

/** Whether a request on a bucket (no key) is one of the bucket calls the front answers itself. */
function isBucketCall(method: string, query: URLSearchParams): boolean {
  if (query.size === 0) return method === 'PUT' || method === 'DELETE';
  return ['bucketInfo', 'acl', 'encryption', 'lifecycle'].some((name) => query.has(name));
}

/** Whether a bucket GET is a listing (V2, or V1 with no other subresource). */
function isListing(query: URLSearchParams): boolean {
  if (query.get('list-type') === '2') return true;
  return [...query.keys()].every((k) =>
    ['prefix', 'marker', 'max-keys', 'delimiter', 'encoding-type'].includes(k),
  );
}

/** `bucket/key` of an `x-oss-copy-source` header (`/bucket/key`, URL-encoded). */
function copySourceId(header: string): string {
  const { bucket, key } = parseTarget(header.startsWith('/') ? header : `/${header}`);
  return `${bucket}/${key}`;
}

function encodePath(id: string): string {
  return id.split('/').map(encodeURIComponent).join('/');
}

function bare(etag: string): string {
  return etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1');
}

/** The reflected CRC-64/ECMA-182 table (polynomial 0x42F0E1EBA9EA3693 reversed), as two 32-bit halves. */
const CRC_TABLE = (() => {
  const poly = 0xc96c5795d7870f42n;
  const lo = new Uint32Array(256);
  const hi = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = BigInt(i);
    for (let bit = 0; bit < 8; bit++) crc = crc & 1n ? (crc >> 1n) ^ poly : crc >> 1n;
    lo[i] = Number(crc & 0xffffffffn);
    hi[i] = Number(crc >> 32n);
  }
  return { lo, hi };
})();

/**
 * CRC-64/ECMA-182 as OSS computes `x-oss-hash-crc64ecma` (its documentation gives Boost's
 * `crc_optimal<64, 0x42F0E1EBA9EA3693, ~0, ~0, true, true>`: the CRC-64/XZ parameters; "123456789"
 * gives 0x995DC9BBDF1939FA). `previous` continues the CRC of the bytes before `data` (an append).
 */
export function crc64ecma(data: Uint8Array, previous = 0n): bigint {
  const register = previous ^ 0xffffffffffffffffn;
  let lo = Number(register & 0xffffffffn) >>> 0;
  let hi = Number(register >> 32n) >>> 0;
  const { lo: tLo, hi: tHi } = CRC_TABLE;
  for (let i = 0; i < data.length; i++) {
    const index = (lo ^ (data[i] as number)) & 0xff;
    lo = (((lo >>> 8) | (hi << 24)) ^ (tLo[index] as number)) >>> 0;
    hi = ((hi >>> 8) ^ (tHi[index] as number)) >>> 0;
  }
  return ((BigInt(hi) << 32n) | BigInt(lo)) ^ 0xffffffffffffffffn;
}

function sendXml(res: http.ServerResponse, status: number, xml: string): void {
  const body = Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n${xml}`);
  res
    .writeHead(status, {
      'content-type': 'application/xml',
      'content-length': body.length,
      'x-oss-request-id': randomUUID(),
    })
    .end(body);
}

/** Whether a ranged answer shows the range reaching past the object (OSS's default then ignores it). */
function reachesPast(range: ReturnType<typeof parseRange>, up: Upstream): boolean {
  if (!range || up.status === 416) return up.status === 416;
  const size = Number(/\/(\d+)$/.exec(String(up.headers['content-range'] ?? ''))?.[1] ?? Number.NaN);
  if (up.status !== 206 || Number.isNaN(size)) return false;
  return range.suffix !== undefined ? range.suffix > size : range.end !== undefined && range.end >= size;
}

function sendError(
  res: http.ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const requestId = randomUUID();
  const body = Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message><RequestId>${requestId}</RequestId><HostId>localhost</HostId></Error>`,
  );
  res
    .writeHead(status, {
      'content-type': 'application/xml',
      'content-length': body.length,
      'x-oss-request-id': requestId,
      ...headers,
    })
    .end(body);
}
