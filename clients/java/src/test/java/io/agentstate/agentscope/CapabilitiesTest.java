package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentstate.agentscope.Fixture.AgentState;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code supportsVersioning()} and {@code capabilities()} from the server's one answer. */
class CapabilitiesTest {
    private static final AgentState STATE = new AgentState("x", 1, Map.of());

    @Test
    void aServerWithConditionalOverwriteSupportsVersioningAskedOnce() {
        Fixture.Recorded recorded = Fixture.store();
        HttpAgentStateStore store = recorded.store();
        assertTrue(store.supportsVersioning());
        assertTrue(store.supportsVersioning());
        HttpAgentStateStore.Capabilities c = store.capabilities();
        assertTrue(c.versioning() && c.conditionalOverwrite());
        assertTrue(c.revisions(), "values carry revisions: the SPI's versions");
        assertFalse(c.atomicCommits(), "object storage: per-key atomic");
        assertEquals(List.of("GET /v1/capabilities"), recorded.calls(), "read once");
    }

    @Test
    void aServerWithoutConditionalOverwriteAsOssDoesNotSupportVersioning() {
        Fixture.Recorded recorded = Fixture.store(Fixture.NO_CAS_URL);
        HttpAgentStateStore store = recorded.store();
        assertFalse(store.supportsVersioning());
        assertTrue(store.capabilities().versioning());
        assertFalse(store.capabilities().conditionalOverwrite());
        assertEquals(List.of("GET /v1/capabilities"), recorded.calls(), "read once");
        // What supportsVersioning() spares the agent: the server refuses a conditional overwrite.
        String s = Fixture.session("no-cas");
        long version = store.saveIfVersion("alice", s, "agent_state", STATE, HttpAgentStateStore.ABSENT);
        assertTrue(version > 0, "create-only still works");
        UnsupportedByServerException e =
                assertThrows(
                        UnsupportedByServerException.class,
                        () -> store.saveIfVersion("alice", s, "agent_state", new AgentState("y", 2, Map.of()), version));
        assertEquals("precondition-unsupported", e.code());
        // Unconditional saves work.
        store.save("alice", s, "agent_state", new AgentState("z", 3, Map.of()));
        assertEquals("z", store.get("alice", s, "agent_state", AgentState.class).orElseThrow().summary());
    }
}
