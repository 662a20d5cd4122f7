/*
 * Test-scope stand-in for the AgentScope SPI
 *   agentscope-ai/agentscope-java:agentscope-core/src/main/java/io/agentscope/core/state/AgentStateStore.java
 * as it is at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e (main, 2026-08-22; the file last
 * changed in 2d851ed6cbe28d04dcd9b381eb6c95c8d39ddf28, 2026-08-02, which added versioning). The
 * same members and defaults, written here from reading it; the real interface declares no default
 * that references another AgentScope type at that commit, so none is left out. HttpAgentStateStore
 * is compiled here against this file only; a user's build compiles it against the real jar.
 */
package io.agentscope.core.state;

import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Where agents keep their state, addressed by (userId, sessionId): a null user id is the anonymous
 * caller; a session id is never null or blank.
 */
public interface AgentStateStore {

    /** The version of a store without versioning, and what a conflicting saveIfVersion answers. */
    long UNVERSIONED = -1L;

    /** Replaces the single value under {@code key}. */
    void save(String userId, String sessionId, String key, State value);

    /** Whether getVersioned / saveIfVersion compare versions; false by default. */
    default boolean supportsVersioning() {
        return false;
    }

    /** The value and its version; by default the value with UNVERSIONED. */
    default <T extends State> VersionedState<T> getVersioned(
            String userId, String sessionId, String key, Class<T> type) {
        return new VersionedState<>(get(userId, sessionId, key, type).orElse(null), UNVERSIONED);
    }

    /**
     * Writes when the stored version is {@code expectedVersion} (0: only when absent; UNVERSIONED:
     * always) and answers the new version, or UNVERSIONED on a conflict (nothing written). By
     * default an unconditional save answering UNVERSIONED.
     */
    default long saveIfVersion(
            String userId, String sessionId, String key, State value, long expectedVersion) {
        save(userId, sessionId, key, value);
        return UNVERSIONED;
    }

    /** Saves a list; callers always pass the whole list, the store decides what to write. */
    void save(String userId, String sessionId, String key, List<? extends State> values);

    /** The single value, or empty. */
    <T extends State> Optional<T> get(String userId, String sessionId, String key, Class<T> type);

    /** The list, or an empty list. */
    <T extends State> List<T> getList(String userId, String sessionId, String key, Class<T> itemType);

    /** Whether the session holds any state. */
    boolean exists(String userId, String sessionId);

    /** Deletes the session and all its state. */
    void delete(String userId, String sessionId);

    /** Deletes one entry of the session; a no-op by default. */
    default void delete(String userId, String sessionId, String key) {}

    /** The session ids of the user (null: the anonymous sessions). */
    Set<String> listSessionIds(String userId);

    /** Frees the store's resources; nothing by default. */
    default void close() {}
}
