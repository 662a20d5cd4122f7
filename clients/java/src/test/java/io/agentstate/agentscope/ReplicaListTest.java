package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.state.ConcurrentSessionModificationException;
import io.agentscope.core.state.ConflictPolicy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Two replicas (two store instances, as two processes would hold) saving the same list through
 * {@code save(userId, sessionId, key, List)}, each from what it read: the default is the SPI's
 * last-writer-wins, which loses the other replica's items (archived); {@code FAIL} refuses the
 * second save, {@code APPEND_MERGE} keeps both replicas' new items, the other writer's first.
 */
class ReplicaListTest {
    private static final String USER = "heidi";
    private static final String KEY = "memory_messages";

    private static HttpAgentStateStore replica(String url, ConflictPolicy policy) {
        return HttpAgentStateStore.builder()
                .baseUrl(url)
                .tokenProvider(Fixture::token)
                .listConflictPolicy(policy)
                .build();
    }

    private static List<Msg> plus(List<Msg> base, String who, int n) {
        List<Msg> list = new ArrayList<>(base);
        for (int i = 1; i <= n; i++) list.add(new Msg("assistant", who + " " + i, base.size() + i));
        return list;
    }

    /** Both replicas read the same 3 items; then a saves 20 more of its own, then b 5 of its own. */
    private record Race(String session, List<Msg> base, List<Msg> a, List<Msg> b, HttpAgentStateStore second) {}

    private static Race race(String url, ConflictPolicy policy) {
        HttpAgentStateStore first = replica(url, policy);
        HttpAgentStateStore second = replica(url, policy);
        String s = Fixture.session("replicas");
        first.save(USER, s, KEY, Fixture.messages(1, 3));
        List<Msg> base = first.getList(USER, s, KEY, Msg.class);
        assertEquals(base, second.getList(USER, s, KEY, Msg.class));
        List<Msg> a = plus(base, "a", 20);
        first.save(USER, s, KEY, a);
        return new Race(s, base, a, plus(base, "b", 5), second);
    }

    @Test
    void lastWriterWinsByDefaultAndLosesTheOtherReplicasItems() {
        HttpAgentStateStore first = HttpAgentStateStore.builder().baseUrl(Fixture.URL).tokenProvider(Fixture::token).build();
        HttpAgentStateStore second = HttpAgentStateStore.builder().baseUrl(Fixture.URL).tokenProvider(Fixture::token).build();
        String s = Fixture.session("replicas-lww");
        first.save(USER, s, KEY, Fixture.messages(1, 3));
        List<Msg> base = second.getList(USER, s, KEY, Msg.class);
        first.getList(USER, s, KEY, Msg.class);
        first.save(USER, s, KEY, plus(base, "a", 20));
        second.save(USER, s, KEY, plus(base, "b", 5));
        List<Msg> stored = first.getList(USER, s, KEY, Msg.class);
        // The SPI's meaning: the whole list of the last writer, a's 20 items only in an archive.
        assertEquals(plus(base, "b", 5), stored);
        assertFalse(stored.stream().anyMatch(m -> m.content().startsWith("a ")), "stored " + stored);
        assertEquals(1, Fixture.archives(USER, s, KEY).size());
    }

    @Test
    void failRefusesTheSecondReplicasSaveAndWritesNothing() {
        for (String url : List.of(Fixture.URL, Fixture.NO_CAS_URL)) {
            Race r = race(url, ConflictPolicy.FAIL);
            ConcurrentSessionModificationException e =
                    assertThrows(ConcurrentSessionModificationException.class, () -> r.second().save(USER, r.session(), KEY, r.b()));
            assertEquals(KEY, e.getKey());
            assertEquals(r.session(), e.getSessionId());
            assertEquals(USER, e.getUserId());
            assertEquals(3, e.getExpectedVersion(), "the base's count");
            assertEquals(r.a(), r.second().getList(USER, r.session(), KEY, Msg.class), url);
            // Read again, the second replica's save applies on what it read.
            List<Msg> next = plus(r.a(), "b", 5);
            r.second().save(USER, r.session(), KEY, next);
            assertEquals(next, r.second().getList(USER, r.session(), KEY, Msg.class));
        }
    }

    @Test
    void failRefusesARewriteWhoseBaseMoved() {
        Race r = race(Fixture.URL, ConflictPolicy.FAIL);
        // A compaction of what the second replica read: refused, the first replica's items kept.
        List<Msg> compacted = List.of(new Msg("system", "summary", 1));
        assertThrows(ConcurrentSessionModificationException.class, () -> r.second().save(USER, r.session(), KEY, compacted));
        assertEquals(r.a(), r.second().getList(USER, r.session(), KEY, Msg.class));
        // On its own base a compaction is written (the old list archived).
        r.second().save(USER, r.session(), KEY, compacted);
        assertEquals(compacted, r.second().getList(USER, r.session(), KEY, Msg.class));
        assertEquals(1, Fixture.archives(USER, r.session(), KEY).size());
    }

