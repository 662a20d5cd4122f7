/*
 * Ported assertions of AgentScope's own store test
 *   agentscope-ai/agentscope-java:agentscope-core/src/test/java/io/agentscope/core/state/JsonFileAgentStateStoreTest.java
 * at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e, written here from its assertions and run on
 * HttpAgentStateStore against the local API. That file asserts no file layout, so every assertion
 * applies as it is; deviations (clients/java/README.md, "Ported AgentScope tests"): its temporary
 * directory per test is a fresh session, and its null (anonymous) user a named one.
 */
package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.state.State;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PortedJsonFileStoreTest {
    /** The reference's test state. */
    record TestState(String value, int count) implements State {}

    private static final String USER = "rupert";
    /** A lone high surrogate, as a model's output cut in the middle of a character leaves it. */
    private static final String BROKEN = "before \uD800 after";
    private static final String REPLACED = "before \uFFFD after";

    private final HttpAgentStateStore store = Fixture.store().store();
    private final String session = Fixture.session("session1");

    @Test
    void invalidUnicodeOfASingleStateIsReplaced() {
        store.save(USER, session, "agent_state", new TestState(BROKEN, 1));
        Optional<TestState> loaded = store.get(USER, session, "agent_state", TestState.class);
        assertTrue(loaded.isPresent());
        assertEquals(REPLACED, loaded.get().value());
    }

    @Test
    void invalidUnicodeOfAListStateIsReplaced() {
        store.save(USER, session, "memory_messages", List.of(new TestState(BROKEN, 1)));
        List<TestState> loaded = store.getList(USER, session, "memory_messages", TestState.class);
        assertEquals(1, loaded.size());
        assertEquals(REPLACED, loaded.get(0).value());
    }

    @Test
    void invalidUnicodeOfARewrittenListIsReplaced() {
        store.save(USER, session, "memory_messages", List.of(new TestState("ok", 1), new TestState("ok2", 2)));
        // Shrunk: a rewrite of the whole list.
        store.save(USER, session, "memory_messages", List.of(new TestState(BROKEN, 1)));
        List<TestState> loaded = store.getList(USER, session, "memory_messages", TestState.class);
        assertEquals(1, loaded.size());
        assertEquals(REPLACED, loaded.get(0).value());
    }

    @Test
    void invalidUnicodeOfAnAppendAKeyAndATurnIsReplacedAndValidPairsAreKept() {
        // Beyond the reference: the other ways a state reaches the server.
        store.save(USER, session, "memory_messages", List.of(new TestState("ok", 1)));
        store.save(USER, session, "memory_messages", List.of(new TestState("ok", 1), new TestState(BROKEN, 2)));
        assertEquals(
                List.of(new TestState("ok", 1), new TestState(REPLACED, 2)),
                store.getList(USER, session, "memory_messages", TestState.class));
        store.save(USER, session, "map", new Fixture.AgentState("a\uDC00b \uD83D\uDE00", 1, Map.of("k\uD800", "v")));
        assertEquals(
                new Fixture.AgentState("a\uFFFDb \uD83D\uDE00", 1, Map.of("k\uFFFD", "v")),
                store.get(USER, session, "map", Fixture.AgentState.class).orElseThrow());
        try (AgentStateTurn turn = store.beginTurn(USER, session, List.of("agent_state"), List.of())) {
            turn.save("agent_state", new TestState(BROKEN, 3));
            turn.commit();
        }
        assertEquals(new TestState(REPLACED, 3), store.get(USER, session, "agent_state", TestState.class).orElseThrow());
    }
}
