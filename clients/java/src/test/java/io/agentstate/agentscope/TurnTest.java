package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static io.agentstate.agentscope.Fixture.messages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.agentstate.agentscope.Fixture.AgentState;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The turn helper: one call to begin (lease + snapshot), reads from it, buffered saves, one commit. */
class TurnTest {
    private static final String USER = "heidi";
    private static final List<String> VALUES = List.of("agent_state");
    private static final List<String> LISTS = List.of("memory_messages");

    private final Fixture.Recorded recorded = Fixture.store();
    private final HttpAgentStateStore store = recorded.store();

    @Test
    void aTurnIsTwoCallsReadsFromTheSnapshotAndSavesInOneCommit() {
        String s = Fixture.session("turn");
        store.save(USER, s, "agent_state", new AgentState("", 1, Map.of()));
        store.save(USER, s, "memory_messages", messages(1, 4));
        Fixture.Recorded fresh = Fixture.store(); // knows nothing of the list: the turn's snapshot tells it
        recorded.reset();
        AgentStateTurn.CommitResult result;
        try (AgentStateTurn turn = fresh.store().beginTurn(USER, s, VALUES, LISTS)) {
            assertTrue(turn.sessionExisted());
            assertEquals(1L, turn.version("agent_state"), "the snapshot's revision");
            AgentState state = turn.get("agent_state", AgentState.class).orElseThrow();
            List<Msg> context = new ArrayList<>(turn.getList("memory_messages", Msg.class));
            assertEquals(messages(1, 4), context);
            context.addAll(messages(5, 6));
            turn.save("memory_messages", context);
            turn.save("agent_state", new AgentState("", state.curIter() + 1, Map.of()));
            // A read after a save in the same turn sees the save.
            assertEquals(2, turn.get("agent_state", AgentState.class).orElseThrow().curIter());
            assertEquals(messages(1, 6), turn.getList("memory_messages", Msg.class));
            result = turn.commit();
        }
        assertEquals(List.of("POST /v1/sessions/" + s + "/turns", "POST /v1/sessions/" + s + "/commits"), fresh.calls());
        assertEquals("appended", result.listActions().get("memory_messages"));
        assertEquals(2L, result.versions().get("agent_state"), "the next revision");
        assertEquals(2L, store.getVersioned(USER, s, "agent_state", AgentState.class).version());
        assertEquals(messages(1, 6), store.getList(USER, s, "memory_messages", Msg.class));
        assertEquals(2, store.get(USER, s, "agent_state", AgentState.class).orElseThrow().curIter());

        // After the turn the store knows the committed list: a plain save appends only the new item.
        fresh.reset();
        fresh.store().save(USER, s, "memory_messages", messages(1, 7));
        assertEquals(List.of("POST /v1/sessions/" + s + "/lists/memory_messages/items"), fresh.calls());
    }

    @Test
    void theLeaseIsReleasedByTheCommitAndHeldUntilThen() {
        String s = Fixture.session("lease");
        HttpAgentStateStore impatient =
                HttpAgentStateStore.builder()
                        .baseUrl(Fixture.URL)
                        .tokenProvider(Fixture::token)
                        .leaseWait(Duration.ZERO)
                        .build();
        try (AgentStateTurn turn = impatient.beginTurn(USER, s, VALUES, LISTS)) {
            assertFalse(turn.sessionExisted());
            assertEquals(Optional.empty(), turn.get("agent_state", AgentState.class));
            assertEquals(List.of(), turn.getList("memory_messages", Msg.class));
            LockHeldException held = assertThrows(LockHeldException.class, () -> impatient.beginTurn(USER, s, VALUES, LISTS));
            assertEquals(turn.owner(), held.holder());
            assertEquals("lock-held", held.code());
            turn.save("memory_messages", messages(1, 2));
            turn.commit();
        }
        try (AgentStateTurn next = impatient.beginTurn(USER, s, VALUES, LISTS)) {
            assertTrue(next.sessionExisted());
            assertEquals(messages(1, 2), next.getList("memory_messages", Msg.class));
        }
        // Closed without a commit: released, nothing written.
        try (AgentStateTurn again = impatient.beginTurn(USER, s, VALUES, LISTS)) {
            assertEquals(messages(1, 2), again.getList("memory_messages", Msg.class));
        }
    }

    @Test
    void aCompactionInATurnReplacesOnTheHashItReadAndArchives() {
        String s = Fixture.session("compact");
        store.save(USER, s, "memory_messages", messages(1, 6));
        try (AgentStateTurn turn = store.beginTurn(USER, s, VALUES, LISTS)) {
            List<Msg> compacted = List.of(new Msg("system", "__compaction_summary__", 7), new Msg("user", "message 6", 6));
            turn.save("memory_messages", compacted);
            assertEquals("rewritten", turn.commit().listActions().get("memory_messages"));
        }
        assertEquals(2, store.getList(USER, s, "memory_messages", Msg.class).size());
        assertEquals(1, Fixture.archives(USER, s, "memory_messages").size());
    }

