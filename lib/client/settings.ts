/**
 * What the client is told, or finds where it runs: where the API is and its token (the options,
 * else `AGENT_STATE_URL` and `AGENT_STATE_TOKEN` read through `globalThis.process?.env` where the
 * runtime has one), the User-Agent it sends where the runtime lets a script set one, and where its
 * debug lines go. No Node global is touched: the same code runs in browsers and workers.
 */

import { ValidationError } from '../contract/errors.js';
import { checkId } from '../contract/ids.js';
import { encodeUrlId } from '../protocol/url-ids.js';
import type { ClientLogger, HttpClientOptions } from './types.js';

/** The package's version, sent in the User-Agent (test/client/settings.test.ts checks it against package.json). */
export const CLIENT_VERSION = '0.1.0';

/** The User-Agent of every request the client sends where the runtime allows it. */
export const USER_AGENT = `agent-state-store/${CLIENT_VERSION}`;

/** The environment variables the client reads when its options leave them out. */
export const CLIENT_ENV = { baseUrl: 'AGENT_STATE_URL', token: 'AGENT_STATE_TOKEN' } as const;

/** What the client works with, its options and the environment resolved. */
export interface ClientSettings {
  readonly baseUrl: string;
  readonly token: HttpClientOptions['token'];
  /** Undefined where the runtime does not let a script set it (a browser page or worker). */
  readonly userAgent: string | undefined;
  readonly logger: ClientLogger | undefined;
  /** The `Agent-State-User` of every API call (the `userId` option in its URL id form), if given. */
  readonly user: string | undefined;
}

/** The runtime's environment variables, where it has them (Node, Bun, Deno with `process`). */
function environment(): Readonly<Record<string, string | undefined>> {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env ?? {};
}

/**
 * Whether scripts may set a User-Agent here: not in a browser page or worker (which keeps its own,
 * and a cross-origin request with one would need the API's CORS to allow it).
 */
function userAgentSettable(): boolean {
  const scope = globalThis as { document?: unknown; WorkerGlobalScope?: unknown };
  return scope.document === undefined && scope.WorkerGlobalScope === undefined;
}

/**
 * The settings of a client: each option, else its environment variable (an empty one counts as
 * unset). No URL either way is a `ValidationError` naming both ways to give one.
 */
export function settingsOf(options: HttpClientOptions = {}): ClientSettings {
  const env = environment();
  const baseUrl = options.baseUrl ?? (env[CLIENT_ENV.baseUrl] || undefined);
  if (baseUrl === undefined || baseUrl.trim() === '')
    throw new ValidationError(
      'baseUrl',
      `no API URL: pass the baseUrl option or set the ${CLIENT_ENV.baseUrl} environment variable`,
    );
  try {
    new URL(baseUrl);
  } catch {
    throw new ValidationError('baseUrl', `not an absolute URL: ${JSON.stringify(baseUrl)}`);
  }
  return {
    baseUrl: baseUrl.replace(/\/+$/, ''),
    token: options.token ?? (env[CLIENT_ENV.token] || undefined),
    userAgent: userAgentSettable() ? USER_AGENT : undefined,
    logger: options.logger,
    // Checked as the library checks ids (a blank one is a ValidationError, not the anonymous user).
    user: options.userId === undefined ? undefined : encodeUrlId(checkId('userId', options.userId)),
  };
}
