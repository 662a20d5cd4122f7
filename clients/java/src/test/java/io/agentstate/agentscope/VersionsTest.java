package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentscope.core.state.VersionedState;
import io.agentstate.agentscope.Fixture.AgentState;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The SPI's long versions are the server's revisions, and the compare-and-swap is on them. */
class VersionsTest {
    private static final String USER = "dave";

    private final Fixture.Recorded recorded = Fixture.store();
    private final HttpAgentStateStore store = recorded.store();

    private static AgentState state(int i) {
        return new AgentState("summary " + i, i, Map.of());
    }

    private long version(String s) {
        return store.getVersioned(USER, s, "agent_state", AgentState.class).version();
    }

    @Test
    void getVersionedOfAnAbsentValueIsNullAndZero() {
        VersionedState<AgentState> absent = store.getVersioned(USER, Fixture.session("absent"), "agent_state", AgentState.class);
        assertNull(absent.value());
        assertEquals(0L, absent.version());
    }

    @Test
    void theVersionIsTheRevisionTheServerLists() {
        String s = Fixture.session("revision");
        for (int i = 1; i <= 3; i++) store.save(USER, s, "agent_state", state(i));
        JsonNode listed = Fixture.raw(USER, HttpAgentStateStore.sessionPath(s) + "/keys").path("values").get(0);
        assertEquals(3L, listed.path("revision").asLong());
        assertEquals(3L, version(s));
    }

    @Test
    void identicalContentAndABackAndForthCountEveryWrite() {
        String s = Fixture.session("same");
        store.save(USER, s, "agent_state", state(1));
        assertEquals(1L, version(s));
        store.save(USER, s, "agent_state", state(1));
        assertEquals(2L, version(s), "identical content is a write too");
        store.save(USER, s, "agent_state", state(2));
        store.save(USER, s, "agent_state", state(1));
        assertEquals(4L, version(s), "A, A, B, A: four writes, whatever the etags");
    }

    @Test
    void createOnlyThenCompareAndSwapInOnePutThenConflicts() {
        String s = Fixture.session("cas");
        String path = HttpAgentStateStore.valuePath(s, "agent_state");
        assertEquals(1L, store.saveIfVersion(USER, s, "agent_state", state(1), 0L));
        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(9), 0L), "exists already");
        VersionedState<AgentState> read = store.getVersioned(USER, s, "agent_state", AgentState.class);
        assertEquals(state(1), read.value());
        assertEquals(1L, read.version(), "a refused write changes nothing");

        recorded.reset();
        assertEquals(2L, store.saveIfVersion(USER, s, "agent_state", state(2), 1L));
        assertEquals(List.of("PUT " + path), recorded.calls(), "If-Revision: no read first");

        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(3), 1L), "stale version");
        assertEquals(-1L, store.saveIfVersion(USER, Fixture.session("none"), "agent_state", state(3), 1L), "absent value");
        assertEquals(state(2), store.get(USER, s, "agent_state", AgentState.class).orElseThrow(), "nothing written on a conflict");
        assertEquals(2L, version(s));

        recorded.reset();
        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(3), -7L), "no value has a version below -1");
        assertEquals(List.of(), recorded.calls());

        assertEquals(3L, store.saveIfVersion(USER, s, "agent_state", state(4), -1L));
        assertEquals(3L, version(s));
        assertEquals(state(4), store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
    }

    @Test
    void anotherWriterBetweenTheReadAndTheSaveIsAConflict() {
        String s = Fixture.session("race");
        long v1 = store.saveIfVersion(USER, s, "agent_state", state(1), 0L);
        // Another store (another replica) writes after this one read the version.
        Fixture.store().store().save(USER, s, "agent_state", state(7));
        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(2), v1));
        assertEquals(state(7), store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
        assertEquals(2L, version(s));
    }

    @Test
    void aDeletedValueStartsAgainAtOne() {
        String s = Fixture.session("again");
        store.save(USER, s, "agent_state", state(1));
        store.save(USER, s, "agent_state", state(2));
        store.delete(USER, s, "agent_state");
        assertEquals(0L, version(s));
        store.save(USER, s, "agent_state", state(3));
        assertEquals(1L, version(s), "a key deleted and written again");
        store.delete(USER, s);
        assertEquals(1L, store.saveIfVersion(USER, s, "agent_state", state(4), 0L), "and so after the session's delete");
    }

    @Test
    void onAServerWithoutConditionalOverwriteARevisionConditionIsRefused() {
        HttpAgentStateStore oss = Fixture.store(Fixture.NO_CAS_URL).store();
        String s = Fixture.session("oss");
        assertEquals(1L, oss.saveIfVersion(USER, s, "agent_state", state(1), 0L));
        UnsupportedByServerException e =
                assertThrows(UnsupportedByServerException.class, () -> oss.saveIfVersion(USER, s, "agent_state", state(2), 1L));
        assertEquals("precondition-unsupported", e.code());
        assertEquals(state(1), oss.get(USER, s, "agent_state", AgentState.class).orElseThrow(), "nothing written");
        assertEquals(2L, oss.saveIfVersion(USER, s, "agent_state", state(3), -1L), "revisions still count there");
        assertEquals(2L, oss.getVersioned(USER, s, "agent_state", AgentState.class).version());
    }
}
