/**
 * One source of truth for expiry and archival, rendered for S3 (API and CloudFormation) and for OSS
 * (API and ROS). Rules select objects by the `kind` tag every object carries (DESIGN.md), because a
 * lifecycle prefix can only match the start of a name:
 * - `kind=marker` (session markers, tombstones) expire after the retention: a session without
 *   activity for that long is gone (the store already treats an over-age marker as absent);
 * - `kind=state` expires `stateGraceDays` later, so a session's state never outlives its marker by
 *   less than that (keep-alive refreshes the old state objects of active sessions, see the store);
 * - `kind=archive` moves to a cold class and expires on its own schedule;
 * - `kind=workspace` likewise, with its own class and days;
 * - `kind=pack` objects (workspace snapshots) never move and never expire by age; only those the
 *   sweep tagged `gc=1` as well expire, `packGraceDays` after the tagging (docs/DESIGN.md,
 *   "Workspace snapshots");
 * - incomplete multipart uploads are aborted after `abortMultipartDays`.
 * No rule selects `kind=memory`, the tag of the memory session's markers and state
 * (lib/contract/ids.ts, `MEMORY_SESSION`): long-term memory is never expired.
 */
import { DEFAULTS } from '../contract/defaults.js';

/** Backends that have lifecycle rules. */
export type LifecycleBackend = 's3' | 'oss';

/** The lifecycle configuration. */
export interface LifecycleConfig {
  /** Days a session lives without activity; default 30. */
  readonly retentionDays: number;
  /** Extra days state objects outlive their marker; default 2. */
  readonly stateGraceDays: number;
  /** Days after which archives move to `archiveStorageClass`; default 30. */
  readonly archiveTransitionDays: number;
  /** S3: STANDARD_IA, GLACIER_IR, GLACIER, DEEP_ARCHIVE; OSS: IA, Archive, ColdArchive. Default per backend. */
  readonly archiveStorageClass?: string;
  /** Days archives are kept; default 365. */
  readonly archiveRetentionDays: number;
  /** Days after which workspaces move to `workspaceStorageClass`; default 30. */
  readonly workspaceTransitionDays: number;
  readonly workspaceStorageClass?: string;
  /** Days workspaces are kept; default 180. */
  readonly workspaceRetentionDays: number;
  /** Days before an incomplete multipart upload is aborted; default 7. */
  readonly abortMultipartDays: number;
  /** Days a workspace pack tagged `gc=1` by the sweep is kept; default 7. */
  readonly packGraceDays: number;
  /** Prefix the rules apply to (the store's prefix); default `agent-state/`. */
  readonly prefix: string;
}

export const DEFAULT_LIFECYCLE: LifecycleConfig = {
  retentionDays: DEFAULTS.retentionDays,
  stateGraceDays: DEFAULTS.stateGraceDays,
  archiveTransitionDays: DEFAULTS.archiveTransitionDays,
  archiveRetentionDays: DEFAULTS.archiveRetentionDays,
  workspaceTransitionDays: DEFAULTS.workspaceTransitionDays,
  workspaceRetentionDays: DEFAULTS.workspaceRetentionDays,
  abortMultipartDays: DEFAULTS.abortMultipartDays,
  packGraceDays: DEFAULTS.packGraceDays,
  prefix: DEFAULTS.prefix,
};

const CLASSES: Record<
  LifecycleBackend,
  { values: readonly string[]; default: string; minDays: Record<string, number> }
> = {
  // https://docs.aws.amazon.com/AmazonS3/latest/userguide/lifecycle-transition-general-considerations.html
  s3: {
    values: ['STANDARD_IA', 'GLACIER_IR', 'GLACIER', 'DEEP_ARCHIVE'],
    default: 'GLACIER_IR',
    minDays: { STANDARD_IA: 30 },
  },
  oss: { values: ['IA', 'Archive', 'ColdArchive'], default: 'Archive', minDays: {} },
};

/** The storage classes a backend's rules may move objects to, and its default. */
export function storageClassesOf(backend: LifecycleBackend): { values: readonly string[]; default: string } {
  return { values: CLASSES[backend].values, default: CLASSES[backend].default };
}

