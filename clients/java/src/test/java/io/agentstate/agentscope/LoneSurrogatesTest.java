package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** Lone surrogates become U+FFFD before a state is sent; pairs and clean JSON are left as they are. */
class LoneSurrogatesTest {
    private static final ObjectMapper JSON = HttpAgentStateStore.defaultMapper();

    @Test
    void aLoneHalfAnywhereIsReplacedAPairIsKept() {
        assertEquals("\uFFFD", LoneSurrogates.replace("\uD800"));
        assertEquals("a\uFFFD", LoneSurrogates.replace("a\uD83D"), "a high half at the end");
        assertEquals("\uFFFDa", LoneSurrogates.replace("\uDE00a"), "a low half first");
        assertEquals("\uFFFD\uFFFD", LoneSurrogates.replace("\uDE00\uD83D"), "halves in the wrong order");
        assertEquals("\uD83D\uDE00\uFFFD", LoneSurrogates.replace("\uD83D\uDE00\uD83D"));
        assertEquals("\uFFFD\uD83D\uDE00", LoneSurrogates.replace("\uD83D\uD83D\uDE00"), "a high half before a pair");
        String clean = "plain \uD83D\uDE00 text";
        assertSame(clean, LoneSurrogates.replace(clean));
    }

    @Test
    void theTreeIsCopiedOnlyWhereItChanged() throws Exception {
        JsonNode clean = JSON.readTree("{\"a\":[1,\"x\",{\"b\":null}],\"c\":true}");
        assertSame(clean, LoneSurrogates.replace(clean, JSON));
        JsonNode broken = JSON.valueToTree(java.util.Map.of("k\uDC00", java.util.List.of("v\uD800", 2)));
        assertEquals(JSON.readTree("{\"k\uFFFD\":[\"v\uFFFD\",2]}"), LoneSurrogates.replace(broken, JSON));
    }
}