    @Test
    void failWithoutABaseReadsFirst() {
        String s = Fixture.session("replicas-nobase");
        HttpAgentStateStore writer = replica(Fixture.URL, ConflictPolicy.FAIL);
        writer.save(USER, s, KEY, Fixture.messages(1, 3));
        Fixture.Recorded fresh = Fixture.store();
        HttpAgentStateStore failing = replica(Fixture.URL, ConflictPolicy.FAIL);
        // A replica that never read the list: its save is based on a read, then appends on it.
        failing.save(USER, s, KEY, Fixture.messages(1, 5));
        assertEquals(Fixture.messages(1, 5), fresh.store().getList(USER, s, KEY, Msg.class));
        assertThrows(ConcurrentSessionModificationException.class, () -> writer.save(USER, s, KEY, Fixture.messages(1, 4)));
    }

    @Test
    void appendMergeKeepsBothReplicasItemsTheOtherWritersFirst() {
        for (String url : List.of(Fixture.URL, Fixture.NO_CAS_URL)) {
            Race r = race(url, ConflictPolicy.APPEND_MERGE);
            r.second().save(USER, r.session(), KEY, r.b());
            List<Msg> merged = new ArrayList<>(r.a());
            merged.addAll(r.b().subList(3, r.b().size()));
            assertEquals(merged, r.second().getList(USER, r.session(), KEY, Msg.class), url);
            assertEquals(0, Fixture.archives(USER, r.session(), KEY).size(), "nothing rewritten");
        }
    }

    @Test
    void appendMergeFailsWhenTheOtherReplicaRewrote() {
        HttpAgentStateStore first = replica(Fixture.URL, ConflictPolicy.APPEND_MERGE);
        HttpAgentStateStore second = replica(Fixture.URL, ConflictPolicy.APPEND_MERGE);
        String s = Fixture.session("replicas-rewrite");
        first.save(USER, s, KEY, Fixture.messages(1, 6));
        second.getList(USER, s, KEY, Msg.class);
        List<Msg> compacted = List.of(new Msg("system", "summary", 1));
        first.save(USER, s, KEY, compacted);
        assertThrows(ConcurrentSessionModificationException.class, () -> second.save(USER, s, KEY, Fixture.messages(1, 8)));
        assertEquals(compacted, first.getList(USER, s, KEY, Msg.class));
    }

    @Test
    void appendMergeLosesNoItemOfTwoReplicasAppendingAtOnce() throws Exception {
        String s = Fixture.session("replicas-threads");
        replica(Fixture.URL, ConflictPolicy.APPEND_MERGE).save(USER, s, KEY, Fixture.messages(1, 3));
        ExecutorService pool = Executors.newFixedThreadPool(2);
        CountDownLatch start = new CountDownLatch(1);
        try {
            List<Future<List<Msg>>> writers = new ArrayList<>();
            for (String who : List.of("a", "b"))
                writers.add(pool.submit(() -> {
                    HttpAgentStateStore store = replica(Fixture.URL, ConflictPolicy.APPEND_MERGE);
                    List<Msg> list = new ArrayList<>(store.getList(USER, s, KEY, Msg.class));
                    List<Msg> mine = new ArrayList<>();
                    start.await();
                    // Each replica appends to its own view of the list, never reading it again.
                    for (int i = 1; i <= 10; i++) {
                        Msg m = new Msg("assistant", who + " " + i, i);
                        list.add(m);
                        mine.add(m);
                        store.save(USER, s, KEY, list);
                    }
                    return mine;
                }));
            start.countDown();
            List<Msg> stored = List.of();
            for (Future<List<Msg>> w : writers) {
                List<Msg> mine = w.get();
                stored = Fixture.store().store().getList(USER, s, KEY, Msg.class);
                List<Msg> only = stored.stream().filter(mine::contains).toList();
                assertEquals(mine, only, "each replica's items, in its order");
            }
            assertEquals(23, stored.size(), "stored " + stored);
            assertEquals(Fixture.messages(1, 3), stored.subList(0, 3));
            assertTrue(Fixture.archives(USER, s, KEY).isEmpty(), "nothing rewritten");
        } finally {
            pool.shutdownNow();
        }
    }
}
