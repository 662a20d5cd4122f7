package io.agentstate.agentscope;

/**
 * A conditional request whose condition does not hold (412 {@code precondition-failed}); nothing
 * was written. {@code saveIfVersion} answers -1 instead of raising it.
 */
public class PreconditionFailedException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public PreconditionFailedException(String message, String requestId) {
        super(message, "precondition-failed", 412, requestId, false, null);
    }
}
