/**
 * The client's single values: read (one too large for an answer is followed to where it is
 * stored), saved (one too large for a request body is uploaded straight to the store and
 * committed; a conditional save whose answer was lost is checked), deleted.
 */

import { RestoreInProgressError } from '../contract/errors.js';
import { canonicalJson } from '../contract/hash.js';
import type { SaveOptions, ValueWritten, Versioned, WriteOptions } from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { schemas } from '../protocol/schemas.js';
import { utf8Bytes, utf8Length } from '../util/bytes.js';
import {
  answered,
  bodyOf,
  conditions,
  fail,
  fence,
  hiddenRedirect,
  type Requests,
  versionOf,
} from './requests.js';
import type { Transfers } from './transfers.js';
import type { CallOptions } from './types.js';

/** The value calls of the client. */
export class Values {
  constructor(
    private readonly requests: Requests,
    private readonly transfers: Transfers,
  ) {}

  async get<T>(sessionId: string, key: string, o?: CallOptions) {
    return (await this.getVersioned<T>(sessionId, key, o))?.value;
  }

  async getVersioned<T>(sessionId: string, key: string, o?: CallOptions): Promise<Versioned<T> | undefined> {
    const response = await this.requests.call('GET', paths.value(sessionId, key), { call: o });
    if (response.status === 404) return undefined;
    if (response.status === 202) throw await answered(new RestoreInProgressError(`value ${key}`), response);
    if (response.status === 303 || hiddenRedirect(response)) {
      // Where fetch hid the 303 (a browser), a snapshot names the value's location instead.
      const located = hiddenRedirect(response)
        ? await this.transfers.snapshotValue(sessionId, key, o)
        : await bodyOf(response, schemas.ValueLocation, 'get');
      if (!located) return undefined;
      const version = { version: located.etag, revision: located.revision };
      if (!('download' in located)) return { value: located.value as T, ...version };
      return { value: await this.requests.readStored<T>(located.download, o), ...version };
    }
    if (response.status !== 200) return fail(response);
    const version = versionOf(response, 'get');
    // Any JSON value is a value: the schema only checks that the answer is JSON.
    return { value: (await bodyOf(response, schemas.Value, 'get')) as T, ...version };
  }

  async save(
    sessionId: string,
    key: string,
    value: unknown,
    o: SaveOptions & CallOptions = {},
  ): Promise<ValueWritten> {
    const text = JSON.stringify(value);
    if (text !== undefined && utf8Length(text) > this.requests.bodyLimit - 1024) {
      // Too large for a request body: upload it straight to the store, then commit it as a save.
      return this.transfers.uploadValue(sessionId, key, utf8Bytes(text), o);
    }
    const retried = { lost: false };
    const response = await this.requests.call('PUT', paths.value(sessionId, key), {
      body: value,
      headers: conditions(o),
      call: o,
      retried,
    });
    if (response.status === 412 && retried.lost) {
      // A conditional save whose answer was lost may have landed: then the value is ours.
      const now = await this.getVersioned(sessionId, key, o);
      if (now && canonicalJson(now.value) === canonicalJson(JSON.parse(text ?? 'null'))) {
        return { version: now.version, revision: now.revision };
      }
    }
    if (response.status !== 200) return fail(response);
    const { etag, revision } = await bodyOf(response, schemas.Saved, 'save');
    return { version: etag, revision };
  }

  async deleteKey(sessionId: string, key: string, o?: WriteOptions & CallOptions): Promise<void> {
    const response = await this.requests.call('DELETE', paths.value(sessionId, key), {
      headers: fence(o),
      call: o,
    });
    if (response.status !== 204) await fail(response);
  }
}