/** A configuration mistake, naming the setting. */
export class LifecycleConfigError extends Error {
  override name = 'LifecycleConfigError';
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(`${setting}: ${message}`);
  }
}

/** One rule, before rendering. */
export interface LifecycleRule {
  readonly id: string;
  /** The `kind` tag the rule selects; none for the multipart rule. */
  readonly kind?: 'marker' | 'state' | 'archive' | 'workspace' | 'pack';
  /** Tags the rule selects beside `kind` (the sweep's `gc=1`). */
  readonly tags?: Readonly<Record<string, string>>;
  readonly expirationDays?: number;
  readonly transition?: { days: number; storageClass: string };
  readonly abortMultipartDays?: number;
}

/** Checks the configuration for a backend (its classes and minimums); returns the rules. */
export function lifecycleRules(
  backend: LifecycleBackend,
  partial: Partial<LifecycleConfig> = {},
): LifecycleRule[] {
  const c = { ...DEFAULT_LIFECYCLE, ...partial };
  const classes = CLASSES[backend];
  const positive = (name: keyof LifecycleConfig) => {
    const value = c[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw new LifecycleConfigError(name, 'must be a whole number of days, at least 1');
    }
  };
  for (const name of [
    'retentionDays',
    'stateGraceDays',
    'archiveTransitionDays',
    'archiveRetentionDays',
    'workspaceTransitionDays',
    'workspaceRetentionDays',
    'abortMultipartDays',
    'packGraceDays',
  ] as const) {
    positive(name);
  }
  const archiveClass = c.archiveStorageClass ?? classes.default;
  const workspaceClass = c.workspaceStorageClass ?? classes.default;
  for (const [setting, cls, days, expires] of [
    ['archiveStorageClass', archiveClass, c.archiveTransitionDays, c.archiveRetentionDays],
    ['workspaceStorageClass', workspaceClass, c.workspaceTransitionDays, c.workspaceRetentionDays],
  ] as const) {
    if (!classes.values.includes(cls)) {
      throw new LifecycleConfigError(
        setting,
        `${backend} has no class ${cls}; use one of ${classes.values.join(', ')}`,
      );
    }
    const min = classes.minDays[cls] ?? 0;
    if (days < min)
      throw new LifecycleConfigError(setting, `${backend} refuses a ${cls} transition before ${min} days`);
    if (expires <= days) throw new LifecycleConfigError(setting, 'objects must expire after they transition');
  }
  return [
    { id: 'session-markers', kind: 'marker', expirationDays: c.retentionDays },
    { id: 'session-state', kind: 'state', expirationDays: c.retentionDays + c.stateGraceDays },
    {
      id: 'archives',
      kind: 'archive',
      transition: { days: c.archiveTransitionDays, storageClass: archiveClass },
      expirationDays: c.archiveRetentionDays,
    },
    {
      id: 'workspaces',
      kind: 'workspace',
      transition: { days: c.workspaceTransitionDays, storageClass: workspaceClass },
      expirationDays: c.workspaceRetentionDays,
    },
    { id: 'workspace-packs-gc', kind: 'pack', tags: { gc: '1' }, expirationDays: c.packGraceDays },
    { id: 'abort-incomplete-uploads', abortMultipartDays: c.abortMultipartDays },
  ];
}

/** The tags a rule selects: `kind` first, then its others. */
const tagsOf = (r: LifecycleRule): Array<[string, string]> => [
  ['kind', r.kind as string],
  ...Object.entries(r.tags ?? {}),
];

/** The S3 `PutBucketLifecycleConfiguration` body (SDK shape). */
export function renderS3(rules: readonly LifecycleRule[], prefix = DEFAULT_LIFECYCLE.prefix) {
  return {
    Rules: rules.map((r) => ({
      ID: r.id,
      Status: 'Enabled' as const,
      Filter: r.kind
        ? { And: { Prefix: prefix, Tags: tagsOf(r).map(([Key, Value]) => ({ Key, Value })) } }
        : { Prefix: prefix },
      ...(r.expirationDays ? { Expiration: { Days: r.expirationDays } } : {}),
      ...(r.transition
        ? { Transitions: [{ Days: r.transition.days, StorageClass: r.transition.storageClass }] }
        : {}),
      ...(r.abortMultipartDays
        ? { AbortIncompleteMultipartUpload: { DaysAfterInitiation: r.abortMultipartDays } }
        : {}),
    })),
  };
}