    @Test
    void aListChangedBehindTheTurnFailsTheCommitAndNothingIsWritten() {
        String s = Fixture.session("behind");
        store.save(USER, s, "memory_messages", messages(1, 2));
        try (AgentStateTurn turn = store.beginTurn(USER, s, VALUES, LISTS)) {
            // A writer that ignores the lease appends meanwhile.
            Fixture.store().store().save(USER, s, "memory_messages", messages(1, 3));
            turn.save("agent_state", new AgentState("", 9, Map.of()));
            turn.save("memory_messages", messages(1, 4));
            StateApiException e = assertThrows(StateApiException.class, turn::commit);
            assertEquals("commit-conflict", e.code());
            assertTrue(e instanceof ConflictException);
        }
        assertEquals(Optional.empty(), store.get(USER, s, "agent_state", AgentState.class));
        assertEquals(messages(1, 3), store.getList(USER, s, "memory_messages", Msg.class));
    }

    @Test
    void deletesAndKeysTheTurnDidNotRead() {
        String s = Fixture.session("delete");
        store.save(USER, s, "agent_state", new AgentState("", 1, Map.of()));
        try (AgentStateTurn turn = store.beginTurn(USER, s, VALUES, List.of())) {
            assertThrows(IllegalArgumentException.class, () -> turn.get("other", AgentState.class));
            assertThrows(IllegalArgumentException.class, () -> turn.getList("memory_messages", Msg.class));
            turn.delete("agent_state");
            assertEquals(Optional.empty(), turn.get("agent_state", AgentState.class));
            turn.save("memory_messages", messages(1, 2)); // not read: sent whole
            turn.commit();
            assertThrows(IllegalStateException.class, () -> turn.save("agent_state", new AgentState("", 2, Map.of())));
        }
        assertEquals(Optional.empty(), store.get(USER, s, "agent_state", AgentState.class));
        assertEquals(messages(1, 2), store.getList(USER, s, "memory_messages", Msg.class));
    }

    @Test
    void aListLargerThanTheSnapshotIsReadWholeAndAGrowthOverTheCommitsItemLimitIsStillWritten() {
        String s = Fixture.session("long-turn");
        // 1,200 items of 4 KB: more than one answer holds, so the snapshot has the recent ones only.
        java.util.function.IntFunction<Msg> big = i -> new Msg("user", "x".repeat(4000) + i, i);
        List<Msg> many = java.util.stream.IntStream.rangeClosed(1, 1200).mapToObj(big).toList();
        store.save(USER, s, "memory_messages", many.subList(0, 600));
        store.save(USER, s, "memory_messages", many);
        Fixture.Recorded fresh = Fixture.store();
        try (AgentStateTurn turn = fresh.store().beginTurn(USER, s, VALUES, List.of("memory_messages"))) {
            assertEquals(many, turn.getList("memory_messages", Msg.class));
            assertTrue(fresh.calls().stream().anyMatch(c -> c.startsWith("GET ")), "the older items were read");
            List<Msg> grown = new ArrayList<>(many);
            grown.addAll(messages(1201, 2500));
            turn.save("memory_messages", grown);
            turn.save("agent_state", new AgentState("", 1, Map.of()));
            turn.commit();
            assertEquals(grown, store.getList(USER, s, "memory_messages", Msg.class));
        }
        assertEquals(0, Fixture.archives(USER, s, "memory_messages").size(), "appended, never rewritten");
        assertEquals(1, store.get(USER, s, "agent_state", AgentState.class).orElseThrow().curIter());
    }

