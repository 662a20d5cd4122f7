package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static io.agentstate.agentscope.Fixture.messages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.state.AgentStateStore;
import io.agentstate.agentscope.Fixture.AgentState;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Every method of the SPI, through the interface type, against the local API. */
class SpiContractTest {
    private static final String USER = "bob";
    private static final AgentState STATE = new AgentState("s", 3, Map.of("tasks", "[]"));

    private final Fixture.Recorded recorded = Fixture.store();
    private final AgentStateStore store = recorded.store();

    @Test
    void saveAndGetASingleValueAbsentIsEmpty() {
        String s = Fixture.session("value");
        assertEquals(Optional.empty(), store.get(USER, s, "agent_state", AgentState.class));
        store.save(USER, s, "agent_state", STATE);
        assertEquals(Optional.of(STATE), store.get(USER, s, "agent_state", AgentState.class));
        AgentState replaced = new AgentState("t", 4, Map.of());
        store.save(USER, s, "agent_state", replaced);
        assertEquals(Optional.of(replaced), store.get(USER, s, "agent_state", AgentState.class));
    }

    @Test
    void saveAndGetAListAbsentIsEmpty() {
        String s = Fixture.session("list");
        assertEquals(List.of(), store.getList(USER, s, "memory_messages", Msg.class));
        store.save(USER, s, "memory_messages", messages(1, 3));
        assertEquals(messages(1, 3), store.getList(USER, s, "memory_messages", Msg.class));
        store.save(USER, s, "memory_messages", List.of());
        assertEquals(List.of(), store.getList(USER, s, "memory_messages", Msg.class));
    }

    @Test
    void anUnchangedListCostsOneConditionalReadAndNoWrite() {
        String s = Fixture.session("unchanged");
        store.save(USER, s, "memory_messages", messages(1, 3));
        recorded.reset();
        store.save(USER, s, "memory_messages", messages(1, 3));
        assertEquals(List.of("GET /v1/sessions/" + s + "/lists/memory_messages"), recorded.calls());
        assertEquals(304, recorded.events().get(0).status());
    }

    @Test
    void aListChangedByAnotherWriterIsSentWholeAndTheServerDecides() {
        String s = Fixture.session("moved");
        store.save(USER, s, "memory_messages", messages(1, 3));
        Fixture.store().store().save(USER, s, "memory_messages", messages(1, 5)); // another process appends
        recorded.reset();
        store.save(USER, s, "memory_messages", messages(1, 4)); // this one still thinks it has 3
        assertEquals(
                List.of("POST /v1/sessions/" + s + "/lists/memory_messages/items", "PUT /v1/sessions/" + s + "/lists/memory_messages"),
                recorded.calls());
        assertEquals(409, recorded.events().get(0).status());
        assertEquals(messages(1, 4), store.getList(USER, s, "memory_messages", Msg.class));
        assertEquals(1, Fixture.archives(USER, s, "memory_messages").size(), "the 5-item list was archived");
    }

    @Test
    void aLongListIsReadWholeAcrossPagesAndAppendedInChunks() {
        String s = Fixture.session("long");
        List<Msg> first = messages(1, 1500);
        store.save(USER, s, "memory_messages", first);
        Fixture.Recorded reader = Fixture.store();
        assertEquals(first, reader.store().getList(USER, s, "memory_messages", Msg.class));
        recorded.reset();
        store.save(USER, s, "memory_messages", messages(1, 3700));
        assertEquals(3, recorded.calls().size(), "2,200 new items: 1,000 + 1,000 + 200");
        assertTrue(recorded.calls().stream().allMatch(c -> c.endsWith("/items")));
        assertEquals(messages(1, 3700), reader.store().getList(USER, s, "memory_messages", Msg.class));
    }

