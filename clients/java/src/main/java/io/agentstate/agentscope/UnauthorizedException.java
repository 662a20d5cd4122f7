package io.agentstate.agentscope;

/** The server refused the user's token (401): missing, invalid or expired. */
public class UnauthorizedException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public UnauthorizedException(String message, int status, String requestId) {
        super(message, "unauthorized", status, requestId, false, null);
    }
}
