package io.agentstate.agentscope;

/**
 * The bearer token (a JWT whose {@code sub} is the user) for a user id; called before each request
 * of that user, so it may refresh tokens. It is never called for the anonymous user (a null or
 * blank id), whose requests carry no token.
 */
@FunctionalInterface
public interface TokenProvider {
    /** The token for {@code userId} (never null or blank). */
    String tokenFor(String userId);
}
