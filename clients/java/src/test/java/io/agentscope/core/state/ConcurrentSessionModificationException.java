/*
 * Test-scope stand-in for io.agentscope.core.state.ConcurrentSessionModificationException of
 * agentscope-ai/agentscope-java, as it is at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e
 * (2026-08-22; added in 2d851ed6cbe28d04dcd9b381eb6c95c8d39ddf28 with VersionedState). The same
 * constructor and accessors, written here from reading it.
 */
package io.agentscope.core.state;

/** A save refused because another writer changed that state of the session since it was read. */
public class ConcurrentSessionModificationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String userId;
    private final String sessionId;
    private final String key;
    private final long expectedVersion;

    public ConcurrentSessionModificationException(String userId, String sessionId, String key, long expectedVersion) {
        super("state " + key + " of session " + sessionId + " (user " + userId + ") was changed by another writer"
                + " since version " + expectedVersion);
        this.userId = userId;
        this.sessionId = sessionId;
        this.key = key;
        this.expectedVersion = expectedVersion;
    }

    public String getUserId() {
        return userId;
    }

    public String getSessionId() {
        return sessionId;
    }

    public String getKey() {
        return key;
    }

    public long getExpectedVersion() {
        return expectedVersion;
    }
}
