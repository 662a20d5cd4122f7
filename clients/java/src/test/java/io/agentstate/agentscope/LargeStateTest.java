package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentstate.agentscope.Fixture.AgentState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** State over the request body limit: values through presigned URLs, lists in parts. */
class LargeStateTest {
    private static final String USER = "ivan";

    private static HttpAgentStateStore store(String url, int bodyLimit, List<RequestEvent> events) {
        return HttpAgentStateStore.builder()
                .baseUrl(url)
                .tokenProvider(Fixture::token)
                .bodyLimitBytes(bodyLimit)
                .requestListener(events::add)
                .build();
    }

    private static List<String> calls(List<RequestEvent> events) {
        return events.stream().map(e -> e.method() + " " + e.path()).toList();
    }

    @Test
    void aValueOverTheBodyLimitGoesStraightToTheObjectStoreAndBack() {
        List<RequestEvent> events = new CopyOnWriteArrayList<>();
        HttpAgentStateStore store = store(Fixture.ANON_URL, 4 << 20, events); // the fs server presigns
        String s = Fixture.session("big");
        AgentState big = new AgentState("z".repeat(5 << 20), 1, Map.of("k", "v"));
        store.save(USER, s, "agent_state", big);
        String uploads = HttpAgentStateStore.valuePath(s, "agent_state") + "/uploads";
        assertEquals(List.of("POST " + uploads, "PUT (object store)"), calls(events).subList(0, 2));
        assertTrue(calls(events).get(2).startsWith("POST " + uploads + "/"));
        assertEquals(3, events.size());

        events.clear();
        assertEquals(big, store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
        assertEquals(List.of("GET " + HttpAgentStateStore.valuePath(s, "agent_state"), "GET (object store)"), calls(events));
        assertEquals(303, events.get(0).status());

        // Versions and conditions hold for it as for any value.
        long version = store.getVersioned(USER, s, "agent_state", AgentState.class).version();
        AgentState bigger = new AgentState("y".repeat(5 << 20), 2, Map.of());
        long next = store.saveIfVersion(USER, s, "agent_state", bigger, version);
        assertTrue(next > 0);
        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", big, version), "stale");
        assertEquals(next, store.getVersioned(USER, s, "agent_state", AgentState.class).version());
    }

    @Test
    void aServerThatAnswers413IsSentTheValueByUploadToo() {
        List<RequestEvent> events = new CopyOnWriteArrayList<>();
        HttpAgentStateStore store = store(Fixture.ANON_URL, 64 << 20, events); // thinks the server takes 64 MiB
        String s = Fixture.session("big-413");
        AgentState big = new AgentState("q".repeat(5 << 20), 1, Map.of());
        store.save(USER, s, "agent_state", big);
        assertEquals(413, events.get(0).status());
        assertEquals(big, store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
    }

    @Test
    void aBackendWithoutPresignedUrlsRefusesABigValueTyped() {
        HttpAgentStateStore store = store(Fixture.URL, 64 << 10, new ArrayList<>()); // the memory server
        UnsupportedByServerException e = assertThrows(
                UnsupportedByServerException.class,
                () -> store.save(USER, Fixture.session("no-presign"), "agent_state", new AgentState("w".repeat(100_000), 0, Map.of())));
        assertEquals("unsupported", e.code());
        assertEquals(501, e.status());
    }

    @Test
    void aListOverTheBodyLimitIsWrittenInPartsAndRewrittenByTruncateAndAppend() {
        List<RequestEvent> events = new CopyOnWriteArrayList<>();
        HttpAgentStateStore store = store(Fixture.URL, 64 << 10, events);
        String s = Fixture.session("big-list");
        List<Msg> items = IntStream.rangeClosed(1, 300).mapToObj(i -> new Msg("user", "m".repeat(500) + i, i)).toList();
        store.save(USER, s, "memory_messages", items);
        String list = HttpAgentStateStore.listPath(s, "memory_messages");
        assertEquals("GET " + list, calls(events).get(0), "the stored list is read first");
        assertTrue(calls(events).subList(1, events.size()).stream().allMatch(c -> c.equals("POST " + list + "/items")));
        assertTrue(events.size() >= 1 + 5, "150 KB in parts of at most 32 KB");
        assertTrue(events.stream().allMatch(e -> e.bodyBytes() <= 64 << 10));

        // Another store edits the second item: the list is cut after the first and the rest appended.
        List<RequestEvent> other = new CopyOnWriteArrayList<>();
        HttpAgentStateStore editor = store(Fixture.URL, 64 << 10, other);
        List<Msg> edited = new ArrayList<>(items);
        edited.set(1, new Msg("assistant", "edited", 2));
        editor.save(USER, s, "memory_messages", edited);
        assertTrue(calls(other).contains("POST " + list + "/truncate"));
        assertEquals(edited, Fixture.store().store().getList(USER, s, "memory_messages", Msg.class));
        var archives = Fixture.archives(USER, s, "memory_messages");
        assertEquals(1, archives.size());
        assertEquals(1, archives.get(0).path("offset").asInt(), "only the removed items are archived");
    }
}
