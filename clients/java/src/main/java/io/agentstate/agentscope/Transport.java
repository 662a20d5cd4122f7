package io.agentstate.agentscope;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * The HTTP side of the store: URLs with ids in their URL form, the user's token, one attempt's
 * timeout, retries with jittered backoff (429, 5xx, network errors and timeouts for calls that are
 * safe to send again; any call answered {@code contended}), and the typed exception of an answer
 * that is not a success.
 */
final class Transport {
    /** An id written as itself in a URL (not {@code .} or {@code ..}); any other is {@code ~} + base64url. */
    private static final Pattern PLAIN_ID = Pattern.compile("[A-Za-z0-9._-]+");
    /** Statuses worth another attempt (unless the problem is one of {@link #FINAL}). */
    private static final Set<Integer> TRANSIENT = Set.of(429, 500, 502, 503, 504);
    /**
     * Problem codes no retry helps: a backend that does not honour write conditions, a deployment
     * that refuses the service (a missing bucket or table, refused credentials).
     */
    private static final Set<String> FINAL = Set.of("backend-unsafe", "backend-misconfigured");

    /** Whether a problem code is one of {@link #FINAL} (null: no problem body). */
    private static boolean isFinal(String code) {
        return code != null && FINAL.contains(code);
    }
    /** Longest wait without {@code Retry-After}. */
    private static final long MAX_PAUSE_MS = 2_000;
    /** Longest {@code Retry-After} the client waits for itself; a longer one is raised at once. */
    private static final long MAX_RETRY_AFTER_MS = 10_000;

    /** One answer: status, headers, body, the server's request id, and whether an earlier attempt's outcome was lost. */
    record Answer(int status, Map<String, String> headers, byte[] body, String requestId, boolean resent) {
        String header(String name) {
            return headers.get(name);
        }

        /** The ETag's value without its quotes, or {@code null}. */
        String etag() {
            String etag = headers.get("etag");
            if (etag == null || etag.length() < 2 || !etag.startsWith("\"") || !etag.endsWith("\"")) return null;
            return etag.substring(1, etag.length() - 1);
        }

        /** The {@code Agent-State-Revision} header (a value's revision), or 0 when absent or not a number. */
        long revision() {
            String revision = headers.get("agent-state-revision");
            if (revision == null) return 0;
            try {
                return Long.parseLong(revision.trim());
            } catch (NumberFormatException e) {
                return 0;
            }
        }
    }

    /** What a request needs beyond method and path. */
    static final class Call {
        final Map<String, String> query = new LinkedHashMap<>();
        final Map<String, String> headers = new LinkedHashMap<>();
        byte[] body;
        /** Time the server may take on purpose (a turn's wait for the lease). */
        long extraMs;

        Call query(String name, Object value) {
            if (value != null) query.put(name, String.valueOf(value));
            return this;
        }

        Call header(String name, String value) {
            if (value != null) headers.put(name, value);
            return this;
        }

        Call body(byte[] json) {
            this.body = json;
            return this;
        }

        /** The lease's fencing token, when there is one. */
        Call token(Long token) {
            if (token != null) headers.put("Fencing-Token", String.valueOf(token));
            return this;
        }

        Call extraMs(long ms) {
            this.extraMs = ms;
            return this;
        }
    }

    private final URI base;
    private final HttpClient http;
    private final TokenProvider tokens;
    private final ObjectMapper mapper;
    private final Duration timeout;
    private final int attempts;
    private final Consumer<RequestEvent> listener;

    Transport(
            URI base,
            HttpClient http,
            TokenProvider tokens,
            ObjectMapper mapper,
            Duration timeout,
            int attempts,
            Consumer<RequestEvent> listener) {
        String text = base.toString();
        this.base = URI.create(text.endsWith("/") ? text.substring(0, text.length() - 1) : text);
        this.http = http;
        this.tokens = tokens;
        this.mapper = mapper;
        this.timeout = timeout;
        this.attempts = attempts;
        this.listener = listener;
    }

    /** Whether a user id means the anonymous user. */
    static boolean anonymous(String userId) {
        return userId == null || userId.isBlank();
    }

    /**
     * The URL segment of an id: itself when plain, else {@code ~} + unpadded base64url of its UTF-8.
     * A null or blank id, or one that is not valid UTF-16 (a lone surrogate), is refused here; the
     * server checks the rest (control characters, lengths) and answers 400.
     */
    static String segment(String kind, String id) {
        if (id == null || id.isBlank()) throw new IllegalArgumentException(kind + " must not be null or blank");
        if (PLAIN_ID.matcher(id).matches() && !id.equals(".") && !id.equals("..")) return id;
        CharsetEncoder utf8 = StandardCharsets.UTF_8.newEncoder();
        if (!utf8.canEncode(id)) throw new IllegalArgumentException(kind + " is not valid UTF-16 (a lone surrogate)");
        return "~" + Base64.getUrlEncoder().withoutPadding().encodeToString(id.getBytes(StandardCharsets.UTF_8));
    }

