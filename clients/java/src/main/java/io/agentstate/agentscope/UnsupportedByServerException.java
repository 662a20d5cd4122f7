package io.agentstate.agentscope;

/**
 * What the server's storage backend cannot do (501): {@code precondition-unsupported} (a
 * conditional overwrite on OSS, which has no compare-and-swap) or {@code unsupported}.
 */
public class UnsupportedByServerException extends StateApiException {
    private static final long serialVersionUID = 1L;

    public UnsupportedByServerException(String message, String code, String requestId) {
        super(message, code, 501, requestId, false, null);
    }
}
