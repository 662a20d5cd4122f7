/**
 * The API's paths, defined once: the router's route table declares its routes with these patterns
 * (OpenAPI template syntax), and the typed client builds its URLs with `paths`, which checks and
 * encodes each id as the router decodes it (url-ids.ts).
 */
import { checkId } from '../contract/ids.js';
import { encodeUrlId } from './url-ids.js';

const SESSIONS = '/v1/sessions';
const SESSION = `${SESSIONS}/{sessionId}`;
const VALUE = `${SESSION}/state/{key}`;
const LIST = `${SESSION}/lists/{key}`;
const WORKSPACES = `${SESSION}/workspaces`;
const WORKSPACE = `${WORKSPACES}/{name}`;

/** Every path pattern of the API, by name. */
export const PATHS = {
  health: '/v1/health',
  ready: '/v1/ready',
  capabilities: '/v1/capabilities',
  openapi: '/v1/openapi.json',
  sessions: SESSIONS,
  session: SESSION,
  keys: `${SESSION}/keys`,
  snapshot: `${SESSION}/snapshot`,
  turns: `${SESSION}/turns`,
  commits: `${SESSION}/commits`,
  value: VALUE,
  valueUploads: `${VALUE}/uploads`,
  valueUpload: `${VALUE}/uploads/{uploadId}`,
  list: LIST,
  listItems: `${LIST}/items`,
  listTruncate: `${LIST}/truncate`,
  archives: `${LIST}/archives`,
  archive: `${LIST}/archives/{archiveId}`,
  workspaces: WORKSPACES,
  workspace: WORKSPACE,
  workspaceUploads: `${WORKSPACE}/uploads`,
  workspaceUpload: `${WORKSPACE}/uploads/{uploadId}`,
  workspaceSnapshots: `${WORKSPACE}/snapshots`,
  workspaceSnapshot: `${WORKSPACE}/snapshots/{snapshotId}`,
  lock: `${SESSION}/lock`,
} as const;

/** A path's name. */
export type PathName = keyof typeof PATHS;

/**
 * The parameters a pattern may hold. An `id` parameter is an id of that kind, encoded (url-ids.ts):
 * the router decodes it, naming the parameter when it cannot. The others (archive, upload and snapshot ids)
 * and snapshot ids) reach the store as they are; the client still writes them as one safe segment.
 */
export const PATH_PARAMS = {
  sessionId: { id: 'sessionId' },
  key: { id: 'key' },
  name: { id: 'workspace' },
  archiveId: {},
  uploadId: {},
  snapshotId: {},
} as const satisfies Record<string, { id?: 'sessionId' | 'key' | 'workspace' }>;

/** A path parameter's name. */
export type PathParam = keyof typeof PATH_PARAMS;

/** The parameter names of a pattern, in order. */
export type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer R}`
  ? [N, ...ParamNames<R>]
  : [];

/** The parameters of a pattern, by name. */
export type PathParams<P extends string> = Record<ParamNames<P>[number], string>;

type Strings<T extends readonly unknown[]> = { [I in keyof T]: string };

/** Builds the path of `pattern` from its parameters, in order. */
export type PathBuilder<P extends string> = (...params: Strings<ParamNames<P>>) => string;

/** A pattern's segments: text, or the name of a parameter. */
export function patternSegments(pattern: string): Array<{ text: string } | { param: PathParam }> {
  return pattern.split('/').map((segment) => {
    if (!segment.startsWith('{')) return { text: segment };
    const param = segment.slice(1, -1);
    if (!(param in PATH_PARAMS)) throw new Error(`${pattern}: unknown path parameter ${param}`);
    return { param: param as PathParam };
  });
}

/** The URL segment of a parameter's value (an id is checked first, as the library checks it). */
function segmentOf(param: PathParam, value: string): string {
  const spec: { id?: 'sessionId' | 'key' | 'workspace' } = PATH_PARAMS[param];
  return encodeUrlId(spec.id ? checkId(spec.id, value) : value);
}

function builder(pattern: string): (...params: string[]) => string {
  const segments = patternSegments(pattern);
  return (...params) => {
    let next = 0;
    return segments
      .map((s) => ('text' in s ? s.text : segmentOf(s.param, params[next++] as string)))
      .join('/');
  };
}

/** Path builders: `paths.list(sessionId, key)` is `/v1/sessions/<sessionId>/lists/<key>`, encoded. */
export const paths = Object.fromEntries(
  Object.entries(PATHS).map(([name, pattern]) => [name, builder(pattern)]),
) as { readonly [N in PathName]: PathBuilder<(typeof PATHS)[N]> };