    @Test
    void aCommitSendsTheVersionAndRevisionTheSnapshotReadAndAnswersTheNewRevision() throws IOException {
        // A scripted server, to see the commit's body: the snapshot read agent_state at e4, revision 4.
        List<JsonNode> commits = new CopyOnWriteArrayList<>();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", x -> {
            byte[] body = x.getRequestBody().readAllBytes();
            String answer;
            if (x.getRequestURI().getPath().endsWith("/turns")) {
                answer = "{\"lease\":{\"owner\":\"o\",\"token\":3,\"expiresAt\":\"2030-01-01T00:00:00Z\"},\"exists\":true,"
                        + "\"values\":[{\"key\":\"agent_state\",\"value\":{\"summary\":\"\",\"curIter\":1,\"contexts\":{}},"
                        + "\"etag\":\"e4\",\"revision\":4},{\"key\":\"other\",\"absent\":true}],\"lists\":[]}";
            } else {
                commits.add(Fixture.JSON.readTree(body));
                answer = "{\"commitId\":\"c\",\"values\":[{\"key\":\"agent_state\",\"etag\":\"e5\",\"revision\":5},"
                        + "{\"key\":\"other\",\"etag\":\"f1\",\"revision\":1}],\"lists\":[],"
                        + "\"lease\":{\"owner\":\"o\",\"released\":true}}";
            }
            byte[] bytes = answer.getBytes(StandardCharsets.UTF_8);
            x.getResponseHeaders().add("Content-Type", "application/json");
            x.sendResponseHeaders(x.getRequestURI().getPath().endsWith("/turns") ? 201 : 200, bytes.length);
            x.getResponseBody().write(bytes);
            x.close();
        });
        server.start();
        try {
            HttpAgentStateStore scripted =
                    HttpAgentStateStore.builder()
                            .baseUrl("http://127.0.0.1:" + server.getAddress().getPort())
                            .tokenProvider(u -> "t")
                            .build();
            AgentStateTurn.CommitResult result;
            try (AgentStateTurn turn = scripted.beginTurn(USER, "s", List.of("agent_state", "other"), List.of())) {
                assertEquals(4L, turn.version("agent_state"));
                assertEquals(0L, turn.version("other"), "absent");
                turn.save("agent_state", new AgentState("", 2, Map.of()));
                turn.save("other", new AgentState("", 1, Map.of()));
                result = turn.commit();
            }
            JsonNode values = commits.get(0).path("values");
            assertEquals("e4", values.get(0).path("seenVersion").asText());
            assertEquals(4L, values.get(0).path("seenRevision").asLong());
            assertFalse(values.get(0).has("ifVersion"), "a hint, not a condition");
            assertFalse(values.get(1).has("seenVersion") || values.get(1).has("seenRevision"), "nothing read: nothing seen");
            assertEquals(Map.of("agent_state", 5L, "other", 1L), result.versions());
        } finally {
            server.stop(0);
        }
    }

    @Test
    void aValueOverTheBodyLimitIsSavedByATurnAndReadBackFromItsDownload() {
        Fixture.Recorded fs = Fixture.store(Fixture.ANON_URL); // the fs server presigns
        String s = Fixture.session("big-turn");
        AgentState big = new AgentState("b".repeat(5 << 20), 1, Map.of());
        try (AgentStateTurn turn = fs.store().beginTurn(USER, s, VALUES, LISTS)) {
            turn.save("agent_state", big);
            turn.save("memory_messages", messages(1, 2));
            AgentStateTurn.CommitResult result = turn.commit();
            assertEquals(1L, result.versions().get("agent_state"), "saved ahead of the commit: its revision");
            assertEquals(1L, fs.store().getVersioned(USER, s, "agent_state", AgentState.class).version());
        }
        fs.reset();
        try (AgentStateTurn turn = fs.store().beginTurn(USER, s, VALUES, LISTS)) {
            assertEquals(big, turn.get("agent_state", AgentState.class).orElseThrow());
            assertEquals(List.of("POST /v1/sessions/" + s + "/turns", "GET (object store)"), fs.calls());
            assertEquals(messages(1, 2), turn.getList("memory_messages", Msg.class));
        }
    }

    @Test
    void valuesTogetherOverTheBodyLimitAreCommittedEachUnderHalfOfIt() {
        Fixture.Recorded fs = Fixture.store(Fixture.ANON_URL); // the fs server presigns
        String s = Fixture.session("three-big");
        // Each under half of the 4 MiB body limit, together over it: one goes ahead, the others in the commit.
        AgentState a = new AgentState("a".repeat(3 << 19), 1, Map.of());
        AgentState b = new AgentState("b".repeat(3 << 19), 2, Map.of());
        AgentState c = new AgentState("c".repeat(3 << 19), 3, Map.of());
        try (AgentStateTurn turn = fs.store().beginTurn(USER, s, List.of("a", "b", "c"), LISTS)) {
            turn.save("a", a);
            turn.save("b", b);
            turn.save("c", c);
            turn.save("memory_messages", messages(1, 3));
            turn.commit();
        }
        assertEquals(a, fs.store().get(USER, s, "a", AgentState.class).orElseThrow());
        assertEquals(b, fs.store().get(USER, s, "b", AgentState.class).orElseThrow());
        assertEquals(c, fs.store().get(USER, s, "c", AgentState.class).orElseThrow());
        assertEquals(messages(1, 3), fs.store().getList(USER, s, "memory_messages", Msg.class));
    }
}
