package io.agentstate.agentscope;

/**
 * A null or blank user id was used against a server that requires a token: only a local server
 * started with {@code ALLOW_ANONYMOUS=true} lets token-less requests act as the anonymous user.
 */
public class AnonymousNotAllowedException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public AnonymousNotAllowedException(String requestId) {
        super(
                "this server does not allow anonymous access: pass a user id (and a token for it), or"
                        + " start the server with ALLOW_ANONYMOUS=true",
                "unauthorized",
                401,
                requestId,
                false,
                null);
    }
}
