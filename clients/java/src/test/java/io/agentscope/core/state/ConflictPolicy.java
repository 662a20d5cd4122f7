/*
 * Test-scope stand-in for io.agentscope.core.state.ConflictPolicy of agentscope-ai/agentscope-java,
 * as it is at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e (2026-08-22; added in
 * 2d851ed6cbe28d04dcd9b381eb6c95c8d39ddf28 with VersionedState). The same constants, written here
 * from reading it.
 */
package io.agentscope.core.state;

/** What a save does when another writer changed the same state since it was read. */
public enum ConflictPolicy {
    /** Write anyway: the last writer wins (the default). */
    OVERWRITE,
    /** Write nothing and throw {@link ConcurrentSessionModificationException}. */
    FAIL,
    /** Read the other writer's state again, add this writer's new messages to it, and try again. */
    APPEND_MERGE
}
