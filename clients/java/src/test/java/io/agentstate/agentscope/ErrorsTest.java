package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.agentstate.agentscope.Fixture.AgentState;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Retries and typed exceptions: against a scripted server (com.sun.net.httpserver) for the
 * failures a healthy local API does not make, and against the local API for its refusals.
 */
class ErrorsTest {
    private static final AgentState STATE = new AgentState("x", 1, Map.of());

    private HttpServer server;
    /** Each request the scripted server got: method, path, headers, body. */
    private final List<Seen> seen = new CopyOnWriteArrayList<>();

    record Seen(String method, String path, Map<String, List<String>> headers, String body) {
        String header(String name) {
            List<String> values = headers.get(name);
            return values == null ? null : values.get(0);
        }
    }

    @AfterEach
    void stop() {
        if (server != null) server.stop(0);
    }

    /** A scripted server: {@code answer} gets each exchange and its number (from 1). */
    private HttpAgentStateStore scripted(BiConsumer<HttpExchange, Integer> answer, Duration timeout) throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        AtomicInteger n = new AtomicInteger();
        server.createContext("/", exchange -> {
            byte[] body = exchange.getRequestBody().readAllBytes();
            seen.add(new Seen(
                    exchange.getRequestMethod(),
                    exchange.getRequestURI().getRawPath(),
                    exchange.getRequestHeaders(),
                    new String(body, StandardCharsets.UTF_8)));
            answer.accept(exchange, n.incrementAndGet());
        });
        server.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        server.start();
        return HttpAgentStateStore.builder()
                .baseUrl("http://127.0.0.1:" + server.getAddress().getPort())
                .tokenProvider(u -> "token-of-" + u)
                .timeout(timeout)
                .attempts(3)
                .build();
    }

    private static void send(HttpExchange exchange, int status, Map<String, String> headers, String body) {
        try {
            headers.forEach((k, v) -> exchange.getResponseHeaders().add(k, v));
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
            if (bytes.length > 0) exchange.getResponseBody().write(bytes);
            exchange.close();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String problem(int status, String code) {
        return "{\"type\":\"urn:agent-state:problem:" + code + "\",\"title\":\"" + code + "\",\"status\":" + status
                + ",\"code\":\"" + code + "\",\"detail\":\"scripted " + code + "\"}";
    }

    private static final Map<String, String> PROBLEM = Map.of("Content-Type", "application/problem+json", "X-Request-Id", "req-1");

    @Test
    void a503IsRetriedAfterItsRetryAfterThenSucceeds() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> {
            if (n <= 2) send(x, 503, Map.of("Retry-After", "0", "Content-Type", "application/problem+json"), problem(503, "backend-unavailable"));
            else send(x, 200, Map.of("ETag", "\"e1\"", "Content-Type", "application/json"), "{\"summary\":\"x\",\"curIter\":1,\"contexts\":{}}");
        }, Duration.ofSeconds(5));
        assertEquals(STATE, store.get("u", "s", "agent_state", AgentState.class).orElseThrow());
        assertEquals(3, seen.size());
        assertEquals("Bearer token-of-u", seen.get(2).header("Authorization"));
    }

    @Test
    void persistent5xxIsATypedRetryableErrorWithTheRequestId() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> send(x, 500, PROBLEM, problem(500, "internal")), Duration.ofSeconds(5));
        BackendUnavailableException e =
                assertThrows(BackendUnavailableException.class, () -> store.get("u", "s", "k", AgentState.class));
        assertEquals(3, seen.size(), "every attempt");
        assertEquals("internal", e.code());
        assertEquals(500, e.status());
        assertEquals("req-1", e.requestId());
        assertTrue(e.retryable());
    }

    @Test
    void a429AskingForMoreThanTenSecondsIsRaisedAtOnce() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> send(x, 429, Map.of("Retry-After", "60"), ""), Duration.ofSeconds(5));
        BackendUnavailableException e =
                assertThrows(BackendUnavailableException.class, () -> store.exists("u", "s"));
        assertEquals(1, seen.size());
        assertEquals(429, e.status());
        assertTrue(e.retryable());
    }

    @Test
    void aReusedIdempotencyKeyIsItsOwnTypedErrorAndNeverRetried() throws IOException {
        HttpAgentStateStore store =
                scripted((x, n) -> send(x, 422, PROBLEM, problem(422, "idempotency-key-reused")), Duration.ofSeconds(5));
        IdempotencyKeyReusedException e =
                assertThrows(IdempotencyKeyReusedException.class, () -> store.get("u", "s", "k", AgentState.class));
        assertEquals(1, seen.size());
        assertEquals(422, e.status());
        assertEquals("idempotency-key-reused", e.code());
        assertFalse(e.retryable());
    }

    @Test
    void backendUnsafeIsNeverRetried() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> send(x, 503, PROBLEM, problem(503, "backend-unsafe")), Duration.ofSeconds(5));
        BackendUnavailableException e =
                assertThrows(BackendUnavailableException.class, () -> store.save("u", "s", "k", STATE));
        assertEquals(1, seen.size());
        assertFalse(e.retryable());
        assertEquals("backend-unsafe", e.code());
    }

    @Test
    void backendMisconfiguredIsNeverRetried() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> send(x, 503, PROBLEM, problem(503, "backend-misconfigured")), Duration.ofSeconds(5));
        BackendUnavailableException e =
                assertThrows(BackendUnavailableException.class, () -> store.save("u", "s", "k", STATE));
        assertEquals(1, seen.size());
        assertFalse(e.retryable());
        assertEquals("backend-misconfigured", e.code());
    }

    @Test
    void contendedIsRetriedAndSoIsADroppedConnection() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> {
            if (n == 1) send(x, 409, Map.of("Retry-After", "0", "Content-Type", "application/problem+json"), problem(409, "contended"));
            else if (n == 2) x.close(); // the connection dropped without an answer
            else send(x, 200, Map.of("Content-Type", "application/json"), "{\"etag\":\"e9\"}");
        }, Duration.ofSeconds(5));
        store.save("u", "s", "k", STATE);
        assertEquals(3, seen.size());
        assertTrue(seen.stream().allMatch(x -> x.method().equals("PUT")));
    }

    @Test
    void aDroppedConnectionOnEveryAttemptIsATypedRetryableError() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> x.close(), Duration.ofSeconds(5));
        BackendUnavailableException e = assertThrows(BackendUnavailableException.class, () -> store.exists("u", "s"));
        assertEquals(0, e.status());
        assertTrue(e.retryable());
        // 3 attempts; the JDK's HttpClient itself sends an idempotent request again once on a dropped connection.
        assertTrue(seen.size() >= 3 && seen.size() <= 6, "requests: " + seen.size());
    }

    @Test
    void timeoutsAreTypedAfterTheAttempts() throws IOException {
        HttpAgentStateStore store = scripted((x, n) -> {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            x.close();
        }, Duration.ofMillis(150));
        RequestTimeoutException e = assertThrows(RequestTimeoutException.class, () -> store.exists("u", "s"));
        assertTrue(e.retryable());
        assertTrue(seen.size() >= 1);
    }

    @Test
    void anAppendIsRetriedWithTheSameIdempotencyKeyAndTheServersHash() throws Exception {
        HttpAgentStateStore store = scripted((x, n) -> {
            if (n == 1) send(x, 200, Map.of("Content-Type", "application/json"), "{\"action\":\"created\",\"count\":1,\"hash\":\"h-from-server\"}");
            else if (n == 2) send(x, 502, Map.of(), "bad gateway");
            else send(x, 200, Map.of("Content-Type", "application/json"), "{\"action\":\"appended\",\"count\":2,\"hash\":\"h2\"}");
        }, Duration.ofSeconds(5));
        store.save("u", "s", "m", Fixture.messages(1, 1));
        store.save("u", "s", "m", Fixture.messages(1, 2));
        assertEquals(3, seen.size());
        Seen first = seen.get(1);
        Seen retry = seen.get(2);
        assertEquals("/v1/sessions/s/lists/m/items", retry.path());
        assertNotNull(first.header("Idempotency-key"));
        assertEquals(first.header("Idempotency-key"), retry.header("Idempotency-key"));
        JsonNode body = Fixture.JSON.readTree(retry.body());
        assertEquals(1, body.path("expectedCount").asInt());
        assertEquals("h-from-server", body.path("expectedHash").asText(), "the server's hash, never one computed here");
        assertEquals(1, body.path("items").size(), "only the new item");
    }

    @Test
    void aConditionalSaveWhoseAnswerWasLostIsCheckedByReadingBack() throws IOException {
        String mine = "{\"summary\":\"x\",\"curIter\":1,\"contexts\":{}}";
        HttpAgentStateStore store = scripted((x, n) -> {
            switch (n) {
                case 1 -> send(x, 503, Map.of("Retry-After", "0"), ""); // the PUT landed, its answer lost
                case 2 -> send(x, 412, PROBLEM, problem(412, "precondition-failed")); // the retry finds revision 8
                default -> send(x, 200, Map.of("ETag", "\"e2\"", "Agent-State-Revision", "8", "Content-Type", "application/json"), mine);
            }
        }, Duration.ofSeconds(5));
        assertEquals(8L, store.saveIfVersion("u", "s", "k", STATE, 7L));
        assertEquals("7", seen.get(0).header("If-revision"), "one PUT on the revision, no read first");
        assertEquals(List.of("PUT", "PUT", "GET"), seen.stream().map(Seen::method).toList());
    }

    @Test
    void aLostAnswerWhoseRetryFindsTheSameContentAtAnotherRevisionIsAConflict() throws IOException {
        // Identical content, but not at the revision this save would have written: another writer's.
        String mine = "{\"summary\":\"x\",\"curIter\":1,\"contexts\":{}}";
        HttpAgentStateStore store = scripted((x, n) -> {
            switch (n) {
                case 1 -> send(x, 503, Map.of("Retry-After", "0"), "");
                case 2 -> send(x, 412, PROBLEM, problem(412, "precondition-failed"));
                default -> send(x, 200, Map.of("ETag", "\"e3\"", "Agent-State-Revision", "9", "Content-Type", "application/json"), mine);
            }
        }, Duration.ofSeconds(5));
        assertEquals(-1L, store.saveIfVersion("u", "s", "k", STATE, 7L));
    }

    @Test
    void aValueReadWithoutARevisionHasNoVersion() throws IOException {
        // A server older than revisions answers an ETag only: get works, getVersioned says why it cannot.
        String mine = "{\"summary\":\"x\",\"curIter\":1,\"contexts\":{}}";
        HttpAgentStateStore store = scripted(
                (x, n) -> send(x, 200, Map.of("ETag", "\"e1\"", "Content-Type", "application/json"), mine),
                Duration.ofSeconds(5));
        assertEquals(STATE, store.get("u", "s", "k", AgentState.class).orElseThrow());
        StateApiException e = assertThrows(StateApiException.class, () -> store.getVersioned("u", "s", "k", AgentState.class));
        assertTrue(e.getMessage().contains("Agent-State-Revision"), e.getMessage());
    }

    @Test
    void theLocalApisRefusalsAreTypedWithCodeAndRequestId() {
        HttpAgentStateStore store = Fixture.store().store();
        InvalidRequestException longKey =
                assertThrows(InvalidRequestException.class, () -> store.save("ivan", "s", "k".repeat(200), STATE));
        assertEquals("invalid-request", longKey.code());
        assertEquals("key", longKey.field());
        assertEquals(400, longKey.status());
        assertNotNull(longKey.requestId());

        InvalidRequestException control =
                assertThrows(InvalidRequestException.class, () -> store.get("ivan", "a\u0001b", "k", AgentState.class));
        assertEquals("sessionId", control.field());

        // One list item over the body limit: no part can carry it.
        PayloadTooLargeException big = assertThrows(
                PayloadTooLargeException.class,
                () -> store.save("ivan", Fixture.session("big-item"), "m", List.of(new Fixture.Msg("user", "y".repeat(5 << 20), 1))));
        assertEquals(413, big.status());
        assertFalse(big.retryable());
    }
}
