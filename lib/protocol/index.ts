/**
 * The HTTP protocol, shared by the router (lib/http) and the typed client (lib/client): problem
 * codes, patterns and limits, paths, and the request and answer schemas. It depends only on the
 * store's and the lock's pure modules (errors, ids, limits) and zod: no SDK, no node:http.
 */

export { PayloadTooLargeError, ProtocolError, UnauthorizedError } from '../contract/errors.js';
export { BASE64URL, PLAIN_ID } from '../contract/ids.js';
export {
  ARCHIVE_ID_PATTERN,
  HASH_PATTERN,
  HASH_PREFIX,
  LIMITS,
  MAX_APPEND_ITEMS,
  MAX_SESSION_PAGE,
  MAX_SINGLE_BYTES,
  MAX_UPLOAD_PARTS,
  MD5_PATTERN,
  MIN_PART_BYTES,
  SHA256_PATTERN,
} from '../contract/limits.js';
export { LEASE_MS, OWNER_PATTERN, OWNER_RULE, WAIT_MS } from '../contract/lock.js';
export {
  PATH_PARAMS,
  PATHS,
  type ParamNames,
  type PathBuilder,
  type PathName,
  type PathParam,
  type PathParams,
  paths,
  patternSegments,
} from './paths.js';
export {
  isProblemCode,
  PROBLEM_CODES,
  PROBLEMS,
  Problem,
  type ProblemCode,
  type ProblemFields,
  type ProblemSpec,
  problemCodeOf,
  problemError,
  problemType,
} from './problems.js';
export {
  FENCING_TOKEN_PATTERN,
  HEADER_NAMES,
  type HeaderKey,
  headers,
  IDEMPOTENCY_KEY_PATTERN,
  queries,
  REQUEST_ID_HEADER,
  type SchemaName,
  schemaName,
  schemas,
} from './schemas.js';
export { decodeUrlId, encodeUrlId } from './url-ids.js';