    @Test
    void existsAndDeleteOfASession() {
        String s = Fixture.session("exists");
        assertFalse(store.exists(USER, s));
        store.save(USER, s, "memory_messages", messages(1, 2));
        assertTrue(store.exists(USER, s));
        store.delete(USER, s);
        assertFalse(store.exists(USER, s));
        assertEquals(List.of(), store.getList(USER, s, "memory_messages", Msg.class));
        store.delete(USER, s); // absent is fine
    }

    @Test
    void deleteOfOneKeyRemovesItsValueAndItsListOnly() {
        String s = Fixture.session("key");
        store.save(USER, s, "agent_state", STATE);
        store.save(USER, s, "agent_state", messages(1, 2));
        store.save(USER, s, "other", STATE);
        store.delete(USER, s, "agent_state");
        assertEquals(Optional.empty(), store.get(USER, s, "agent_state", AgentState.class));
        assertEquals(List.of(), store.getList(USER, s, "agent_state", Msg.class));
        assertEquals(Optional.of(STATE), store.get(USER, s, "other", AgentState.class));
        // Saved again after the delete: the store forgot the list, so nothing stale is appended to.
        store.save(USER, s, "agent_state", messages(1, 1));
        assertEquals(messages(1, 1), store.getList(USER, s, "agent_state", Msg.class));
    }

    @Test
    void listSessionIdsPagesThroughEverySession() {
        String user = "carol";
        Fixture.Recorded small = Fixture.store();
        HttpAgentStateStore paged =
                HttpAgentStateStore.builder()
                        .baseUrl(Fixture.URL)
                        .tokenProvider(Fixture::token)
                        .sessionPageSize(2)
                        .requestListener(small.events()::add)
                        .build();
        Set<String> made = new HashSet<>();
        for (int i = 0; i < 5; i++) {
            String s = "page-" + i;
            paged.save(user, s, "agent_state", STATE);
            made.add(s);
        }
        small.reset();
        assertEquals(made, paged.listSessionIds(user));
        assertEquals(3, small.calls().size(), "5 sessions, 2 a page");
        assertTrue(small.calls().stream().allMatch(c -> c.equals("GET /v1/sessions")));
    }

    @Test
    void versioningDefaultsAndClose() {
        assertTrue(store.supportsVersioning());
        String s = Fixture.session("close");
        store.save(USER, s, "memory_messages", messages(1, 2));
        store.close();
        // After close the store knows no list: a grown list is sent whole, and is still right.
        recorded.reset();
        store.save(USER, s, "memory_messages", messages(1, 3));
        assertEquals(List.of("PUT /v1/sessions/" + s + "/lists/memory_messages"), recorded.calls());
        assertEquals(messages(1, 3), store.getList(USER, s, "memory_messages", Msg.class));
    }

    @Test
    void blankSessionIdsAreRefusedBeforeAnyRequest() {
        assertThrows(IllegalArgumentException.class, () -> store.get(USER, " ", "k", AgentState.class));
        assertThrows(IllegalArgumentException.class, () -> store.exists(USER, null));
        assertEquals(List.of(), recorded.calls());
    }

    @Test
    void truncateAllSessionsIsRefusedUnlessEnabledThenDeletesOnlyThatUsersSessions() {
        HttpAgentStateStore plain = Fixture.store().store();
        assertThrows(UnsupportedOperationException.class, plain::truncateAllSessions);
        HttpAgentStateStore enabled =
                HttpAgentStateStore.builder()
                        .baseUrl(Fixture.URL)
                        .tokenProvider(Fixture::token)
                        .allowTruncateAllSessions("trudy")
                        .build();
        enabled.save("trudy", "t-1", "agent_state", STATE);
        enabled.save("trudy", "t-2", "memory_messages", messages(1, 2));
        String kept = Fixture.session("kept");
        enabled.save(USER, kept, "agent_state", STATE);
        enabled.truncateAllSessions();
        assertEquals(Set.of(), enabled.listSessionIds("trudy"));
        assertTrue(enabled.exists(USER, kept), "another user's session is untouched");
        assertEquals(Optional.of(STATE), enabled.get(USER, kept, "agent_state", AgentState.class));
    }
}
