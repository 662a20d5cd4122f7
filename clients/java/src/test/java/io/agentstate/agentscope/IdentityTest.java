package io.agentstate.agentscope;

import static io.agentstate.agentscope.Fixture.Msg;
import static io.agentstate.agentscope.Fixture.messages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.agentstate.agentscope.Fixture.AgentState;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Users from tokens, anonymous access, and ids the reference's raw keys got wrong. */
class IdentityTest {
    private static final AgentState STATE = new AgentState("x", 1, Map.of());

    private final Fixture.Recorded recorded = Fixture.store();
    private final HttpAgentStateStore store = recorded.store();

    @Test
    void usersAreIsolated() {
        String s = Fixture.session("shared-name");
        store.save("erin", s, "agent_state", STATE);
        store.save("erin", s, "memory_messages", messages(1, 2));
        assertEquals(Optional.empty(), store.get("frank", s, "agent_state", AgentState.class));
        assertEquals(List.of(), store.getList("frank", s, "memory_messages", Msg.class));
        assertFalse(store.exists("frank", s));
        assertFalse(store.listSessionIds("frank").contains(s));
        store.delete("frank", s); // frank's delete of "his" session leaves erin's alone
        assertTrue(store.exists("erin", s));
        store.save("frank", s, "agent_state", new AgentState("frank's", 2, Map.of()));
        assertEquals(Optional.of(STATE), store.get("erin", s, "agent_state", AgentState.class));
    }

    @Test
    void anonymousAgainstAServerThatRequiresTokensIsAClearError() {
        AnonymousNotAllowedException e =
                assertThrows(AnonymousNotAllowedException.class, () -> store.save(null, "s", "agent_state", STATE));
        assertEquals(401, e.status());
        assertEquals("unauthorized", e.code());
        assertThrows(AnonymousNotAllowedException.class, () -> store.listSessionIds(" "));
        assertEquals(1, recorded.calls().stream().filter(c -> c.startsWith("PUT")).count(), "a 401 is not retried");
    }

    @Test
    void anonymousWorksWhereTheServerAllowsItNullAndBlankAlike() {
        HttpAgentStateStore anon = Fixture.store(Fixture.ANON_URL).store();
        String s = Fixture.session("anon");
        anon.save(null, s, "agent_state", STATE);
        anon.save(null, s, "memory_messages", messages(1, 3));
        assertEquals(Optional.of(STATE), anon.get("  ", s, "agent_state", AgentState.class));
        assertEquals(messages(1, 3), anon.getList("", s, "memory_messages", Msg.class));
        assertTrue(anon.listSessionIds(null).contains(s));
        assertTrue(anon.exists(null, s));
    }

    @Test
    void aUserNamedLikeTheAnonymousSentinelIsItsOwnUser() {
        HttpAgentStateStore anon = Fixture.store(Fixture.ANON_URL).store();
        String s = Fixture.session("sentinel");
        anon.save(null, s, "agent_state", STATE);
        // "__anon__" is the reference's segment for the anonymous user (OssAgentStateStore), "anon"
        // this store's: here both are users like any other, apart from the anonymous user.
        HttpAgentStateStore named =
                HttpAgentStateStore.builder().baseUrl(Fixture.ANON_URL).tokenProvider(Fixture::token).build();
        assertFalse(named.exists("anon", s));
        assertFalse(named.exists("__anon__", s));
        named.save("__anon__", s, "agent_state", new AgentState("named", 2, Map.of()));
        assertEquals("x", anon.get(null, s, "agent_state", AgentState.class).orElseThrow().summary());
    }

