/*
 * Ported assertions of AgentScope's state persistence test
 *   agentscope-ai/agentscope-java:agentscope-core/src/test/java/io/agentscope/core/state/PlanModeContextStatePersistenceTest.java
 * at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e, written here from its assertions and run on
 * HttpAgentStateStore against the local API. There is no StatePersistenceTest at that commit: the
 * one of that name (core/legacy/state/StatePersistenceTest.java) was deleted in ea62fd215 with the
 * legacy state types, and it tested a record of flags, no store. This one is the state persistence
 * test there is. Deviations (clients/java/README.md, "Ported AgentScope tests"): AgentState and
 * PlanModeContextState are not in the SPI, so stand-ins with their JSON names carry the assertions;
 * its round trip through AgentState's own JSON methods is a round trip through the store, and its
 * legacy JSON is stored straight over HTTP, as an older AgentScope left it, then read by the store.
 */
package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.agentscope.core.state.State;
import java.util.List;
import org.junit.jupiter.api.Test;

class PortedStatePersistenceTest {
    /** PlanModeContextState's JSON: inactive, no plan file, by default. */
    record PlanMode(@JsonProperty("plan_active") boolean planActive, @JsonProperty("current_plan_file") String currentPlanFile) {}

    /** AgentState's JSON as far as these assertions go; a missing plan_mode_context is the default. */
    record AgentStateLike(
            @JsonProperty("session_id") String sessionId,
            @JsonProperty("summary") String summary,
            @JsonProperty("context") List<String> context,
            @JsonProperty("reply_id") String replyId,
            @JsonProperty("cur_iter") int curIter,
            @JsonProperty("shutdown_interrupted") boolean shutdownInterrupted,
            @JsonProperty("plan_mode_context") PlanMode planMode)
            implements State {
        AgentStateLike {
            if (planMode == null) planMode = new PlanMode(false, null);
        }
    }

    private static final String USER = "sybil";

    private final HttpAgentStateStore store = Fixture.store().store();
    private final String session = Fixture.session("s1");

    @Test
    void aNewStateIsNotInPlanMode() {
        store.save(USER, session, "agent_state", new AgentStateLike(session, "", List.of(), "r1", 0, false, null));
        AgentStateLike read = store.get(USER, session, "agent_state", AgentStateLike.class).orElseThrow();
        assertFalse(read.planMode().planActive());
        assertNull(read.planMode().currentPlanFile());
    }

    @Test
    void planModeSurvivesARoundTripThroughTheStore() {
        AgentStateLike state =
                new AgentStateLike(session, "", List.of(), "r1", 0, false, new PlanMode(true, "plans/PLAN.md"));
        store.save(USER, session, "agent_state", state);
        AgentStateLike restored = store.get(USER, session, "agent_state", AgentStateLike.class).orElseThrow();
        assertTrue(restored.planMode().planActive());
        assertEquals("plans/PLAN.md", restored.planMode().currentPlanFile());
        assertEquals(state.planMode(), restored.planMode());
    }

    @Test
    void aStateStoredWithoutPlanModeReadsAsTheDefault() {
        String legacy =
                "{\"session_id\":\"s1\",\"summary\":\"\",\"context\":[],\"reply_id\":\"r1\","
                        + "\"cur_iter\":0,\"shutdown_interrupted\":false}";
        assertEquals(200, Fixture.rawPut(USER, HttpAgentStateStore.valuePath(session, "agent_state"), legacy));
        AgentStateLike restored = store.get(USER, session, "agent_state", AgentStateLike.class).orElseThrow();
        assertFalse(restored.planMode().planActive());
        assertEquals("r1", restored.replyId());
        assertEquals(1L, store.getVersioned(USER, session, "agent_state", AgentStateLike.class).version(), "written once");
    }
}
