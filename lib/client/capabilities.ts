/**
 * What the server's backend can do (`GET /v1/capabilities`), read once per client: the first call
 * asks, every later one answers from that answer (a failed read is asked again next time).
 */

import type { StoreCapabilities } from '../contract/types.js';
import { paths } from '../protocol/paths.js';
import { schemas } from '../protocol/schemas.js';
import { bodyOf, fail, type Requests } from './requests.js';
import type { CallOptions } from './types.js';

/** The capabilities call of the client. */
export class Capabilities {
  private known: Promise<StoreCapabilities> | undefined;

  constructor(private readonly requests: Requests) {}

  capabilities(o?: CallOptions): Promise<StoreCapabilities> {
    this.known ??= this.read(o).catch((error: unknown) => {
      this.known = undefined;
      throw error;
    });
    return this.known;
  }

  private async read(o: CallOptions | undefined): Promise<StoreCapabilities> {
    const response = await this.requests.call('GET', paths.capabilities(), { call: o });
    if (response.status !== 200) return fail(response);
    return bodyOf(response, schemas.Capabilities, 'capabilities');
  }
}
