/*
 * Ported assertions of AgentScope's versioning contract test, which holds the concurrency
 * assertions of its in-memory store
 *   agentscope-ai/agentscope-java:agentscope-core/src/test/java/io/agentscope/core/state/AgentStateStoreVersioningContractTest.java
 * at commit c2d43f86e668a21ca4aa0120adf2296251eefa2e (there is no InMemoryAgentStateStoreConcurrencyTest
 * at that commit, nor in any commit of the fetched repository, all branches), written here from its assertions
 * and run on HttpAgentStateStore against the local API. Deviations (clients/java/README.md, "Ported
 * AgentScope tests"): its user "user" is a user of this test's own, and its fixed "session-1" in a
 * fresh store is a fresh session per test (the local API keeps data between tests); the
 * supportsVersioning assertion is also checked false on the server without conditional overwrite.
 */
package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentscope.core.state.AgentStateStore;
import io.agentscope.core.state.State;
import io.agentscope.core.state.VersionedState;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PortedVersioningContractTest {
    /** The reference's test state. */
    record TestState(String value) implements State {}

    private static final String USER = "peggy";
    private static final String KEY = "agent_state";

    private final AgentStateStore store = Fixture.store().store();
    private final String session = Fixture.session("session-1");

    @AfterEach
    void cleanup() {
        store.delete(USER, session);
        store.close();
    }

    private long version() {
        return store.getVersioned(USER, session, KEY, TestState.class).version();
    }

    @Test
    void aVersioningBackendSupportsVersioning() {
        assertTrue(store.supportsVersioning());
        assertFalse(Fixture.store(Fixture.NO_CAS_URL).store().supportsVersioning(), "not without conditional overwrite (OSS)");
    }

    @Test
    void anAbsentKeyIsANullValueAtVersionZero() {
        VersionedState<TestState> versioned = store.getVersioned(USER, session, KEY, TestState.class);
        assertNull(versioned.value());
        assertEquals(0L, versioned.version());
    }

    @Test
    void expectedVersionZeroCreatesOnlyWhenAbsent() {
        assertEquals(1L, store.saveIfVersion(USER, session, KEY, new TestState("created"), 0L));
        VersionedState<TestState> loaded = store.getVersioned(USER, session, KEY, TestState.class);
        assertEquals("created", loaded.value().value());
        assertEquals(1L, loaded.version());

        assertEquals(AgentStateStore.UNVERSIONED, store.saveIfVersion(USER, session, KEY, new TestState("lost"), 0L));
        assertEquals("created", store.get(USER, session, KEY, TestState.class).orElseThrow().value());
    }

    @Test
    void unversionedOverwritesUnconditionallyAndBumpsTheVersion() {
        store.save(USER, session, KEY, new TestState("v1"));
        assertEquals(1L, version());
        assertEquals(2L, store.saveIfVersion(USER, session, KEY, new TestState("v2"), AgentStateStore.UNVERSIONED));
        VersionedState<TestState> loaded = store.getVersioned(USER, session, KEY, TestState.class);
        assertEquals("v2", loaded.value().value());
        assertEquals(2L, loaded.version());
    }

    @Test
    void aPlainSaveBumpsTheVersion() {
        store.save(USER, session, KEY, new TestState("one"));
        assertEquals(1L, version());
        store.save(USER, session, KEY, new TestState("two"));
        assertEquals(2L, version());
    }

    @Test
    void ofConcurrentWritersWithTheSameExpectedVersionOnlyOneSucceeds() throws InterruptedException {
        store.saveIfVersion(USER, session, KEY, new TestState("baseline"), 0L);
        long observed = version();
        assertEquals(1L, observed);

        CountDownLatch ready = new CountDownLatch(2);
        CountDownLatch start = new CountDownLatch(1);
        AtomicInteger successes = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        for (int i = 0; i < 2; i++) {
            pool.execute(() -> {
                ready.countDown();
                try {
                    start.await();
                    if (store.saveIfVersion(USER, session, KEY, new TestState("winner"), observed) != AgentStateStore.UNVERSIONED)
                        successes.incrementAndGet();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
        }
        ready.await();
        start.countDown();
        pool.shutdown();
        assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));

        assertEquals(1, successes.get());
        assertEquals(2L, version());
    }
}
