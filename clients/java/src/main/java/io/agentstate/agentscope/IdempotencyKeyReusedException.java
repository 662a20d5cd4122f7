package io.agentstate.agentscope;

/**
 * An Idempotency-Key sent again with another request ({@code idempotency-key-reused}, 422): the
 * server names one request by its key and refuses any other under it. Nothing was written; a new
 * request needs a new key. Never retried.
 */
public class IdempotencyKeyReusedException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public IdempotencyKeyReusedException(String message, String requestId) {
        super(message, "idempotency-key-reused", 422, requestId, false, null);
    }
}
