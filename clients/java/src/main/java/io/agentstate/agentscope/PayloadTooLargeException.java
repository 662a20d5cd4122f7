package io.agentstate.agentscope;

/** A request or an answer over the server's size limit (413 {@code payload-too-large}). */
public class PayloadTooLargeException extends StateApiException {
    private static final long serialVersionUID = 1L;

    private final long limit;

    public PayloadTooLargeException(String message, long limit, String requestId) {
        super(message, "payload-too-large", 413, requestId, false, null);
        this.limit = limit;
    }

    /** The limit in bytes the server names, or -1. */
    public long limit() {
        return limit;
    }
}
