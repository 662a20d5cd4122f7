/**
 * The lifecycle settings that are deployment parameters. One table feeds both the functions'
 * environment and the bucket's rules, on both clouds:
 * - AWS: serverless.yml's `params` (`--param retentionDays=7`), read at package time by
 *   infra/aws/deployment.cjs with osls's `resolveVariable`, checked here and rendered into the
 *   bucket's `LifecycleConfiguration`; the same parameters are the functions' environment;
 * - Alibaba Cloud: ROS has no package step, so `npm run infra` writes the table into
 *   infra/aliyun/ros.yaml as Parameters (MinValue, MaxValue, AllowedValues), Rules (the checks
 *   across parameters) and the rules and environment as intrinsic functions of the parameters
 *   (`Fn::Add` for the state days). ROS's ALIYUN::OSS::Bucket cannot select lifecycle rules by
 *   tag (its rules have a prefix and an exclusion filter only), so the rules go to a custom
 *   resource whose function puts them with OSS's own API (functions/aliyun/lifecycle.ts).
 * Invalid combinations are refused with the parameter's name, as the store would refuse them at
 * start (keep-alive against the grace and the retention) and as the provider would (S3's 30 days
 * before STANDARD_IA, objects expiring before they move).
 */

import { DEFAULTS } from '../contract/defaults.js';
import { DAY_MS } from '../util/units.js';
import {
  DEFAULT_LIFECYCLE,
  type LifecycleBackend,
  type LifecycleConfig,
  LifecycleConfigError,
  type LifecycleRule,
  lifecycleRules,
  renderOss,
  storageClassesOf,
} from './index.js';

/** One deployment parameter. */
export interface DeploymentParameter {
  /** The AWS stack parameter (`--param <name>=<value>`); the `LifecycleConfig` key where it is one. */
  readonly name: string;
  /** The ROS template parameter. */
  readonly ros: string;
  /** The functions' environment variable (lib/config.ts and lifecycleFromEnv read the same names). */
  readonly env: string;
  /** A whole number in [min, max], or one of the backend's storage classes. */
  readonly kind: 'integer' | 'storageClass';
  readonly min?: number;
  readonly max?: number;
  /** Integers only; a storage class defaults to the backend's default class. */
  readonly default?: number;
  readonly description: string;
}

const days = (
  name: keyof LifecycleConfig,
  ros: string,
  env: string,
  description: string,
  max = 36_500,
): DeploymentParameter => ({
  name,
  ros,
  env,
  kind: 'integer',
  min: 1,
  max,
  default: DEFAULT_LIFECYCLE[name] as number,
  description,
});

/** Every lifecycle setting that is a deployment parameter. */
export const DEPLOYMENT_PARAMETERS: readonly DeploymentParameter[] = [
  days('retentionDays', 'RetentionDays', 'RETENTION_DAYS', 'Days a session lives without activity'),
  days(
    'stateGraceDays',
    'StateGraceDays',
    'STATE_GRACE_DAYS',
    'Days state objects outlive their session marker',
    30,
  ),
  {
    name: 'keepAliveMs',
    ros: 'KeepAliveMs',
    env: 'KEEPALIVE_MS',
    kind: 'integer',
    min: 1000,
    max: 7 * DAY_MS,
    default: DEFAULTS.keepAliveMs,
    description: 'Keep-alive interval: the marker and old state are refreshed at most once per interval',
  },
  days(
    'archiveTransitionDays',
    'ArchiveTransitionDays',
    'ARCHIVE_TRANSITION_DAYS',
    'Days after which list archives move to the archive storage class',
  ),
  {
    name: 'archiveStorageClass',
    ros: 'ArchiveStorageClass',
    env: 'ARCHIVE_STORAGE_CLASS',
    kind: 'storageClass',
    description: 'Storage class list archives move to',
  },
  days(
    'archiveRetentionDays',
    'ArchiveRetentionDays',
    'ARCHIVE_RETENTION_DAYS',
    'Days list archives are kept',
  ),
  days(
    'workspaceTransitionDays',
    'WorkspaceTransitionDays',
    'WORKSPACE_TRANSITION_DAYS',
    'Days after which workspaces move to the workspace storage class',
  ),
  {
    name: 'workspaceStorageClass',
    ros: 'WorkspaceStorageClass',
    env: 'WORKSPACE_STORAGE_CLASS',
    kind: 'storageClass',
    description: 'Storage class workspaces move to',
  },
  days(
    'workspaceRetentionDays',
    'WorkspaceRetentionDays',
    'WORKSPACE_RETENTION_DAYS',
    'Days workspaces are kept',
  ),
  days(
    'abortMultipartDays',
    'AbortMultipartDays',
    'ABORT_MULTIPART_DAYS',
    'Days before an incomplete multipart upload is aborted',
  ),
  days(
    'packGraceDays',
    'PackGraceDays',
    'PACK_GRACE_DAYS',
    'Days a workspace pack the sweep tagged gc=1 is kept before it is deleted',
  ),
];

