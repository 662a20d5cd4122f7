package io.agentstate.agentscope;

/**
 * The server or the way to it failed: 429, 5xx, a network error or a timeout, after the client's
 * retries (or at once where a retry would not be safe, or {@code Retry-After} asks for more than
 * the client waits by itself). {@link #retryable()} is false only for {@code backend-unsafe} (a
 * storage backend that does not honour write conditions), {@code backend-misconfigured} (a missing
 * bucket or lock table, refused credentials) and {@code internal}-with-corrupt-data.
 */
public class BackendUnavailableException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public BackendUnavailableException(
            String message, String code, int status, String requestId, boolean retryable, Throwable cause) {
        super(message, code, status, requestId, retryable, cause);
    }
}
