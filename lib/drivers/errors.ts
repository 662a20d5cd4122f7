/** Typed errors every driver throws, whatever its backend says. */
import type { BackendResource } from '../contract/errors.js';

export type { BackendResource };

/** Base class: `backend` names the driver, `cause` keeps the backend's own error. */
export class ObjectStoreError extends Error {
  override name = 'ObjectStoreError';
  /** True when retrying the same call may succeed (5xx, throttling, a reset connection). */
  readonly retryable: boolean;
  constructor(
    message: string,
    readonly backend: string,
    options?: { cause?: unknown; retryable?: boolean },
  ) {
    super(message, { cause: options?.cause });
    this.retryable = options?.retryable ?? false;
  }
}

/** The object does not exist. */
export class ObjectNotFoundError extends ObjectStoreError {
  override name = 'ObjectNotFoundError';
  constructor(
    readonly key: string,
    backend: string,
    options?: { cause?: unknown },
  ) {
    super(`object not found: ${key}`, backend, options);
  }
}

/**
 * An `ifMatch` / `ifNoneMatch` condition, or the position of an `append`, did not hold; nothing was
 * written. After an `append` at a wrong position, `nextPosition` is the object's current length
 * (OSS's `x-oss-next-append-position`; 0 when the object is absent), where the backend said it.
 */
export class ObjectConditionFailedError extends ObjectStoreError {
  override name = 'ObjectConditionFailedError';
  /** `append` only: the object's current length, the position the next append must give. */
  readonly nextPosition?: number;
  constructor(
    readonly key: string,
    backend: string,
    options?: { cause?: unknown; nextPosition?: number },
  ) {
    super(
      `precondition failed: ${key}${options?.nextPosition === undefined ? '' : ` (next append position ${options.nextPosition})`}`,
      backend,
      options,
    );
    if (options?.nextPosition !== undefined) this.nextPosition = options.nextPosition;
  }
}

/**
 * `append` met an existing object that is not appendable (one written by `put`, `copy` or a
 * multipart upload; OSS answers 409 ObjectNotAppendable). Nothing was written. It is a failed
 * condition (the append presumed an appendable object of that length), so callers that handle
 * `ObjectConditionFailedError` stay safe; it carries no `nextPosition`, since no position can succeed
 * until the object is deleted or replaced.
 */
export class ObjectNotAppendableError extends ObjectConditionFailedError {
  override name = 'ObjectNotAppendableError';
  constructor(key: string, backend: string, options?: { cause?: unknown }) {
    super(key, backend, options);
    this.message = `object is not appendable: ${key}`;
  }
}

/** The backend cannot do what was asked (see `capabilities`); nothing was written. */
export class UnsupportedError extends ObjectStoreError {
  override name = 'UnsupportedError';
  constructor(
    readonly capability: string,
    backend: string,
  ) {
    super(`${backend} does not support ${capability}`, backend);
  }
}

/** The arguments were refused before any request was made. */
export class InvalidArgumentError extends ObjectStoreError {
  override name = 'InvalidArgumentError';
}

/**
 * `get({ range })` asked for bytes the object does not have: a `start` at or past its size, or any
 * range of an empty object (HTTP 416 `InvalidRange`). Nothing was read.
 */
export class RangeNotSatisfiableError extends ObjectStoreError {
  override name = 'RangeNotSatisfiableError';
  constructor(
    readonly key: string,
    backend: string,
    /** The object's size, where the backend said it (`Content-Range: bytes *\/size`). */
    readonly size?: number,
    options?: { cause?: unknown },
  ) {
    super(`range not satisfiable: ${key}${size === undefined ? '' : ` (size ${size})`}`, backend, options);
  }
}

/** The object is in an archive class and must be restored before it can be read (`restore`). */
export class ObjectArchivedError extends ObjectStoreError {
  override name = 'ObjectArchivedError';
  constructor(
    readonly key: string,
    backend: string,
    options?: { cause?: unknown },
  ) {
    super(`object is archived and not restored: ${key}`, backend, options);
  }
}

/**
 * A resource the backend needs is missing or refuses us (no such bucket or table, access denied,
 * credentials refused): nothing a request did, and nothing retrying fixes until the deployment is.
 * Not retryable: the call surely did not happen.
 */
export class UnavailableResourceError extends ObjectStoreError {
  override name = 'UnavailableResourceError';
  /** The bucket's name, where the driver knows it. */
  readonly resourceName?: string;
  /** Who the backend refused (`callerIdentity` in lib/util/identity.ts), where known. */
  readonly identity?: string;
  constructor(
    readonly resource: BackendResource,
    backend: string,
    /** The backend's own code, e.g. `NoSuchBucket`, `AccessDenied`. */
    readonly code: string,
    options?: { cause?: unknown; resourceName?: string | undefined; identity?: string | undefined },
  ) {
    super(unavailableMessage(resource, backend, code, options), backend, {
      cause: options?.cause,
      retryable: false,
    });
    if (options?.resourceName !== undefined) this.resourceName = options.resourceName;
    if (options?.identity !== undefined) this.identity = options.identity;
  }
}

/**
 * `s3 bucket b does not exist (NoSuchBucket)`, `s3 bucket b refused access (AccessDenied)`,
 * `s3 refused the credentials (InvalidAccessKeyId)`, each followed by `; credentials: <identity>`
 * where it is known.
 */
function unavailableMessage(
  resource: BackendResource,
  backend: string,
  code: string,
  options?: { resourceName?: string | undefined; identity?: string | undefined },
): string {
  const missing = code.startsWith('NoSuch') || code === 'ResourceNotFoundException';
  const what =
    resource === 'credentials'
      ? `${backend} refused the credentials`
      : `${backend} ${resource}${options?.resourceName ? ` ${options.resourceName}` : ''} ${missing ? 'does not exist' : 'refused access'}`;
  return `${what} (${code})${options?.identity ? `; credentials: ${options.identity}` : ''}`;
}