/** A deployment parameter (or a combination) refused; `parameter` is the one to change. */
export class DeploymentParameterError extends Error {
  override name = 'DeploymentParameterError';
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(`parameter ${parameter}: ${message}`);
  }
}

/** What a valid set of parameters deploys. */
export interface DeploymentSettings {
  /** Every parameter's value, defaults filled in. */
  readonly values: Readonly<Record<string, number | string>>;
  /** The lifecycle configuration of the bucket. */
  readonly lifecycle: Partial<LifecycleConfig>;
  /** The bucket's rules (render them with renderCloudFormation, renderS3, renderOss, renderRos). */
  readonly rules: LifecycleRule[];
  /** The functions' environment for these parameters. */
  readonly env: Readonly<Record<string, string>>;
}

const parameter = (name: string) => {
  const found = DEPLOYMENT_PARAMETERS.find((p) => p.name === name);
  if (!found) throw new Error(`no deployment parameter ${name}`);
  return found;
};

/**
 * Checks the given parameters (strings or numbers, as a CLI or a template passes them; absent or
 * empty means the default) for a backend and returns what they deploy; throws a
 * `DeploymentParameterError` naming the parameter otherwise.
 */
export function deploymentSettings(
  backend: LifecycleBackend,
  given: Readonly<Record<string, unknown>> = {},
): DeploymentSettings {
  const values: Record<string, number | string> = {};
  for (const p of DEPLOYMENT_PARAMETERS) {
    const raw = given[p.name];
    const absent = raw === undefined || raw === null || raw === '';
    if (p.kind === 'storageClass') {
      const classes = storageClassesOf(backend);
      const value = absent ? classes.default : String(raw);
      if (!classes.values.includes(value)) {
        throw new DeploymentParameterError(
          p.name,
          `${backend} has no storage class ${JSON.stringify(value)}; use one of ${classes.values.join(', ')}`,
        );
      }
      values[p.name] = value;
    } else {
      const value = absent ? (p.default as number) : typeof raw === 'number' ? raw : Number(String(raw));
      const [min, max] = [p.min as number, p.max as number];
      if (!Number.isInteger(value) || value < min || value > max) {
        throw new DeploymentParameterError(
          p.name,
          `must be a whole number from ${min} to ${max}, not ${JSON.stringify(raw)}`,
        );
      }
      values[p.name] = value;
    }
  }
  const n = (name: string) => values[name] as number;
  // The store refuses a grace not well over the keep-alive (lib/store/store.ts); a retention under it
  // would let an active session's marker expire between two refreshes.
  for (const over of ['stateGraceDays', 'retentionDays']) {
    if (n(over) * DAY_MS <= 2 * n('keepAliveMs')) {
      throw new DeploymentParameterError(
        'keepAliveMs',
        `${n('keepAliveMs')} ms must be under half of ${over} (${n(over)} days)`,
      );
    }
  }
  const lifecycle: Partial<LifecycleConfig> = {
    retentionDays: n('retentionDays'),
    stateGraceDays: n('stateGraceDays'),
    archiveTransitionDays: n('archiveTransitionDays'),
    archiveStorageClass: values.archiveStorageClass as string,
    archiveRetentionDays: n('archiveRetentionDays'),
    workspaceTransitionDays: n('workspaceTransitionDays'),
    workspaceStorageClass: values.workspaceStorageClass as string,
    workspaceRetentionDays: n('workspaceRetentionDays'),
    abortMultipartDays: n('abortMultipartDays'),
  };
  let rules: LifecycleRule[];
  try {
    rules = lifecycleRules(backend, lifecycle);
  } catch (error) {
    if (!(error instanceof LifecycleConfigError)) throw error;
    const family = error.setting.startsWith('workspace') ? 'workspace' : 'archive';
    const context = [`${family}TransitionDays`, `${family}StorageClass`, `${family}RetentionDays`]
      .map((name) => `${name}=${values[name]}`)
      .join(', ');
    throw new DeploymentParameterError(
      error.setting,
      `${error.message.slice(error.setting.length + 2)} (${context})`,
    );
  }
  const env = Object.fromEntries(DEPLOYMENT_PARAMETERS.map((p) => [p.env, String(values[p.name])]));
  return { values, lifecycle, rules, env };
}

