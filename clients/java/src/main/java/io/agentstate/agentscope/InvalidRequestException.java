package io.agentstate.agentscope;

/** The server refused the request as invalid (400 {@code invalid-request}), naming the field. */
public class InvalidRequestException extends StateApiException {
    private static final long serialVersionUID = 1L;

    private final String field;

    public InvalidRequestException(String message, String field, String requestId) {
        super(message, "invalid-request", 400, requestId, false, null);
        this.field = field;
    }

    /** The field the server names ({@code sessionId}, {@code key}, ...), or {@code null}. */
    public String field() {
        return field;
    }
}