    @Test
    void aTokenOfAnotherUserIsRefusedNothingWritten() {
        // A provider that hands out bob's token for every user: the store says it means alice.
        HttpAgentStateStore wrong =
                HttpAgentStateStore.builder().baseUrl(Fixture.URL).tokenProvider(u -> Fixture.token("bob")).build();
        String s = Fixture.session("mismatch");
        UserMismatchException e =
                assertThrows(UserMismatchException.class, () -> wrong.save("alice", s, "agent_state", STATE));
        assertEquals(403, e.status());
        assertEquals("user-mismatch", e.code());
        assertFalse(e.getMessage().contains("bob") || e.getMessage().contains("alice"), "names neither user");
        assertThrows(UserMismatchException.class, () -> wrong.get("alice", s, "agent_state", AgentState.class));
        assertThrows(UserMismatchException.class, () -> wrong.listSessionIds("alice"));
        // Nothing landed in bob's space (nor alice's).
        assertFalse(store.exists("bob", s));
        assertFalse(store.exists("alice", s));
        // The token's own user is accepted, a non-plain one in its URL form (the header is ~base64url).
        HttpAgentStateStore right =
                HttpAgentStateStore.builder().baseUrl(Fixture.URL).tokenProvider(Fixture::token).build();
        right.save("用户-ü", s, "agent_state", STATE);
        assertEquals(Optional.of(STATE), right.get("用户-ü", s, "agent_state", AgentState.class));
    }

    @Test
    void oddSessionIdsKeysAndUsersRoundTripAndStayApart() {
        String sandbox = "sandbox/session/x";
        store.save("judy", sandbox, "agent_state", STATE);
        store.save("judy", sandbox, "memory_messages", messages(1, 2));
        assertTrue(recorded.calls().contains("PUT /v1/sessions/~c2FuZGJveC9zZXNzaW9uL3g/state/agent_state"));
        assertEquals(Optional.of(STATE), store.get("judy", sandbox, "agent_state", AgentState.class));
        assertEquals(messages(1, 2), store.getList("judy", sandbox, "memory_messages", Msg.class));
        // The reference's `s` matched `s/x`: not here.
        assertFalse(store.exists("judy", "sandbox/session"));
        assertFalse(store.exists("judy", "sandbox"));

        String unicode = "会话-ü-🚀 ";
        String key = "état/clé";
        AgentState other = new AgentState("unicode", 5, Map.of("k", "v"));
        store.save("judy", unicode, key, other);
        assertEquals(Optional.of(other), store.get("judy", unicode, key, AgentState.class));
        assertEquals(Optional.empty(), store.get("judy", unicode.trim(), key, AgentState.class), "the trailing space counts");

        for (String id : List.of("..", ".", "a b", "x.list", "~tilde", "%2F")) {
            store.save("judy", id, "agent_state", new AgentState(id, 0, Map.of()));
            assertEquals(id, store.get("judy", id, "agent_state", AgentState.class).orElseThrow().summary());
        }
        assertTrue(store.listSessionIds("judy").containsAll(Set.of(sandbox, unicode, "..", ".", "a b", "x.list", "~tilde", "%2F")));
    }

    @Test
    void usersWithSlashesOrUnicodeAreTheirOwn() {
        // The reference's raw keys: user a/b + session c was user a + session b/c.
        store.save("a/b", "c", "agent_state", STATE);
        assertEquals(Optional.empty(), store.get("a", "b/c", "agent_state", AgentState.class));
        store.save("用户-ü", "s", "agent_state", new AgentState("ü", 1, Map.of()));
        assertEquals("ü", store.get("用户-ü", "s", "agent_state", AgentState.class).orElseThrow().summary());
        assertEquals(Set.of("s"), store.listSessionIds("用户-ü"));
    }

    @Test
    void aTokenTheServerRefusesIsUnauthorized() {
        HttpAgentStateStore forged =
                HttpAgentStateStore.builder().baseUrl(Fixture.URL).tokenProvider(u -> "not.a.jwt").build();
        UnauthorizedException e =
                assertThrows(UnauthorizedException.class, () -> forged.get("erin", "s", "agent_state", AgentState.class));
        assertEquals(401, e.status());
        assertTrue(e.requestId() != null && !e.requestId().isBlank(), "carries the request id");
    }
}
