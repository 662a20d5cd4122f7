/**
 * The defaults of every setting several parts read: the store's options, the server's configuration
 * (lib/config.ts), the lock, the lifecycle rules and the deployment templates' generator
 * (lib/lifecycle/deployment.ts) all take their default from here, so a default is written once.
 */

import { MIB } from '../util/units.js';

export const DEFAULTS = {
  /** Prefix of every object name. */
  prefix: 'agent-state/',
  /** Days a session lives after its last activity (its marker expires then; the lock item a day later). */
  retentionDays: 30,
  /** Days state objects outlive their session marker under the lifecycle rules. */
  stateGraceDays: 2,
  /** Keep-alive interval: the marker and old state objects are refreshed at most once per this (1 hour). */
  keepAliveMs: 3_600_000,
  /** Days after which list archives move to the archive storage class. */
  archiveTransitionDays: 30,
  /** Days list archives are kept. */
  archiveRetentionDays: 365,
  /** Days after which workspaces move to the workspace storage class. */
  workspaceTransitionDays: 30,
  /** Days workspaces are kept. */
  workspaceRetentionDays: 180,
  /** Days before an incomplete multipart upload is aborted. */
  abortMultipartDays: 7,
  /** Days a workspace pack the sweep tagged `gc=1` is kept before a lifecycle rule deletes it. */
  packGraceDays: 7,
  /** Clock skew the DynamoDB lock allows between its callers, in ms. */
  lockClockSkewMs: 500,
  /** Seconds a presigned URL stays valid. */
  presignExpiresSeconds: 900,
  /** Days a restored copy of an archived object stays readable. */
  restoreDays: 1,
  /** Largest request body and answer (`BODY_LIMIT_BYTES`): Lambda's 6 MB counts the whole event. */
  bodyLimitBytes: 4 * MIB,
  /** Largest single value committed from a direct upload. */
  maxValueBytes: 64 * MIB,
  /** How archived lists are stored. */
  archiveEncoding: 'gzip',
  /** Whether each list's whole array is kept as `<key>.list.json` too (`reference`: the reference's layout). */
  listJson: 'off',
  adoptReference: false,
  /** The service the logs and metrics name (`POWERTOOLS_SERVICE_NAME`). */
  serviceName: 'agent-state',
  /** The CloudWatch namespace of the EMF metrics (`POWERTOOLS_METRICS_NAMESPACE`). */
  metricsNamespace: 'AgentState',
  /** The log level when no variable sets one (`LOG_LEVEL`, `POWERTOOLS_LOG_LEVEL`, `AWS_LAMBDA_LOG_LEVEL`). */
  logLevel: 'INFO',
} as const;
