/**
 * Presigned transfers for the fs driver, so that the local server (`npm start`) offers workspaces
 * and direct uploads as S3 and OSS do. A URL is `<baseUrl>/v1/blobs/<grant>.<signature>`: the grant
 * (base64url JSON) names the method, the key, the expiry, the exact length and MD5 of the body and
 * what the object is stored with; the signature is an HMAC-SHA256 of it under a secret of the
 * server, so nothing in the URL can be changed. `serveBlob` answers those URLs (the local server
 * routes `/v1/blobs/` to it); a GET honours one `Range` as S3 does. Parts of multipart uploads are kept under `<root>/.uploads/<id>/`
 * (a name no encoded key can take: encoded segments never start with `.`).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { encodeTags, resolveRange } from './common.js';
import { ObjectConditionFailedError, ObjectNotFoundError } from './errors.js';
import type {
  ByteRange,
  DirectTransfer,
  PresignedRequest,
  PutOptions,
  StoredObject,
  UploadedPart,
} from './types.js';

/** Where presigned fs URLs point, and the key that signs them. */
export interface FsPresignOptions {
  /** The local server's base URL, e.g. `http://127.0.0.1:8787` (a function when the port comes later). */
  readonly baseUrl: string | (() => string);
  /** At least 32 bytes; default a random key per process (URLs then die with the process). */
  readonly secret?: Uint8Array;
}

interface Grant {
  /** Method. */
  m: 'GET' | 'PUT';
  /** Key. */
  k: string;
  /** Expiry, Unix seconds. */
  e: number;
  /** Exact body length and base64 MD5 (PUT). */
  len?: number;
  md5?: string;
  /** What the object is stored with (PUT of a whole object). */
  o?: PutOptions;
  /** Upload id and part number (PUT of a part). */
  u?: string;
  p?: number;
}

/** An answer of `serveBlob`. */
export interface BlobAnswer {
  status: number;
  headers: Record<string, string>;
  body?: Uint8Array;
}

type Transfer = DirectTransfer & {
  /** Answers a request to a presigned URL: `token` is the path after `/v1/blobs/`. */
  serveBlob(
    method: string,
    token: string,
    headers: Record<string, string>,
    body: Uint8Array,
  ): Promise<BlobAnswer>;
};

const b64 = (data: Buffer | string) => Buffer.from(data).toString('base64url');
const UPLOAD_ID = /^[0-9a-f]{32}$/;

/** The driver's own writes and reads, which the transfers go through. */
interface FsIo {
  write(key: string, body: Uint8Array, o: PutOptions): Promise<{ etag: string }>;
  read(key: string): Promise<StoredObject>;
}

const md5Of = (body: Uint8Array, encoding: 'hex' | 'base64') =>
  createHash('md5').update(body).digest(encoding);

