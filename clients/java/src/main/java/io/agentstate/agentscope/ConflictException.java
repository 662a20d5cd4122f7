package io.agentstate.agentscope;

/**
 * A write refused because of another writer (409): {@code fenced} (a newer lock token was seen),
 * {@code lock-lost}, {@code commit-conflict}, {@code commit-partial}, {@code commit-mismatch},
 * {@code append-conflict} or {@code contended}; {@link #code()} says which. Nothing was written,
 * except for {@code commit-partial} (see the server's answer).
 */
public class ConflictException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public ConflictException(String message, String code, String requestId, boolean retryable) {
        super(message, code, 409, requestId, retryable, null);
    }
}
