package io.agentstate.agentscope;

/**
 * A call to the agent state API that did not succeed: the problem code the server answered (RFC
 * 9457 {@code code}, such as {@code invalid-request} or {@code lock-held}; {@code null} when there
 * was no problem body, e.g. a network error), the HTTP status (0 without an answer), the request id
 * the server gave the answer ({@code X-Request-Id}, for its logs), and whether trying again later
 * may succeed. Subclasses name the cases a caller handles.
 */
public class StateApiException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String code;
    private final int status;
    private final String requestId;
    private final boolean retryable;

    public StateApiException(
            String message, String code, int status, String requestId, boolean retryable, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.status = status;
        this.requestId = requestId;
        this.retryable = retryable;
    }

    /** The problem code of the answer, or {@code null} when there was none. */
    public String code() {
        return code;
    }

    /** The HTTP status of the answer, or 0 when no answer arrived. */
    public int status() {
        return status;
    }

    /** The server's id of the request ({@code X-Request-Id}), or {@code null}. */
    public String requestId() {
        return requestId;
    }

    /** Whether the same call may succeed later (the client has already retried it where safe). */
    public boolean retryable() {
        return retryable;
    }
}
