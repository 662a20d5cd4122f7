/** The route table: every route of the API, by resource. */
import { ARCHIVE_ROUTES } from './archives.js';
import { LIST_ROUTES } from './lists.js';
import { LOCK_ROUTES } from './lock.js';
import { META_ROUTES } from './meta.js';
import { type Method, methodsOf, type Route } from './route.js';
import { SESSION_ROUTES } from './sessions.js';
import { STATE_ROUTES } from './state.js';
import { TURN_ROUTES } from './turns.js';
import { WORKSPACE_SNAPSHOT_ROUTES } from './workspace-snapshots.js';
import { WORKSPACE_ROUTES } from './workspaces.js';

/** Every route of the API. */
export const ROUTES: readonly Route[] = [
  ...META_ROUTES,
  ...SESSION_ROUTES,
  ...STATE_ROUTES,
  ...LIST_ROUTES,
  ...ARCHIVE_ROUTES,
  ...WORKSPACE_ROUTES,
  ...WORKSPACE_SNAPSHOT_ROUTES,
  ...LOCK_ROUTES,
  ...TURN_ROUTES,
];

/** Every method the API answers (HEAD included where a GET route answers it too), once each. */
export const API_METHODS: readonly Method[] = [...new Set(ROUTES.flatMap(methodsOf))];

export {
  ANSWER_HEADERS,
  type AnswerHeader,
  type AnswerSpec,
  COMMON_PROBLEMS,
  type Method,
  methodsOf,
  OPEN_PROBLEMS,
  problemsOf,
  type Route,
  type RouteContext,
  type RouterDeps,
  TAGS,
  type Tag,
  WRITE_PROBLEMS,
} from './route.js';