/** An S3-style error answer. */
const errorAnswer = (status: number, code: string, message: string): BlobAnswer => ({
  status,
  headers: { 'content-type': 'application/xml' },
  body: Buffer.from(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`,
  ),
});

/** Signs grants into URLs and verifies the tokens of URLs it signed. */
function grantSigner(options: FsPresignOptions) {
  const secret = options.secret ?? randomBytes(32);
  const baseUrl = () => (typeof options.baseUrl === 'function' ? options.baseUrl() : options.baseUrl);
  const mac = (payload: string) => createHmac('sha256', secret).update(payload).digest();

  function presign(
    grant: Omit<Grant, 'e'>,
    expiresIn = 900,
    headers: Record<string, string> = {},
  ): PresignedRequest {
    const e = Math.floor(Date.now() / 1000) + expiresIn;
    const payload = b64(JSON.stringify({ ...grant, e }));
    return {
      method: grant.m,
      url: `${baseUrl()}/v1/blobs/${payload}.${b64(mac(payload))}`,
      headers,
      expiresAt: new Date(e * 1000),
    };
  }

  function verify(token: string): Grant | 'expired' | undefined {
    const [payload = '', signature = ''] = token.split('.');
    const given = Buffer.from(signature, 'base64url');
    const expected = mac(payload);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    const grant = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Grant;
    return grant.e * 1000 < Date.now() ? 'expired' : grant;
  }

  return { presign, verify };
}

/** The multipart uploads kept under `<root>/.uploads/<id>/`: their folders, metadata and parts. */
function uploadArea(root: string) {
  const uploads = path.join(root, '.uploads');

  const uploadDir = (id: string) => {
    if (!UPLOAD_ID.test(id)) throw new ObjectNotFoundError(id, 'fs');
    return path.join(uploads, id);
  };

  async function meta(key: string, id: string): Promise<{ key: string; options: PutOptions }> {
    const raw = await fsp.readFile(path.join(uploadDir(id), 'meta.json'), 'utf8').catch(() => undefined);
    const parsed = raw ? (JSON.parse(raw) as { key: string; options: PutOptions }) : undefined;
    if (!parsed || parsed.key !== key) throw new ObjectNotFoundError(key, 'fs');
    return parsed;
  }

  async function listParts(key: string, id: string): Promise<UploadedPart[]> {
    await meta(key, id);
    const names = await fsp.readdir(uploadDir(id));
    const parts: UploadedPart[] = [];
    for (const name of names) {
      const match = /^part-(\d+)\.md5$/.exec(name);
      if (!match) continue;
      const n = Number(match[1]);
      const [etag, stat] = await Promise.all([
        fsp.readFile(path.join(uploadDir(id), name), 'utf8'),
        fsp.stat(path.join(uploadDir(id), `part-${n}`)),
      ]);
      parts.push({ partNumber: n, etag, size: stat.size });
    }
    return parts.sort((a, b) => a.partNumber - b.partNumber);
  }

  return { uploadDir, meta, listParts };
}

/**
 * One byte range of a `Range` header (`bytes=a-b`, `bytes=a-`, `bytes=-n`) as S3 reads it; undefined
 * for anything else (the whole object, as S3 answers an unparsable or multiple range).
 */
function rangeOf(header: string | undefined): ByteRange | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec((header ?? '').trim());
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') return { suffix: Number(match[2]) };
  const start = Number(match[1]);
  if (match[2] === '') return { start };
  const end = Number(match[2]);
  return end < start ? undefined : { start, end };
}

/** Answers a verified GET (or HEAD) grant: the object, its `Range` (206, or 416), or 404. */
async function serveGet(
  io: FsIo,
  grant: Grant,
  method: string,
  headers: Record<string, string>,
): Promise<BlobAnswer> {
  const object = await io.read(grant.k).catch(() => undefined);
  if (!object) return errorAnswer(404, 'NoSuchKey', 'The specified key does not exist.');
  const base = {
    'content-type': object.contentType ?? 'application/octet-stream',
    etag: `"${object.etag}"`,
    'accept-ranges': 'bytes',
    ...(object.contentEncoding ? { 'content-encoding': object.contentEncoding } : {}),
  };
  const range = rangeOf(headers.range);
  if (range) {
    const size = object.body.byteLength;
    let selected: { start: number; end: number };
    try {
      selected = resolveRange(range, size, grant.k, 'fs');
    } catch {
      const answer = errorAnswer(416, 'InvalidRange', 'The requested range is not satisfiable');
      return { ...answer, headers: { ...answer.headers, 'content-range': `bytes */${size}` } };
    }
    return {
      status: 206,
      headers: { ...base, 'content-range': `bytes ${selected.start}-${selected.end}/${size}` },
      body: method === 'HEAD' ? undefined : object.body.subarray(selected.start, selected.end + 1),
    };
  }
  return { status: 200, headers: base, body: method === 'HEAD' ? undefined : object.body };
}

/** Answers a verified PUT grant: checks the body against what was signed, then stores the object or part. */
async function servePut(
  io: FsIo,
  area: ReturnType<typeof uploadArea>,
  grant: Grant,
  headers: Record<string, string>,
  body: Uint8Array,
): Promise<BlobAnswer> {
  if (grant.len !== undefined && body.byteLength !== grant.len)
    return errorAnswer(400, 'IncompleteBody', 'The body is not the length that was signed');
  if (
    grant.md5 !== undefined &&
    (headers['content-md5'] !== grant.md5 || md5Of(body, 'base64') !== grant.md5)
  )
    return errorAnswer(400, 'BadDigest', 'The Content-MD5 you specified did not match what we received.');
  if (grant.u !== undefined && grant.p !== undefined) {
    const exists = await area.meta(grant.k, grant.u).catch(() => undefined);
    if (!exists) return errorAnswer(404, 'NoSuchUpload', 'The specified upload does not exist.');
    const file = path.join(area.uploadDir(grant.u), `part-${grant.p}`);
    await fsp.writeFile(file, body);
    const etag = md5Of(body, 'hex');
    await fsp.writeFile(`${file}.md5`, etag);
    return { status: 200, headers: { etag: `"${etag}"` } };
  }
  const { etag } = await io.write(grant.k, body, grant.o ?? {});
  return { status: 200, headers: { etag: `"${etag}"` } };
}

/**
 * Presigned transfers over an fs root, writing and reading through the driver's own functions. The
 * driver's base (base.ts) has checked every key and option before these are called.
 */
export function fsTransfer(root: string, options: FsPresignOptions, io: FsIo): Transfer {
  const { presign, verify } = grantSigner(options);
  const area = uploadArea(root);
  const { uploadDir, meta, listParts } = area;

  return {
    async presignGet(key, o = {}) {
      return presign({ m: 'GET', k: key }, o.expiresIn).url;
    },
    async presignPut(key, o = {}) {
      return presign(
        { m: 'PUT', k: key, o: { contentType: o.contentType ?? 'application/octet-stream' } },
        o.expiresIn,
      ).url;
    },
    async presignUpload(key, o) {
      const stored: PutOptions = {
        contentType: o.contentType ?? 'application/octet-stream',
        ...(o.contentEncoding ? { contentEncoding: o.contentEncoding } : {}),
        ...(o.storageClass ? { storageClass: o.storageClass } : {}),
        ...(o.tags ? { tags: o.tags } : {}),
        ...(o.metadata ? { metadata: o.metadata } : {}),
      };
      return presign({ m: 'PUT', k: key, len: o.contentLength, md5: o.contentMd5, o: stored }, o.expiresIn, {
        'content-length': String(o.contentLength),
        'content-md5': o.contentMd5,
        'content-type': stored.contentType as string,
        ...(o.tags && Object.keys(o.tags).length > 0 ? { 'x-fs-tagging': encodeTags(o.tags) } : {}),
      });
    },
    async createMultipart(key, o = {}) {
      const id = randomBytes(16).toString('hex');
      await fsp.mkdir(uploadDir(id), { recursive: true });
      await fsp.writeFile(path.join(uploadDir(id), 'meta.json'), JSON.stringify({ key, options: { ...o } }));
      return id;
    },
    async presignPart(key, id, partNumber, o) {
      return presign(
        { m: 'PUT', k: key, u: id, p: partNumber, len: o.contentLength, md5: o.contentMd5 },
        o.expiresIn,
        {
          'content-length': String(o.contentLength),
          'content-md5': o.contentMd5,
        },
      );
    },
    listParts,
    async completeMultipart(key, id, parts) {
      const { options } = await meta(key, id);
      const stored = new Map((await listParts(key, id)).map((p) => [p.partNumber, p]));
      const bodies: Buffer[] = [];
      for (const part of [...parts].sort((a, b) => a.partNumber - b.partNumber)) {
        if (stored.get(part.partNumber)?.etag !== part.etag.toLowerCase())
          throw new ObjectConditionFailedError(key, 'fs');
        bodies.push(await fsp.readFile(path.join(uploadDir(id), `part-${part.partNumber}`)));
      }
      const out = await io.write(key, Buffer.concat(bodies), options);
      await fsp.rm(uploadDir(id), { recursive: true, force: true });
      return out;
    },
    async abortMultipart(_key, id) {
      await fsp.rm(uploadDir(id), { recursive: true, force: true });
    },
    restore: async () => 'done',

    async serveBlob(method, token, headers, body) {
      const grant = verify(token);
      if (grant === 'expired') return errorAnswer(403, 'AccessDenied', 'Request has expired');
      if (!grant || grant.m !== (method === 'HEAD' ? 'GET' : method))
        return errorAnswer(403, 'SignatureDoesNotMatch', 'The request signature does not match');
      return grant.m === 'GET'
        ? serveGet(io, grant, method, headers)
        : servePut(io, area, grant, headers, body);
    },
  };
}
