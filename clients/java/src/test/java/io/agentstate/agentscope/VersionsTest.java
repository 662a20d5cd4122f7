package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import io.agentscope.core.state.VersionedState;
import io.agentstate.agentscope.Fixture.AgentState;
import java.math.BigInteger;
import java.security.MessageDigest;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The SPI's long versions over the API's etags, and the compare-and-swap on the etag. */
class VersionsTest {
    private static final String USER = "dave";

    private final Fixture.Recorded recorded = Fixture.store();
    private final HttpAgentStateStore store = recorded.store();

    private static AgentState state(int i) {
        return new AgentState("summary " + i, i, Map.of());
    }

    @Test
    void theMappingMatchesVectorsComputedByNodeCrypto() throws Exception {
        Map<String, String> vectors =
                Fixture.JSON.readValue(System.getenv("AGENT_STATE_VERSION_VECTORS"), new TypeReference<Map<String, String>>() {});
        assertFalse(vectors.isEmpty());
        vectors.forEach((etag, version) -> assertEquals(Long.parseLong(version), HttpAgentStateStore.versionOf(etag), etag));
    }

    @Test
    void theMappingIsOnePlusTheLow62BitsAndNeverZeroOrMinusOne() throws Exception {
        BigInteger mask = BigInteger.ONE.shiftLeft(62).subtract(BigInteger.ONE);
        for (int i = 0; i < 2000; i++) {
            String etag = UUID.randomUUID().toString();
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(etag.getBytes(StandardCharsets.UTF_8));
            long expected = new BigInteger(1, digest).and(mask).longValueExact() + 1;
            long version = HttpAgentStateStore.versionOf(etag);
            assertEquals(expected, version);
            assertTrue(version >= 1 && version <= (1L << 62), "in 1..2^62: " + version);
        }
    }

    @Test
    void getVersionedOfAnAbsentValueIsNullAndZero() {
        VersionedState<AgentState> absent = store.getVersioned(USER, Fixture.session("absent"), "agent_state", AgentState.class);
        assertNull(absent.value());
        assertEquals(0L, absent.version());
    }

    @Test
    void theVersionIsThatOfTheServersEtag() {
        String s = Fixture.session("etag");
        store.save(USER, s, "agent_state", state(1));
        String etag = Fixture.raw(USER, HttpAgentStateStore.sessionPath(s) + "/keys").path("values").get(0).path("etag").asText();
        assertEquals(HttpAgentStateStore.versionOf(etag), store.getVersioned(USER, s, "agent_state", AgentState.class).version());
    }

    @Test
    void createOnlyThenCompareAndSwapThenConflicts() {
        String s = Fixture.session("cas");
        long v1 = store.saveIfVersion(USER, s, "agent_state", state(1), 0L);
        assertTrue(v1 > 0);
        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(9), 0L), "exists already");
        VersionedState<AgentState> read = store.getVersioned(USER, s, "agent_state", AgentState.class);
        assertEquals(state(1), read.value());
        assertEquals(v1, read.version());

        recorded.reset();
        long v2 = store.saveIfVersion(USER, s, "agent_state", state(2), v1);
        assertNotEquals(v1, v2);
        assertTrue(v2 > 0);
        assertEquals(List.of("HEAD /v1/sessions/" + s + "/state/agent_state", "PUT /v1/sessions/" + s + "/state/agent_state"), recorded.calls());

        assertEquals(-1L, store.saveIfVersion(USER, s, "agent_state", state(3), v1), "stale version");
        assertEquals(-1L, store.saveIfVersion(USER, Fixture.session("none"), "agent_state", state(3), v1), "absent value");
        assertEquals(state(2), store.get(USER, s, "agent_state", AgentState.class).orElseThrow(), "nothing written on a conflict");

        long v3 = store.saveIfVersion(USER, s, "agent_state", state(4), -1L);
        assertEquals(v3, store.getVersioned(USER, s, "agent_state", AgentState.class).version());
        assertEquals(state(4), store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
    }

    @Test
    void aConflictAtWriteTimeIsA412AnsweredMinusOne() {
        String s = Fixture.session("race");
        long v1 = store.saveIfVersion(USER, s, "agent_state", state(1), 0L);
        // Between this store's HEAD and PUT another writer lands: the If-Match on the etag refuses it.
        HttpAgentStateStore racing =
                HttpAgentStateStore.builder()
                        .baseUrl(Fixture.URL)
                        .tokenProvider(Fixture::token)
                        .requestListener(e -> {
                            if (e.method().equals("HEAD")) store.save(USER, s, "agent_state", state(7));
                        })
                        .build();
        assertEquals(-1L, racing.saveIfVersion(USER, s, "agent_state", state(2), v1));
        assertEquals(state(7), store.get(USER, s, "agent_state", AgentState.class).orElseThrow());
    }

    @Test
    void savingIdenticalContentKeepsTheVersionOtherContentChangesIt() {
        String s = Fixture.session("same");
        store.save(USER, s, "agent_state", state(1));
        long first = store.getVersioned(USER, s, "agent_state", AgentState.class).version();
        store.save(USER, s, "agent_state", state(1));
        assertEquals(first, store.getVersioned(USER, s, "agent_state", AgentState.class).version(), "the documented deviation");
        store.save(USER, s, "agent_state", state(2));
        assertNotEquals(first, store.getVersioned(USER, s, "agent_state", AgentState.class).version());
    }
}
