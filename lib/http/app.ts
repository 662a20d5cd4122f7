/**
 * Builds the application from the configuration: driver, store, lock, authenticator, logger and
 * metrics, wired into the router. Clients are created once per container.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { type Config, configuredBy, logLevelOf, platformOf } from '../config.js';
import type { BlobStore } from '../contract/blobs.js';
import { MisconfiguredBackendError } from '../contract/errors.js';
import type { SessionLock } from '../contract/lock.js';
import type { MetricsSink, StateStore } from '../contract/types.js';
import type { ObjectStoreDriver } from '../drivers/types.js';
import { type VerifiedDriver, verifiedDriver } from '../store/probe.js';
import { createStateStore } from '../store/store.js';
import { type Authenticator, bearerJwtAuth, platformClaimsAuth } from './auth.js';
import { blobStoreOn } from './backends/blobs.js';
import { metricsLog, metricsRecorder } from './metrics.js';
import { openApiDocument } from './openapi.js';
import { createRouter } from './router.js';
import type { HttpHandler } from './types.js';

/** The application: the router, and what the adapters need around it. */
export interface App {
  readonly handle: HttpHandler;
  readonly logger: Logger;
  readonly metrics: Metrics | undefined;
  /**
   * The driver the object store writes through: its first write waits for the backend probe
   * (probe.ts). Undefined when the store is an engine of its own (STORE_BACKEND=redis or mysql).
   */
  readonly driver: VerifiedDriver | undefined;
  /** The store the router serves. */
  readonly store: StateStore;
  /** An engine store's blob store (BLOB_BACKEND), when it has one: the scheduled sweep sweeps its packs. */
  readonly blobs: BlobStore | undefined;
}

/**
 * An engine of its own (lib/engines/<name>/; STORE_BACKEND or LOCK_BACKEND = redis or mysql): its
 * store and lock, made on one client with the app's metrics (lib/http/backends/engines.ts).
 */
export type EngineParts = (
  metrics: MetricsSink,
  /** Where the engine store keeps workspaces and snapshots (BLOB_BACKEND; lib/contract/blobs.ts). */
  blobs?: BlobStore,
) => {
  readonly store?: StateStore;
  readonly lock?: SessionLock;
};

/**
 * The backends, made by the entry point (each platform bundles only its own SDKs, and loads an
 * engine only when the configuration names one; see lib/http/backends/), and optionally the
 * authenticator and logger (tests).
 */
export interface AppParts {
  /** The object store's driver (not with an engine's store: STORE_BACKEND=redis or mysql). */
  readonly driver?: ObjectStoreDriver;
  /** The lock, when not the engine's (LOCK_BACKEND=redis or mysql). */
  readonly lock?: SessionLock;
  /** The engine the configuration names, if any. */
  readonly engine?: EngineParts | undefined;
  /** An engine store's blob driver (BLOB_BACKEND; lib/http/backends/blobs.ts). */
  readonly blobDriver?: ObjectStoreDriver | undefined;
  readonly auth?: Authenticator;
  readonly logger?: Logger;
}

function authFor(config: Config): Authenticator {
  const options = {
    userClaim: config.AUTH_USER_CLAIM,
    issuer: config.AUTH_ISSUER,
    audience: config.AUTH_AUDIENCE,
  };
  switch (platformOf(config)) {
    case 'aws':
      return platformClaimsAuth(options);
    case 'fc':
      return bearerJwtAuth({ jwksUrl: config.AUTH_JWKS_URL as string }, options);
    case 'local':
      return bearerJwtAuth(
        { secret: config.AUTH_JWT_SECRET ?? '' },
        { ...options, allowAnonymous: config.ALLOW_ANONYMOUS },
      );
  }
}

/** Builds the application. */
export function createApp(config: Config, parts: AppParts): App {
  // The Powertools conventions, read by lib/config.ts (the configuration is the one reader of the
  // environment, so a test's configuration is the whole truth).
  const logger =
    parts.logger ?? new Logger({ serviceName: config.POWERTOOLS_SERVICE_NAME, logLevel: logLevelOf(config) });
  // EMF metrics only where CloudWatch reads them; locally they would only clutter the console.
  const metrics =
    platformOf(config) === 'aws'
      ? new Metrics({
          namespace: config.POWERTOOLS_METRICS_NAMESPACE,
          serviceName: config.POWERTOOLS_SERVICE_NAME,
          logger: metricsLog(logger),
        })
      : undefined;
  const recorder = metricsRecorder(metrics);
  // An engine of its own when the configuration names one; else the object store over the driver
  // the entry point made.
  const blobs = parts.blobDriver
    ? blobStoreOn(config, objectDriver(config, { driver: parts.blobDriver }, recorder, logger), recorder.sink)
    : undefined;
  const engineParts = parts.engine?.(recorder.sink, blobs);
  const engine = engineParts?.store;
  const lock = parts.lock ?? engineParts?.lock;
  if (!lock) throw new Error(`no lock for LOCK_BACKEND=${config.LOCK_BACKEND}`);
  const driver = engine ? undefined : objectDriver(config, parts, recorder, logger);
  const store =
    engine ??
    createStateStore({
      driver: driver as VerifiedDriver,
      prefix: config.STATE_PREFIX,
      retentionDays: config.RETENTION_DAYS,
      keepAliveMs: config.KEEPALIVE_MS,
      stateGraceDays: config.STATE_GRACE_DAYS,
      archiveEncoding: config.ARCHIVE_ENCODING,
      listJson: config.LIST_JSON,
      adoptReference: config.ADOPT_REFERENCE,
      presignExpiresIn: config.PRESIGN_EXPIRES_SECONDS,
      restoreDays: config.RESTORE_DAYS,
      maxValueBytes: config.MAX_VALUE_BYTES,
      metrics: recorder.sink,
    });
  const handle = createRouter({
    store,
    lock,
    auth: parts.auth ?? authFor(config),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    cors: config.CORS_ORIGINS,
    openapi: openApiDocument,
    onResponse: ({ request, route, response, error, ms }) => {
      const code =
        response.status >= 400 ? (JSON.parse(response.body ?? '{}') as { code?: string }).code : undefined;
      // No bodies, no tokens, no ids: the route pattern, the outcome, the time.
      const entry = {
        requestId: request.requestId,
        platformRequestId: request.platformRequestId,
        route,
        status: response.status,
        code,
        ms: Math.round(ms),
      };
      // `error` is what toProblem says to log (of a readiness check's failure: what failed).
      // A deployment problem: one line naming the resource and what configures it, no stack.
      if (error instanceof MisconfiguredBackendError)
        logger.error(`${error.message}: check ${configuredBy(config, error.backend, error.resource)}`, entry);
      else if (error) logger.error('request failed', { ...entry, error: error as Error });
      else logger.info('request', entry);
      recorder.request(route, response.status, ms, code);
    },
  });
  return { handle, logger, metrics, driver, store, blobs };
}

/** The object store's driver, verified before its first write (probe.ts). */
function objectDriver(
  config: Config,
  parts: Pick<AppParts, 'driver'>,
  recorder: ReturnType<typeof metricsRecorder>,
  logger: Logger,
): VerifiedDriver {
  if (!parts.driver) throw new Error(`no driver for STORE_BACKEND=${config.STORE_BACKEND}`);
  return verifiedDriver(parts.driver, {
    prefix: config.STATE_PREFIX,
    onOutcome: recorder.probe,
    onUnsafe: (error) =>
      logger.error('the storage backend does not honour write conditions; every write is refused', {
        backend: error.backend,
        guarantee: error.guarantee,
      }),
  });
}