    /** Sends the request of {@code userId}, retrying where safe; answers whatever status arrived. */
    Answer send(String userId, String method, String path, Call call) {
        String query = call.query.isEmpty() ? "" : "?" + encodeQuery(call.query);
        URI uri = URI.create(base + path + query);
        long limitMs = timeout.toMillis() + call.extraMs;
        boolean lost = false;
        for (int attempt = 1; ; attempt++) {
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).timeout(Duration.ofMillis(limitMs));
            if (!anonymous(userId)) {
                String token = tokens.tokenFor(userId);
                if (token == null || token.isBlank())
                    throw new IllegalStateException("the token provider gave no token for user " + userId);
                request.header("Authorization", "Bearer " + token);
                // The user this call means: a token of another user is refused (403 user-mismatch).
                request.header("Agent-State-User", segment("userId", userId));
            }
            call.headers.forEach(request::header);
            if (call.body != null) request.header("Content-Type", "application/json");
            request.method(
                    method,
                    call.body == null
                            ? HttpRequest.BodyPublishers.noBody()
                            : HttpRequest.BodyPublishers.ofByteArray(call.body));
            HttpResponse<byte[]> response = null;
            Exception failure = null;
            try {
                response = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (IOException e) {
                failure = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BackendUnavailableException(method + " " + path + ": interrupted", null, 0, null, true, e);
            }
            int status = response == null ? 0 : response.statusCode();
            listener.accept(new RequestEvent(method, path, status, call.body == null ? 0 : call.body.length));
            Answer answer = response == null ? null : answerOf(response, lost);
            String code = answer == null ? null : problemCode(answer);
            boolean contended = "contended".equals(code);
            boolean transientFailure =
                    answer == null || (TRANSIENT.contains(status) && !isFinal(code));
            // Every call this client makes is safe to send again: appends and truncates carry an
            // Idempotency-Key, commits their commitId, saves are whole values or conditional.
            if (attempt < attempts && (contended || transientFailure)) {
                Long wait = pauseMs(attempt, answer, contended);
                if (wait != null) {
                    if (answer == null || status >= 500) lost = true;
                    sleep(wait, method, path);
                    continue;
                }
            }
            if (answer != null) return answer;
            if (failure instanceof HttpTimeoutException)
                throw new RequestTimeoutException(method + " " + path, limitMs, failure);
            throw new BackendUnavailableException(
                    method + " " + path + ": request failed: " + failure, null, 0, null, true, failure);
        }
    }

    /** Headers java.net.http sets itself and refuses to be given. */
    private static final Set<String> RESTRICTED = Set.of("connection", "content-length", "expect", "host", "upgrade");

