package io.agentstate.agentscope;

/** No answer arrived within the client's timeout, on every attempt. */
public class RequestTimeoutException extends BackendUnavailableException {
    private static final long serialVersionUID = 1L;

    public RequestTimeoutException(String request, long timeoutMs, Throwable cause) {
        super(request + ": no answer within " + timeoutMs + " ms", null, 0, null, true, cause);
    }
}
