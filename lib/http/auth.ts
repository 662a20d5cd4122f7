/**
 * Who is calling. The user id is a claim of a verified identity, never the path or the body:
 * - AWS: API Gateway's JWT authorizer verified the token; its claims arrive with the request;
 * - Function Compute and local: the function verifies the bearer JWT itself (jose), against the
 *   trigger's JWKS (FC) or an HS256 secret (local). `alg: none` and unexpected algorithms are refused.
 * A missing, invalid or expired identity, or a user claim the id rule refuses (lib/contract/ids.ts), is 401. Only the local server,
 * with ALLOW_ANONYMOUS=true, lets a request without a token act as the anonymous user.
 *
 * `authenticate` is the step every route that needs an identity goes through (the router calls it,
 * no route does): the token first (401), then the user the client says it means, `Agent-State-User`
 * in the URL id form (lib/protocol/url-ids.ts): a malformed one is 400 `invalid-request`, one that
 * is not the token's user (or any, for the anonymous user) 403 `user-mismatch`, before anything is
 * read or written; without the header, the token decides alone (older clients).
 */
import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from 'jose';
import { UserMismatchError, ValidationError } from '../contract/errors.js';
import { checkId } from '../contract/ids.js';
import { HEADER_NAMES } from '../protocol/schemas.js';
import { decodeUrlId } from '../protocol/url-ids.js';
import { HttpProblem } from './problems.js';
import type { HttpRequest } from './types.js';

/** Resolves a request to its user id (null: the anonymous user). */
export type Authenticator = (request: HttpRequest) => Promise<string | null>;

/** Options of the authenticators. */
export interface AuthOptions {
  /** The claim that names the user; default `sub`. */
  readonly userClaim?: string;
  readonly issuer?: string;
  readonly audience?: string;
}

const unauthorized = (detail: string) =>
  new HttpProblem('unauthorized', detail, {}, { 'www-authenticate': 'Bearer' });

function userFrom(claims: Readonly<Record<string, unknown>>, claim: string): string {
  const value = claims[claim];
  if (typeof value !== 'string' || value.trim() === '') throw unauthorized(`the token has no ${claim} claim`);
  try {
    return checkId('userId', value);
  } catch (error) {
    // The id rule's refusal, answered as the identity's: 401, not 400.
    if (error instanceof ValidationError)
      throw unauthorized(`the ${claim} claim ${error.message.replace(/^userId: /, '')}`);
    throw error;
  }
}

/** Trusts the claims API Gateway's JWT authorizer verified. */
export function platformClaimsAuth(options: AuthOptions = {}): Authenticator {
  const claim = options.userClaim ?? 'sub';
  return async (request) => {
    if (!request.claims) throw unauthorized('no verified identity');
    return userFrom(request.claims, claim);
  };
}

/** Verifies the bearer JWT: HS256 with `secret`, or RS256/ES256 against a JWKS URL. */
export function bearerJwtAuth(
  key: { secret: string } | { jwksUrl: string } | { getKey: JWTVerifyGetKey },
  options: AuthOptions & { allowAnonymous?: boolean } = {},
): Authenticator {
  const claim = options.userClaim ?? 'sub';
  const verifyKey =
    'secret' in key
      ? new TextEncoder().encode(key.secret)
      : 'jwksUrl' in key
        ? createRemoteJWKSet(new URL(key.jwksUrl))
        : key.getKey;
  const algorithms = 'secret' in key ? ['HS256'] : ['RS256', 'ES256', 'PS256'];
  return async (request) => {
    const header = request.headers.authorization;
    if (!header) {
      if (options.allowAnonymous) return null;
      throw unauthorized('a bearer token is required');
    }
    const match = /^Bearer ([A-Za-z0-9_.-]+)$/.exec(header);
    if (!match) throw unauthorized('the Authorization header is not a bearer token');
    try {
      const { payload } = await jwtVerify(match[1] as string, verifyKey as Uint8Array, {
        algorithms,
        ...(options.issuer ? { issuer: options.issuer } : {}),
        ...(options.audience ? { audience: options.audience } : {}),
      });
      return userFrom(payload as Record<string, unknown>, claim);
    } catch (error) {
      if (error instanceof HttpProblem) throw error;
      throw unauthorized('the token is invalid or expired');
    }
  };
}

const USER_HEADER = HEADER_NAMES.user.toLowerCase();

/**
 * The caller's user id: the authenticator's (401 when the token is refused), checked against the
 * `Agent-State-User` the request may carry (400 when it is not an id in its URL form, 403
 * `user-mismatch` when it names another user, or any user for the anonymous caller).
 */
export async function authenticate(auth: Authenticator, request: HttpRequest): Promise<string | null> {
  const userId = await auth(request);
  const claimed = request.headers[USER_HEADER];
  if (claimed === undefined) return userId;
  if (decodeUrlId(claimed, HEADER_NAMES.user) !== userId)
    throw new UserMismatchError('Agent-State-User does not name the token user');
  return userId;
}
