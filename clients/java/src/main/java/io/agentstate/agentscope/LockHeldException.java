package io.agentstate.agentscope;

import java.time.Instant;

/** A turn could not begin: another owner holds the session's lease (409 {@code lock-held}). */
public class LockHeldException extends ConflictException {
    private static final long serialVersionUID = 1L;

    private final String holder;
    private final Instant expiresAt;

    public LockHeldException(String message, String holder, Instant expiresAt, String requestId) {
        super(message, "lock-held", requestId, true);
        this.holder = holder;
        this.expiresAt = expiresAt;
    }

    /** The owner holding the lease. */
    public String holder() {
        return holder;
    }

    /** When the holder's lease ends, or {@code null} when the server did not say. */
    public Instant expiresAt() {
        return expiresAt;
    }
}
