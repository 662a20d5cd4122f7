/** The typed errors only the HTTP protocol raises (the store's own are in lib/store/errors.ts). */
import { BackendError, StoreError } from '../store/errors.js';

/** The request had no valid identity (401). */
export class UnauthorizedError extends StoreError {
  override name = 'UnauthorizedError';
}

/** The request or the answer was too large (413). */
export class PayloadTooLargeError extends StoreError {
  override name = 'PayloadTooLargeError';
  constructor(
    message: string,
    readonly limit?: number,
  ) {
    super(message);
  }
}

/**
 * An answer that is not one the protocol allows for the request: a body that is not JSON or not of
 * the declared schema, a status the route never answers, a route or method the server does not know
 * (a proxy's page, a server of another version). Retrying does not help.
 */
export class ProtocolError extends BackendError {
  override name = 'ProtocolError';
  constructor(
    message: string,
    /** The answer's HTTP status. */
    readonly status: number,
    options?: { cause?: unknown },
  ) {
    super(message, false, options);
  }
}
