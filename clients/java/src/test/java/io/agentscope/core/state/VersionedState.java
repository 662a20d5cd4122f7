/*
 * Test-scope stand-in for io.agentscope.core.state.VersionedState of agentscope-ai/agentscope-java,
 * as it is at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e (2026-08-22; the SPI file last
 * changed in 2d851ed6cbe28d04dcd9b381eb6c95c8d39ddf28).
 */
package io.agentscope.core.state;

/**
 * A value with its store version: {@code value} null when absent; {@code version} 0 for an absent
 * key on a versioning store, -1 on a store without versions.
 */
public record VersionedState<T extends State>(T value, long version) {
    /** Whether there was a value. */
    public boolean isPresent() {
        return value != null;
    }
}