/** The same rules as a CloudFormation `AWS::S3::Bucket` `LifecycleConfiguration`. */
export function renderCloudFormation(rules: readonly LifecycleRule[], prefix = DEFAULT_LIFECYCLE.prefix) {
  return {
    Rules: rules.map((r) => ({
      Id: r.id,
      Status: 'Enabled',
      Prefix: prefix,
      ...(r.kind ? { TagFilters: tagsOf(r).map(([Key, Value]) => ({ Key, Value })) } : {}),
      ...(r.expirationDays ? { ExpirationInDays: r.expirationDays } : {}),
      ...(r.transition
        ? { Transitions: [{ TransitionInDays: r.transition.days, StorageClass: r.transition.storageClass }] }
        : {}),
      ...(r.abortMultipartDays
        ? { AbortIncompleteMultipartUpload: { DaysAfterInitiation: r.abortMultipartDays } }
        : {}),
    })),
  };
}

/** The ali-oss `putBucketLifecycle` rules. */
export function renderOss(rules: readonly LifecycleRule[], prefix = DEFAULT_LIFECYCLE.prefix) {
  return rules.map((r) => ({
    id: r.id,
    prefix,
    status: 'Enabled' as const,
    ...(r.kind ? { tag: tagsOf(r).map(([key, value]) => ({ key, value })) } : {}),
    ...(r.expirationDays ? { expiration: { days: r.expirationDays } } : {}),
    ...(r.transition
      ? { transition: { days: r.transition.days, storageClass: r.transition.storageClass } }
      : {}),
    ...(r.abortMultipartDays ? { abortMultipartUpload: { days: r.abortMultipartDays } } : {}),
  }));
}

/** The same rules as a ROS `ALIYUN::OSS::Bucket` `LifecycleConfiguration`. */
export function renderRos(rules: readonly LifecycleRule[], prefix = DEFAULT_LIFECYCLE.prefix) {
  return {
    Rule: rules.map((r) => ({
      ID: r.id,
      Prefix: prefix,
      Status: 'Enabled',
      ...(r.kind ? { Tag: tagsOf(r).map(([Key, Value]) => ({ Key, Value })) } : {}),
      ...(r.expirationDays ? { Expiration: { Days: r.expirationDays } } : {}),
      ...(r.transition
        ? { Transition: [{ Days: r.transition.days, StorageClass: r.transition.storageClass }] }
        : {}),
      ...(r.abortMultipartDays ? { AbortMultipartUpload: { Days: r.abortMultipartDays } } : {}),
    })),
  };
}

/** The configuration from the environment (the same variables the functions read). */
export function lifecycleFromEnv(
  env: Record<string, string | undefined> = process.env,
): Partial<LifecycleConfig> {
  const n = (name: string) => (env[name] === undefined || env[name] === '' ? undefined : Number(env[name]));
  const out: Record<string, unknown> = {
    retentionDays: n('RETENTION_DAYS'),
    stateGraceDays: n('STATE_GRACE_DAYS'),
    archiveTransitionDays: n('ARCHIVE_TRANSITION_DAYS'),
    archiveStorageClass: env.ARCHIVE_STORAGE_CLASS || undefined,
    archiveRetentionDays: n('ARCHIVE_RETENTION_DAYS'),
    workspaceTransitionDays: n('WORKSPACE_TRANSITION_DAYS'),
    workspaceStorageClass: env.WORKSPACE_STORAGE_CLASS || undefined,
    workspaceRetentionDays: n('WORKSPACE_RETENTION_DAYS'),
    abortMultipartDays: n('ABORT_MULTIPART_DAYS'),
    packGraceDays: n('PACK_GRACE_DAYS'),
    prefix: env.STATE_PREFIX || undefined,
  };
  return Object.fromEntries(
    Object.entries(out).filter(([, v]) => v !== undefined),
  ) as Partial<LifecycleConfig>;
}
