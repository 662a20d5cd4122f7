/*
 * Test-scope stand-in for io.agentscope.core.state.State of agentscope-ai/agentscope-java, as it is
 * at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e (2026-08-22; the SPI file last changed in
 * 2d851ed6cbe28d04dcd9b381eb6c95c8d39ddf28). Only for compiling and testing HttpAgentStateStore
 * here; a user's build uses the real agentscope-core jar instead.
 */
package io.agentscope.core.state;

/** What an AgentStateStore persists: a marker for serializable state objects (records, usually). */
public interface State {}
