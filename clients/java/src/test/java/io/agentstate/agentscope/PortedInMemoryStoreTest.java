/*
 * Ported assertions of AgentScope's own store test
 *   agentscope-ai/agentscope-java:agentscope-core/src/test/java/io/agentscope/core/state/InMemoryAgentStateStoreTest.java
 * at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e, written here from its assertions and run on
 * HttpAgentStateStore against the local API. Deviations (clients/java/README.md, "Ported AgentScope
 * tests"): the reference's fresh store per test is a user of its own whose sessions are deleted
 * before each test (truncateAllSessions), and its null (anonymous) user is that named user, since
 * the anonymous user's sessions on the local API are shared with the other tests (the null user is
 * exercised once, on the server allowing anonymous access); getSessionCount() and clearAll(), which
 * only the in-memory store has, are listSessionIds(user).size() and truncateAllSessions().
 */
package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.state.State;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class PortedInMemoryStoreTest {
    /** The reference's test state. */
    record TestState(String value, int count) implements State {}

    private static final String USER = "olivia";

    private final HttpAgentStateStore store =
            HttpAgentStateStore.builder()
                    .baseUrl(Fixture.URL)
                    .tokenProvider(Fixture::token)
                    .allowTruncateAllSessions(USER)
                    .build();

    @BeforeEach
    void aStoreWithNoSessions() {
        store.truncateAllSessions();
    }

    private int sessionCount() {
        return store.listSessionIds(USER).size();
    }

    @Test
    void savesAndGetsASingleState() {
        store.save(USER, "session1", "testModule", new TestState("test_value", 42));
        assertTrue(store.exists(USER, "session1"));
        Optional<TestState> loaded = store.get(USER, "session1", "testModule", TestState.class);
        assertTrue(loaded.isPresent());
        assertEquals("test_value", loaded.get().value());
        assertEquals(42, loaded.get().count());
    }

    @Test
    void savesAndGetsASingleStateAsTheAnonymousUser() {
        // The reference's own user (null), on the server that allows anonymous access.
        HttpAgentStateStore anonymous = Fixture.store(Fixture.ANON_URL).store();
        String s = Fixture.session("session1");
        anonymous.save(null, s, "testModule", new TestState("test_value", 42));
        assertTrue(anonymous.exists(null, s));
        assertEquals(Optional.of(new TestState("test_value", 42)), anonymous.get(null, s, "testModule", TestState.class));
        assertTrue(anonymous.listSessionIds(null).contains(s));
        anonymous.delete(null, s);
        assertFalse(anonymous.exists(null, s));
    }

    @Test
    void savesAndGetsAListState() {
        store.save(USER, "session1", "testList", List.of(new TestState("value1", 1), new TestState("value2", 2)));
        List<TestState> loaded = store.getList(USER, "session1", "testList", TestState.class);
        assertEquals(2, loaded.size());
        assertEquals("value1", loaded.get(0).value());
        assertEquals("value2", loaded.get(1).value());
    }

    @Test
    void aStateNeverSavedIsEmpty() {
        assertFalse(store.get(USER, "non_existent", "testModule", TestState.class).isPresent());
    }

    @Test
    void aListNeverSavedIsEmpty() {
        assertTrue(store.getList(USER, "non_existent", "testList", TestState.class).isEmpty());
    }

    @Test
    void aSessionNeverSavedDoesNotExist() {
        assertFalse(store.exists(USER, "non_existent"));
    }

    @Test
    void deletesASession() {
        store.save(USER, "session_to_delete", "testModule", new TestState("value", 0));
        assertTrue(store.exists(USER, "session_to_delete"));
        store.delete(USER, "session_to_delete");
        assertFalse(store.exists(USER, "session_to_delete"));
    }

    @Test
    void listsEverySessionId() {
        store.save(USER, "session1", "testModule", new TestState("value1", 1));
        store.save(USER, "session2", "testModule", new TestState("value2", 2));
        store.save(USER, "session3", "testModule", new TestState("value3", 3));
        Set<String> ids = store.listSessionIds(USER);
        assertEquals(3, ids.size());
        assertEquals(Set.of("session1", "session2", "session3"), ids);
    }

    @Test
    void listsNoSessionIdsWhenThereAreNone() {
        assertTrue(store.listSessionIds(USER).isEmpty());
    }

    @Test
    void countsSessions() {
        assertEquals(0, sessionCount());
        store.save(USER, "session1", "testModule", new TestState("value1", 1));
        assertEquals(1, sessionCount());
        store.save(USER, "session2", "testModule", new TestState("value2", 2));
        assertEquals(2, sessionCount());
        store.delete(USER, "session1");
        assertEquals(1, sessionCount());
    }

    @Test
    void clearsEverySession() {
        store.save(USER, "session1", "testModule", new TestState("value1", 1));
        store.save(USER, "session2", "testModule", new TestState("value2", 2));
        assertEquals(2, sessionCount());
        store.truncateAllSessions();
        assertEquals(0, sessionCount());
        assertFalse(store.exists(USER, "session1"));
        assertFalse(store.exists(USER, "session2"));
    }

    @Test
    void savingAgainReplacesTheState() {
        store.save(USER, "update_session", "testModule", new TestState("initial", 1));
        store.save(USER, "update_session", "testModule", new TestState("updated", 2));
        Optional<TestState> loaded = store.get(USER, "update_session", "testModule", TestState.class);
        assertTrue(loaded.isPresent());
        assertEquals("updated", loaded.get().value());
        assertEquals(2, loaded.get().count());
    }

    @Test
    void keepsSeveralKeysInOneSession() {
        store.save(USER, "multi_key_session", "module1", new TestState("value1", 1));
        store.save(USER, "multi_key_session", "module2", new TestState("value2", 2));
        Optional<TestState> one = store.get(USER, "multi_key_session", "module1", TestState.class);
        Optional<TestState> two = store.get(USER, "multi_key_session", "module2", TestState.class);
        assertTrue(one.isPresent());
        assertTrue(two.isPresent());
        assertEquals("value1", one.get().value());
        assertEquals("value2", two.get().value());
    }

    @Test
    void aMissingKeyOfAnExistingSessionIsEmpty() {
        store.save(USER, "existing_session", "module1", new TestState("value1", 1));
        assertFalse(store.get(USER, "existing_session", "missing_key", TestState.class).isPresent());
    }
}
