package io.agentstate.agentscope;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentscope.core.state.State;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * What the tests share: the local API started by test/java/agentscope-java.test.ts (its address,
 * that of a second one allowing anonymous access, of a third without conditional overwrite, and a
 * token per user, from the environment),
 * stores that record their requests, the state types of the seed, and raw calls for checking what
 * the server holds.
 */
final class Fixture {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String URL = env("AGENT_STATE_URL");
    static final String ANON_URL = env("AGENT_STATE_ANON_URL");
    /** A server whose backend has no conditional overwrite (as OSS). */
    static final String NO_CAS_URL = env("AGENT_STATE_NO_CAS_URL");
    static final Map<String, String> TOKENS = read(env("AGENT_STATE_TOKENS"), new TypeReference<>() {});

    private Fixture() {}

    /** A message of the conversation (the seed's context half: appended). */
    record Msg(String role, String content, int seq) implements State {}

    /** The other half: a small blob overwritten whole (summary, counters, sub-contexts). */
    record AgentState(String summary, int curIter, Map<String, String> contexts) implements State {}

    /** A store of the authenticated server with the tokens of every user, recording each HTTP attempt. */
    static Recorded store() {
        return store(URL);
    }

    static Recorded store(String url) {
        List<RequestEvent> events = new CopyOnWriteArrayList<>();
        HttpAgentStateStore store =
                HttpAgentStateStore.builder()
                        .baseUrl(url)
                        .tokenProvider(Fixture::token)
                        .requestListener(events::add)
                        .build();
        return new Recorded(store, events);
    }

    /** A store and the requests it made. */
    record Recorded(HttpAgentStateStore store, List<RequestEvent> events) {
        /** Forgets the requests so far. */
        void reset() {
            events.clear();
        }

        /** The requests since the last reset, as "METHOD /path". */
        List<String> calls() {
            return events.stream().map(e -> e.method() + " " + e.path()).toList();
        }
    }

    static String token(String userId) {
        String token = TOKENS.get(userId);
        if (token == null) throw new IllegalStateException("no token minted for user " + userId);
        return token;
    }

    /** A fresh session id. */
    static String session(String name) {
        return name + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** messages 1..n. */
    static List<Msg> messages(int from, int to) {
        return java.util.stream.IntStream.rangeClosed(from, to)
                .mapToObj(i -> new Msg(i % 2 == 1 ? "user" : "assistant", "message " + i, i))
                .toList();
    }

    /** A GET of the API as {@code userId}, straight over HTTP: the answer's JSON. */
    static JsonNode raw(String userId, String path) {
        try {
            HttpRequest request =
                    HttpRequest.newBuilder(URI.create(URL + path))
                            .header("Authorization", "Bearer " + token(userId))
                            .build();
            HttpResponse<String> response =
                    HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200)
                throw new IllegalStateException(path + " answered " + response.statusCode() + ": " + response.body());
            return JSON.readTree(response.body());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A PUT of JSON as {@code userId}, straight over HTTP (data another writer left): the status. */
    static int rawPut(String userId, String path, String json) {
        try {
            HttpRequest request =
                    HttpRequest.newBuilder(URI.create(URL + path))
                            .header("Authorization", "Bearer " + token(userId))
                            .header("Content-Type", "application/json")
                            .PUT(HttpRequest.BodyPublishers.ofString(json))
                            .build();
            return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** The archives of a list, as the server lists them. */
    static JsonNode archives(String userId, String sessionId, String key) {
        return raw(userId, HttpAgentStateStore.listPath(sessionId, key) + "/archives").path("archives");
    }

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isBlank())
            throw new IllegalStateException(name + " is not set: run the tests through test/java/agentscope-java.test.ts");
        return value;
    }

    private static <T> T read(String json, TypeReference<T> type) {
        try {
            return JSON.readValue(json, type);
        } catch (IOException e) {
            throw new IllegalStateException("not JSON: " + json, e);
        }
    }
}