// ROS: the same table as template parameters, rules and intrinsic functions.

const ref = (name: string) => ({ Ref: parameter(name).ros });

/** The ROS `Parameters` of the table, for OSS's storage classes. */
export function rosParameters(): Record<string, Record<string, unknown>> {
  const classes = storageClassesOf('oss');
  return Object.fromEntries(
    DEPLOYMENT_PARAMETERS.map((p) => [
      p.ros,
      p.kind === 'storageClass'
        ? {
            Type: 'String',
            Default: classes.default,
            AllowedValues: [...classes.values],
            Description: `${p.description} (${p.env})`,
          }
        : {
            Type: 'Number',
            Default: p.default,
            MinValue: p.min,
            MaxValue: p.max,
            Description: `${p.description} (${p.env})`,
          },
    ]),
  );
}

/** ROS has no comparison function: `a > b` is `max(a, b) != b`. */
const greater = (a: unknown, b: unknown) => ({ 'Fn::Not': [{ 'Fn::Equals': [{ 'Fn::Max': [a, b] }, b] }] });

/** The ROS `Rules`: the checks across parameters that deploymentSettings makes for OSS. */
export function rosRules(): Record<string, unknown> {
  const halfDays = (name: string) => ({
    'Fn::Calculate': [`{0}*${DAY_MS / 2}`, 0, [ref(name)]],
  });
  const expiresAfterMoving = (family: 'archive' | 'workspace') => ({
    Assertions: [
      {
        Assert: greater(ref(`${family}RetentionDays`), ref(`${family}TransitionDays`)),
        AssertDescription: `${parameter(`${family}RetentionDays`).ros} must be more than ${parameter(`${family}TransitionDays`).ros}: objects must expire after they move to ${parameter(`${family}StorageClass`).ros}`,
      },
    ],
  });
  return {
    KeepAliveUnderHalfTheGraceAndRetention: {
      Assertions: ['stateGraceDays', 'retentionDays'].map((over) => ({
        Assert: greater(halfDays(over), ref('keepAliveMs')),
        AssertDescription: `KeepAliveMs must be under half of ${parameter(over).ros} (in ms)`,
      })),
    },
    ArchivesExpireAfterMoving: expiresAfterMoving('archive'),
    WorkspacesExpireAfterMoving: expiresAfterMoving('workspace'),
  };
}

/** The functions' environment for the table, as ROS intrinsic functions of the parameters. */
export function rosEnvironment(): Record<string, unknown> {
  return Object.fromEntries(
    DEPLOYMENT_PARAMETERS.map((p) => [
      p.env,
      p.kind === 'storageClass' ? ref(p.name) : { 'Fn::Str': ref(p.name) },
    ]),
  );
}

/**
 * The bucket's rules in ali-oss's `putBucketLifecycle` shape (`renderOss`) as ROS intrinsic
 * functions of the parameters: rendered from distinct sentinel values, each then replaced by the
 * parameter (or the sum of parameters) it came from, so the structure is the renderer's own.
 */
export function rosLifecycleRules(): unknown {
  const sentinels = {
    retentionDays: 1_000_003,
    stateGraceDays: 20_011,
    archiveTransitionDays: 3_000_017,
    archiveRetentionDays: 5_000_011,
    workspaceTransitionDays: 7_000_003,
    workspaceRetentionDays: 9_000_001,
    abortMultipartDays: 11_000_027,
    packGraceDays: 13_000_019,
  } as const;
  const classes = { archiveStorageClass: 'IA', workspaceStorageClass: 'ColdArchive' } as const;
  const numbers = new Map<number, unknown>(Object.entries(sentinels).map(([name, v]) => [v, ref(name)]));
  numbers.set(sentinels.retentionDays + sentinels.stateGraceDays, {
    'Fn::Add': [ref('retentionDays'), ref('stateGraceDays')],
  });
  const strings = new Map<string, unknown>(Object.entries(classes).map(([name, v]) => [v, ref(name)]));
  const rendered = renderOss(lifecycleRules('oss', { ...sentinels, ...classes }));
  const symbolic = (value: unknown, key?: string): unknown => {
    if (Array.isArray(value)) return value.map((v) => symbolic(v));
    if (value && typeof value === 'object')
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, symbolic(v, k)]));
    if (typeof value === 'number') {
      if (!numbers.has(value)) throw new Error(`a lifecycle number not derived from a parameter: ${value}`);
      return numbers.get(value);
    }
    if (key === 'storageClass') return strings.get(value as string) ?? value;
    return value;
  };
  return symbolic(rendered);
}
