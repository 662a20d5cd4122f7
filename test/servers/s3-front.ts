/**
 * A front for s3rver that adds what s3rver lacks and S3 documents, so the s3 driver is tested
 * against S3's behaviour rather than s3rver's gaps:
 * - conditional PutObject, GetObject and DeleteObject (`If-None-Match: *`: 412 when the key exists;
 *   `If-Match`: 412 when the etag differs, 404 when the key is missing), serialised per key so that
 *   exactly one of many concurrent conditional writers wins, and reads never see a half-written
 *   object (s3rver rewrites files in place);
 * - object tags (`x-amz-tagging`, `?tagging`, `x-amz-tagging-count`) and storage classes, which
 *   s3rver drops;
 * - bucket lifecycle configurations stored and returned (s3rver answers 501);
 * - on demand: per-key errors in DeleteObjects, and faults (HTTP 500, 503 SlowDown, latency,
 *   connection resets) for the reliability tests.
 *
 * Control API (JSON, under `/__front/`): `POST faults` adds a rule, `POST delete-failures` makes
 * DeleteObjects fail keys containing a text, `POST reset` clears both, `GET requests` lists what
 * was received (method, path, bytes).
 */
import http from 'node:http';
import { KeyedMutex } from '../../lib/drivers/common.js';
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
export interface FaultRule {
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

interface ObjectExtras {
  tags: string;
  storageClass: string;
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
  let faults: FaultRule[] = [];
  let deleteFailures: string[] = [];
  let received: Array<{ method: string; path: string; bytes: number }> = [];
  let injected = 0;

  function takeFault(req: http.IncomingMessage, after: boolean): FaultRule | undefined {
    const rule = faults.find(
      (f) =>
        Boolean(f.after) === after &&
        (!f.method || f.method === req.method) &&
        (!f.match || (req.url ?? '').includes(f.match)),
    );
    if (!rule) return undefined;
    if (rule.probability !== undefined) {
      // A standing rule: each matching request is hit with this probability, until reset.
      if (Math.random() >= rule.probability) return undefined;
      injected++;
      return rule;
    }
    rule.times = (rule.times ?? 1) - 1;
    if (rule.times <= 0) faults = faults.filter((f) => f !== rule);
    injected++;
    return rule;
  }

  /** Applies a fault; returns true when the request must go no further. */
  async function applyFault(rule: FaultRule | undefined, res: http.ServerResponse): Promise<boolean> {
    if (!rule) return false;
    if (rule.kind === 'latency') {
      await new Promise((r) => setTimeout(r, rule.ms ?? 200));
      return false;
    }
    if (rule.kind === 'reset') res.socket?.destroy();
    else if (rule.kind === '500') sendError(res, 500, 'InternalError', 'We encountered an internal error.');
    else if (rule.kind === '409') {
      sendError(
        res,
        409,
        'ConditionalRequestConflict',
        'A conflicting operation occurred. Retry the request.',
      );
    } else sendError(res, 503, 'SlowDown', 'Please reduce your request rate.');
    return true;
  }

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
    if (await applyFault(takeFault(req, false), res)) return;

    const { bucket, key, query: q } = parseTarget(target);
    const id = `${bucket}/${key}`;
    const method = req.method ?? 'GET';

    if (!key) {
      if (q.has('lifecycle')) return lifecycle(bucket, method, req, res);
      if (method === 'POST' && q.has('delete')) return deleteObjects(bucket, req, res);
      return proxy(req, res);
    }
    if (q.has('tagging')) return tagging(id, method, req, res);
    if (q.has('uploads') || q.has('uploadId') || q.has('partNumber')) return proxy(req, res);
    if (method === 'PUT' && req.headers['x-amz-copy-source'])
      return mutex.run(id, () => copyObject(id, req, res));
    if (method === 'PUT') return mutex.run(id, () => putObject(id, req, res));
    if (method === 'DELETE') return mutex.run(id, () => deleteObject(id, req, res));
    // s3rver replaces files in place: a read racing a write of the same key can break off. S3's
    // replace is atomic, so reads wait for the key's writes here.
    return mutex.run(id, () => getObject(id, req, res));
  }

  async function control(path: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const body = req.method === 'POST' ? JSON.parse((await readBody(req)).toString() || '{}') : undefined;
    if (path === 'faults') faults.push(body as FaultRule);
    else if (path === 'delete-failures') deleteFailures.push(...(body as { match: string[] }).match);
    else if (path === 'reset') {
      faults = [];
      deleteFailures = [];
      received = [];
    } else if (path === 'requests') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(received));
      return;
    } else if (path === 'injected') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ injected }));
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

  /** Evaluates If-Match / If-None-Match against the current object; answers and returns false on failure. */
  async function conditionHolds(id: string, headers: http.IncomingHttpHeaders, res: http.ServerResponse) {
    const ifMatch = headers['if-match'];
    const ifNoneMatch = headers['if-none-match'];
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

  async function putObject(id: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    if (!(await conditionHolds(id, req.headers, res))) {
      req.resume();
      return;
    }
    const up = await request(
      upstream,
      'PUT',
      req.url ?? '',
      forwardHeaders(
        req.headers,
        (h) => h.startsWith('if-') || h === 'x-amz-tagging' || h === 'x-amz-storage-class',
      ),
      req,
    );
    if (up.status === 200) {
      extras.set(id, {
        tags: String(req.headers['x-amz-tagging'] ?? ''),
        storageClass: String(req.headers['x-amz-storage-class'] ?? 'STANDARD'),
      });
    }
    await answer(req, res, up);
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
    const up = await request(upstream, 'PUT', `/${encodePath(id)}`, headers, from.body);
    if (up.status !== 200) return answer(req, res, up);
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
    await new Promise<void>((resolve, reject) => {
      const up = http.request(
        {
          ...upstream,
          method: req.method,
          path: req.url,
          headers: forwardHeaders(req.headers, (h) => h === 'if-match'),
        },
        (upRes) => {
          const headers = { ...upRes.headers };
          const extra = extras.get(id);
          if (upRes.statusCode === 200 || upRes.statusCode === 206) {
            const count = extra?.tags ? new URLSearchParams(extra.tags).size : 0;
            if (count > 0) headers['x-amz-tagging-count'] = String(count);
            if (extra && extra.storageClass !== 'STANDARD')
              headers['x-amz-storage-class'] = extra.storageClass;
          }
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
    if (await applyFault(takeFault(req, true), res)) return;
    const headers = { ...up.headers };
    delete headers['transfer-encoding'];
    headers['content-length'] = String(up.body.length);
    res.writeHead(up.status, headers).end(up.body);
  }

  const port = await listen(server);
  return { port, endpoint: `http://127.0.0.1:${port}`, stop: () => close(server) };
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
