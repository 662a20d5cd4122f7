package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static io.agentstate.agentscope.Fixture.messages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentstate.agentscope.Fixture.AgentState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The seed's walkthrough (seeds/000): a conversation in two halves, the messages appended and the
 * rest overwritten as one blob; session demo-1 saved, read back and listed; a compaction (the list
 * shrinks to a summary and its tail, the summary field left empty as the harness leaves it) that
 * archives the old messages and continues; and a second compaction that does not fail.
 */
class SeedWalkthroughTest {
    private static final String USER = "alice";
    private static final String SESSION = "demo-1";

    @Test
    void demoSessionSavedReadBackListedCompactedTwice() {
        Fixture.Recorded r = Fixture.store();
        HttpAgentStateStore store = r.store();
        AgentState state = new AgentState("", 1, Map.of("plan", "{}"));

        // Turn 1: the framework saves agent_state and the messages after agent.call().
        store.save(USER, SESSION, "agent_state", state);
        store.save(USER, SESSION, "memory_messages", messages(1, 4));
        assertEquals(List.of("PUT /v1/sessions/demo-1/state/agent_state", "PUT /v1/sessions/demo-1/lists/memory_messages"), r.calls());

        // Read back, as at the start of the next call.
        assertEquals(state, store.get(USER, SESSION, "agent_state", AgentState.class).orElseThrow());
        assertEquals(messages(1, 4), store.getList(USER, SESSION, "memory_messages", Msg.class));
        assertTrue(store.listSessionIds(USER).contains(SESSION));
        assertTrue(store.exists(USER, SESSION));

        // Turn 2: two more messages, only those two sent.
        r.reset();
        store.save(USER, SESSION, "memory_messages", messages(1, 6));
        assertEquals(List.of("POST /v1/sessions/demo-1/lists/memory_messages/items"), r.calls());
        assertTrue(r.events().get(0).bodyBytes() < 400, "only the new items: " + r.events().get(0).bodyBytes() + " bytes");

        // Compaction: the context becomes the summary message and the last two; summary stays "".
        List<Msg> compacted = new ArrayList<>();
        compacted.add(new Msg("system", "__compaction_summary__ of 1..4", 7));
        compacted.addAll(messages(5, 6));
        store.save(USER, SESSION, "memory_messages", compacted);
        store.save(USER, SESSION, "agent_state", new AgentState("", 2, Map.of("plan", "{}")));
        JsonNode archives = Fixture.archives(USER, SESSION, "memory_messages");
        assertEquals(1, archives.size(), "the old messages are archived, not deleted");
        assertEquals(6, archives.get(0).path("count").asInt());

        // It continues: new messages append after the compacted list, numbered upward.
        r.reset();
        List<Msg> next = new ArrayList<>(compacted);
        next.add(new Msg("user", "message 8", 8));
        store.save(USER, SESSION, "memory_messages", next);
        assertEquals(List.of("POST /v1/sessions/demo-1/lists/memory_messages/items"), r.calls());
        assertEquals(next, store.getList(USER, SESSION, "memory_messages", Msg.class));

        // A second compaction does not fail and archives again.
        List<Msg> again = List.of(new Msg("system", "__compaction_summary__ of 1..8", 9), new Msg("user", "message 8", 8));
        store.save(USER, SESSION, "memory_messages", again);
        assertEquals(again, store.getList(USER, SESSION, "memory_messages", Msg.class));
        assertEquals(2, Fixture.archives(USER, SESSION, "memory_messages").size());
        assertEquals(2, store.get(USER, SESSION, "agent_state", AgentState.class).orElseThrow().curIter());
    }

    @Test
    void anEditOfAnOldMessageOfTheSameCountIsARewriteNotASkip() {
        HttpAgentStateStore store = Fixture.store().store();
        String session = Fixture.session("edit");
        store.save(USER, session, "memory_messages", messages(1, 8));
        List<Msg> edited = new ArrayList<>(messages(1, 8));
        edited.set(3, new Msg("assistant", "message 4, redacted", 4));
        store.save(USER, session, "memory_messages", edited);
        assertEquals(edited, store.getList(USER, session, "memory_messages", Msg.class));
        assertEquals(1, Fixture.archives(USER, session, "memory_messages").size());
    }

    @Test
    void aSecondStoreThatNeverSawTheListStillAppendsThroughTheServer() {
        String session = Fixture.session("fresh");
        Fixture.store().store().save(USER, session, "memory_messages", messages(1, 3));
        Fixture.Recorded other = Fixture.store();
        other.store().save(USER, session, "memory_messages", messages(1, 5));
        // Unknown to this store: the whole list is sent, and the server finds it an append.
        assertEquals(List.of("PUT /v1/sessions/" + session + "/lists/memory_messages"), other.calls());
        assertEquals(0, Fixture.archives(USER, session, "memory_messages").size());
        assertEquals(messages(1, 5), other.store().getList(USER, session, "memory_messages", Msg.class));
    }
}