    /**
     * A request to a presigned URL of the object store (no token; its signed headers as given):
     * the bytes of a 200 answer. Retried on network errors and 5xx.
     */
    byte[] direct(JsonNode presigned, byte[] body) {
        String method = presigned.path("method").asText("GET");
        HttpRequest.Builder request =
                HttpRequest.newBuilder(URI.create(presigned.path("url").asText()))
                        .timeout(timeout.plusSeconds(body == null ? 0 : body.length >> 20))
                        .method(
                                method,
                                body == null
                                        ? HttpRequest.BodyPublishers.noBody()
                                        : HttpRequest.BodyPublishers.ofByteArray(body));
        presigned.path("headers").fields().forEachRemaining(h -> {
            if (!RESTRICTED.contains(h.getKey().toLowerCase())) request.header(h.getKey(), h.getValue().asText());
        });
        for (int attempt = 1; ; attempt++) {
            try {
                HttpResponse<byte[]> response = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
                int status = response.statusCode();
                listener.accept(new RequestEvent(method, "(object store)", status, body == null ? 0 : body.length));
                if (status == 200) return response.body();
                if (status < 500 || attempt >= attempts)
                    throw new BackendUnavailableException(
                            "the object store answered " + method + " with " + status, null, status, null, status >= 500, null);
            } catch (IOException e) {
                if (attempt >= attempts)
                    throw new BackendUnavailableException("object store " + method + " failed: " + e, null, 0, null, true, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BackendUnavailableException("object store " + method + ": interrupted", null, 0, null, true, e);
            }
            sleep(pauseMs(attempt, null, false), method, "(object store)");
        }
    }

    /** The typed exception of an answer that is not a success. */
    StateApiException error(String userId, Answer answer) {
        JsonNode problem = problemOf(answer);
        int status = answer.status();
        String code = problem.path("code").isTextual() ? problem.path("code").asText() : null;
        String detail = problem.path("detail").asText(problem.path("message").asText("HTTP " + status));
        String requestId = answer.requestId();
        String message = (code == null ? "HTTP " + status : code) + ": " + detail;
        if (status == 401 || "unauthorized".equals(code)) {
            if (anonymous(userId)) return new AnonymousNotAllowedException(requestId);
            return new UnauthorizedException(message, status, requestId);
        }
        if ("user-mismatch".equals(code)) return new UserMismatchException(message, requestId);
        if (status == 403) return new UnauthorizedException(message, status, requestId);
        if ("invalid-request".equals(code) || (code == null && status == 400))
            return new InvalidRequestException(message, problem.path("field").asText(null), requestId);
        if ("lock-held".equals(code)) {
            Instant expiresAt = null;
            try {
                if (problem.path("expiresAt").isTextual()) expiresAt = Instant.parse(problem.path("expiresAt").asText());
            } catch (DateTimeParseException ignored) {
                // An answer without a readable expiry still names the holder.
            }
            return new LockHeldException(message, problem.path("holder").asText(""), expiresAt, requestId);
        }
        if (status == 409) return new ConflictException(message, code, requestId, "contended".equals(code));
        if ("idempotency-key-reused".equals(code)) return new IdempotencyKeyReusedException(message, requestId);
        if (status == 412) return new PreconditionFailedException(message, requestId);
        if (status == 413) return new PayloadTooLargeException(message, problem.path("limit").asLong(-1), requestId);
        if (status == 501) return new UnsupportedByServerException(message, code, requestId);
        if (status == 429 || status >= 500) {
            boolean retryable = !isFinal(code) && !problem.hasNonNull("corruptKey");
            return new BackendUnavailableException(message, code, status, requestId, retryable, null);
        }
        return new StateApiException(message, code, status, requestId, false, null);
    }

    /** The answer's body as JSON (a protocol error when it is not). */
    JsonNode json(Answer answer) {
        try {
            return mapper.readTree(answer.body());
        } catch (IOException e) {
            throw new StateApiException(
                    "the answer is not JSON", null, answer.status(), answer.requestId(), false, e);
        }
    }

    /** JSON bytes of a value. */
    byte[] bytes(Object value) {
        try {
            return mapper.writeValueAsBytes(value);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot serialize to JSON: " + e.getMessage(), e);
        }
    }

    private JsonNode problemOf(Answer answer) {
        try {
            JsonNode node = answer.body().length == 0 ? null : mapper.readTree(answer.body());
            return node == null ? mapper.createObjectNode() : node;
        } catch (IOException e) {
            return mapper.createObjectNode();
        }
    }

    /** The problem code of an error answer (null for a success or a body without one). */
    String problemCode(Answer answer) {
        if (answer.status() < 400) return null;
        JsonNode code = problemOf(answer).path("code");
        return code.isTextual() ? code.asText() : null;
    }

    private static Answer answerOf(HttpResponse<byte[]> response, boolean resent) {
        Map<String, String> headers = new LinkedHashMap<>();
        response.headers().map().forEach((name, values) -> headers.put(name.toLowerCase(), String.join(", ", values)));
        byte[] body = response.body() == null ? new byte[0] : response.body();
        return new Answer(response.statusCode(), headers, body, headers.get("x-request-id"), resent);
    }

    /**
     * The wait before the next attempt: what {@code Retry-After} asks (on 429, 503 and
     * {@code contended}), plus up to a fifth (jitter), or {@code null} when it asks for more than
     * the client waits; else a jittered exponential backoff.
     */
    static Long pauseMs(int attempt, Answer answer, boolean contended) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        if (answer != null && (contended || answer.status() == 429 || answer.status() == 503)) {
            Long asked = retryAfterMs(answer.header("retry-after"));
            if (asked != null) return asked > MAX_RETRY_AFTER_MS ? null : (long) (asked * (1 + random.nextDouble() / 5));
        }
        return (long) (random.nextDouble() * Math.min(MAX_PAUSE_MS, 100L << Math.min(attempt, 10)));
    }

    /** A {@code Retry-After} as milliseconds (seconds or an HTTP date), or {@code null}. */
    static Long retryAfterMs(String value) {
        if (value == null || value.isBlank()) return null;
        String text = value.trim();
        if (text.matches("\\d+(\\.\\d+)?")) return (long) (Double.parseDouble(text) * 1000);
        try {
            ZonedDateTime at = ZonedDateTime.parse(text, DateTimeFormatter.RFC_1123_DATE_TIME);
            return Math.max(0, at.toInstant().toEpochMilli() - System.currentTimeMillis());
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static void sleep(long ms, String method, String path) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new BackendUnavailableException(method + " " + path + ": interrupted", null, 0, null, true, e);
        }
    }

    private static String encodeQuery(Map<String, String> query) {
        StringBuilder text = new StringBuilder();
        query.forEach((name, value) -> {
            if (text.length() > 0) text.append('&');
            text.append(URLEncoder.encode(name, StandardCharsets.UTF_8))
                    .append('=')
                    .append(URLEncoder.encode(value, StandardCharsets.UTF_8));
        });
        return text.toString();
    }
}
