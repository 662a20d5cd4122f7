package io.agentstate.agentscope;

/**
 * The token the {@link TokenProvider} gave is not the user's the call was made for (403
 * {@code user-mismatch}): nothing was read or written. The store sends the user it means in
 * {@code Agent-State-User} with every call of a named user, so a provider that hands out another
 * user's token cannot act in that user's sessions.
 */
public class UserMismatchException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public UserMismatchException(String message, String requestId) {
        super(message, "user-mismatch", 403, requestId, false, null);
    }
}
