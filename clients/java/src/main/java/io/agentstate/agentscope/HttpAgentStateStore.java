package io.agentstate.agentscope;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.agentscope.core.state.AgentStateStore;
import io.agentscope.core.state.ConcurrentSessionModificationException;
import io.agentscope.core.state.ConflictPolicy;
import io.agentscope.core.state.State;
import io.agentscope.core.state.VersionedState;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Consumer;

/**
 * An AgentScope {@code AgentStateStore} over the agent state HTTP API (values and append-only
 * lists per user and session, kept on S3 or OSS): one builder call in place of
 * {@code OssAgentStateStore.builder()}.
 *
 * <pre>{@code
 * AgentStateStore store = HttpAgentStateStore.builder()
 *         .baseUrl("https://<api-id>.execute-api.<region>.amazonaws.com")
 *         .tokenProvider(userId -> tokens.jwtFor(userId))
 *         .build();
 * }</pre>
 *
 * <p>Each user id acts with the token the {@link TokenProvider} gives for it; a null or blank user
 * is the anonymous user and sends no token (only a server that allows anonymous access accepts
 * it, else {@link AnonymousNotAllowedException}). Versions: a value's version is its revision on
 * the server ({@code Agent-State-Revision}; docs/DESIGN.md, "Revisions"): 1 when created, +1 on
 * every successful write (identical content included), unchanged by a refused write, 1 again after
 * a delete; so it is never 0 (absent) or -1 (unconditional), and {@link #saveIfVersion} sends it as
 * {@code If-Revision}. Lists: the store remembers the items it last read or wrote per key and
 * sends only the new ones when the list grew (with the count and the hash the server last
 * answered), else the whole list, and the server decides (unchanged, appended, or a rewrite that
 * archives the old list). It never computes the list's chain hash itself. A state's lone UTF-16
 * surrogates are sent as U+FFFD (the API stores I-JSON). Thread-safe.
 *
 * <p>Replicas: by default a list save is last-writer-wins (the SPI's meaning), so two replicas
 * saving the same list each from what it read keep the last one's whole list (the other's is
 * archived); {@link Builder#listConflictPolicy} {@code APPEND_MERGE} keeps both writers' appended
 * items, {@code FAIL} throws {@code ConcurrentSessionModificationException}.
 *
 * <p>It references no AgentScope type but {@code AgentStateStore}, {@code State},
 * {@code VersionedState}, {@code ConflictPolicy} and {@code ConcurrentSessionModificationException}
 * (all in the SPI since commit 2d851ed6), so it needs the versioned SPI: AgentScope 2.0.3 or newer, or
 * {@code agentscope-java}'s main since commit 2d851ed6 (2.0.2 has no {@code VersionedState}). Jackson
 * is the application's ({@code provided}); only APIs present since Jackson 2.12 are used. Its
 * module name is {@code io.agentstate.agentscope} ({@code Automatic-Module-Name}).
 */
public final class HttpAgentStateStore implements AgentStateStore {
    /** The version of an absent value (and {@code saveIfVersion}'s "create only"). */
    public static final long ABSENT = 0L;
    /** {@code saveIfVersion}'s "unconditional", and what it answers on a conflict. */
    public static final long UNCONDITIONAL = -1L;

    private static final int MAX_APPEND_ITEMS = 1000;
    /** Bytes of items per append request, well inside the API's body limit. */
    private static final int MAX_APPEND_BYTES = 1 << 20;
    /** Lists whose items the store remembers (least recently used forgotten first). */
    private static final int REMEMBERED_LISTS = 1024;

    private final Transport transport;
    private final ObjectMapper mapper;
    private final int sessionPageSize;
    private final int bodyLimitBytes;
    private final Duration leaseDuration;
    private final Duration leaseWait;
    private final boolean truncateEnabled;
    private final String truncateUser;
    private final ConflictPolicy listConflictPolicy;
    /** The server's capabilities, once read. */
    private volatile Capabilities capabilities;

    private final Object capabilitiesLock = new Object();
    /** What the store knows of each list: the items it last read or wrote, and the server's count and hash. */
    private final Map<String, KnownList> known =
            Collections.synchronizedMap(
                    new LinkedHashMap<>(16, 0.75f, true) {
                        private static final long serialVersionUID = 1L;

                        @Override
                        protected boolean removeEldestEntry(Map.Entry<String, KnownList> eldest) {
                            return size() > REMEMBERED_LISTS;
                        }
                    });

    /**
     * A list as the store last saw it: its items, and the count and hash the server answered;
     * {@code view}, after an {@code APPEND_MERGE} save, the items the caller passed (its own view,
     * without the other writer's), else null.
     */
    record KnownList(List<JsonNode> items, long count, String hash, List<JsonNode> view) {
        KnownList(List<JsonNode> items, long count, String hash) {
            this(items, count, hash, null);
        }
    }

    /** Merges of an {@code APPEND_MERGE} save before it gives up ({@code contended}). */
    private static final int MERGE_ATTEMPTS = 8;

    private HttpAgentStateStore(Builder b) {
        this.mapper = b.mapper != null ? b.mapper : defaultMapper();
        HttpClient http =
                b.http != null
                        ? b.http
                        : HttpClient.newBuilder()
                                .version(HttpClient.Version.HTTP_1_1)
                                .connectTimeout(b.timeout)
                                .build();
        this.transport = new Transport(b.baseUrl, http, b.tokens, mapper, b.timeout, b.attempts, b.listener);
        this.sessionPageSize = b.sessionPageSize;
        this.bodyLimitBytes = b.bodyLimitBytes;
        this.leaseDuration = b.leaseDuration;
        this.leaseWait = b.leaseWait;
        this.truncateEnabled = b.truncateEnabled;
        this.truncateUser = b.truncateUser;
        this.listConflictPolicy = b.listConflictPolicy;
    }

    /** A builder; {@code baseUrl} is required, and a {@code tokenProvider} for any named user. */
    public static Builder builder() {
        return new Builder();
    }

    /** The mapper used when none is given: unknown properties are ignored, modules on the class path registered. */
    static ObjectMapper defaultMapper() {
        ObjectMapper mapper = new ObjectMapper();
        mapper.findAndRegisterModules();
        mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
        return mapper;
    }

    // ---- single values ----

    @Override
    public void save(String userId, String sessionId, String key, State value) {
        Objects.requireNonNull(value, "value");
        putValue(userId, sessionId, key, transport.bytes(tree(value)), new Transport.Call(), null, 0);
    }

    @Override
    public <T extends State> Optional<T> get(String userId, String sessionId, String key, Class<T> type) {
        Stored stored = readValue(userId, sessionId, key);
        return stored == null ? Optional.empty() : Optional.of(convert(stored.value(), type));
    }

    /**
     * Whether {@link #saveIfVersion} is honoured: the server's values carry revisions (the SPI's
     * versions) and its backend evaluates a save conditioned on one ({@code revisions} and
     * {@code conditionalOverwrite} of {@link #capabilities()}). False on an OSS-backed server, which
     * refuses conditional overwrites ({@code saveIfVersion} with a version above 0 then throws
     * {@link UnsupportedByServerException}), and on a server older than revisions.
     */
    public boolean supportsVersioning() {
        Capabilities c = capabilities();
        return c.revisions() && c.conditionalOverwrite();
    }

    /**
     * What the server's backend can do ({@code GET /v1/capabilities}, no token): read once, on the
     * first call, and answered from that for the store's life. A server without the route (an
     * older one) is taken to have versions but no conditional overwrite, revisions, ranges,
     * presigned transfers or atomic commits.
     */
    public Capabilities capabilities() {
        Capabilities c = capabilities;
        if (c != null) return c;
        synchronized (capabilitiesLock) {
            if (capabilities == null) {
                Transport.Answer answer = transport.send(null, "GET", "/v1/capabilities", new Transport.Call());
                if (answer.status() == 404) capabilities = new Capabilities(true, false, false, false, false, false);
                else if (answer.status() != 200) throw transport.error(null, answer);
                else {
                    JsonNode body = transport.json(answer);
                    capabilities =
                            new Capabilities(
                                    body.path("versioning").asBoolean(false),
                                    body.path("revisions").asBoolean(false),
                                    body.path("conditionalOverwrite").asBoolean(false),
                                    body.path("ranges").asBoolean(false),
                                    body.path("presignedTransfer").asBoolean(false),
                                    body.path("atomicCommits").asBoolean(false));
                }
            }
            return capabilities;
        }
    }

    /**
     * What the server's backend can do, as {@code GET /v1/capabilities} answers it.
     *
     * @param versioning every value carries a version (its ETag)
     * @param revisions values carry a revision (1 on create, +1 per write): the SPI's versions
     * @param conditionalOverwrite a save conditioned on a version or revision is evaluated (false on OSS)
     * @param ranges the backend reads byte ranges of stored objects
     * @param presignedTransfer large values and workspaces move through presigned URLs
     * @param atomicCommits a commit is atomic across its keys
     */
    public record Capabilities(
            boolean versioning,
            boolean revisions,
            boolean conditionalOverwrite,
            boolean ranges,
            boolean presignedTransfer,
            boolean atomicCommits) {}

    /**
     * The value with its version, which is the value's revision ({@code Agent-State-Revision}): 1
     * when it was created, +1 on every write since (identical content included); an absent value is
     * {@code (null, 0)}. A server that answers no revision (one older than revisions) is an error.
     */
    public <T extends State> VersionedState<T> getVersioned(
            String userId, String sessionId, String key, Class<T> type) {
        Stored stored = readValue(userId, sessionId, key);
        if (stored == null) return new VersionedState<>(null, ABSENT);
        return new VersionedState<>(convert(stored.value(), type), revisionOf(stored));
    }

    /**
     * Compare-and-swap save on the value's revision, in one {@code PUT}: {@code expectedVersion} 0
     * writes only when there is no value ({@code If-None-Match: *}), -1 always, any other only
     * when the stored value's revision is that one ({@code If-Revision: <expectedVersion>}).
     * Answers the new revision, or -1 on a conflict (a 412: nothing written; a version below -1,
     * which no value has, answers -1 without a request). A save whose answer was lost and whose
     * retry meets a 412 reads the value back: its own value at the revision it would have written
     * means it landed. On a server without conditional overwrite (OSS, {@link #supportsVersioning()}
     * false) a save conditioned on a revision is refused: {@link UnsupportedByServerException}
     * ({@code precondition-unsupported}, nothing written); 0 and -1 work there.
     */
    public long saveIfVersion(String userId, String sessionId, String key, State value, long expectedVersion) {
        Objects.requireNonNull(value, "value");
        byte[] body = transport.bytes(tree(value));
        Transport.Call call = new Transport.Call();
        if (expectedVersion == UNCONDITIONAL) return putValue(userId, sessionId, key, body, call, null, 0).revision();
        if (expectedVersion < UNCONDITIONAL) return UNCONDITIONAL;
        if (expectedVersion == ABSENT) call.header("If-None-Match", "*");
        else call.header("If-Revision", Long.toString(expectedVersion));
        Saved saved = putValue(userId, sessionId, key, body, call, body, expectedVersion + 1);
        return saved == null ? UNCONDITIONAL : saved.revision();
    }

    /** Deletes the session and everything it owns (also when absent). */
    @Override
    public void delete(String userId, String sessionId) {
        Transport.Answer answer = transport.send(userId, "DELETE", sessionPath(sessionId), new Transport.Call());
        forgetSession(userId, sessionId);
        if (answer.status() != 204) throw transport.error(userId, answer);
    }

    /** Deletes both the value and the list stored under {@code key} (a list is archived first); absent is fine. */
    @Override
    public void delete(String userId, String sessionId, String key) {
        Transport.Answer value = transport.send(userId, "DELETE", valuePath(sessionId, key), new Transport.Call());
        if (value.status() != 204) throw transport.error(userId, value);
        Transport.Answer list = transport.send(userId, "DELETE", listPath(sessionId, key), new Transport.Call());
        known.remove(listName(userId, sessionId, key));
        if (list.status() != 204) throw transport.error(userId, list);
    }

    @Override
    public boolean exists(String userId, String sessionId) {
        Transport.Answer answer = transport.send(userId, "HEAD", sessionPath(sessionId), new Transport.Call());
        if (answer.status() == 200) return true;
        if (answer.status() == 404) return false;
        throw transport.error(userId, answer);
    }

    /** Every session id of the user, read page by page. */
    @Override
    public Set<String> listSessionIds(String userId) {
        Set<String> ids = new LinkedHashSet<>();
        String cursor = null;
        do {
            Transport.Call call = new Transport.Call().query("limit", sessionPageSize).query("cursor", cursor);
            Transport.Answer answer = transport.send(userId, "GET", "/v1/sessions", call);
            if (answer.status() != 200) throw transport.error(userId, answer);
            JsonNode page = transport.json(answer);
            for (JsonNode s : page.path("sessions")) ids.add(s.path("sessionId").asText());
            cursor = page.path("nextCursor").isTextual() ? page.path("nextCursor").asText() : null;
        } while (cursor != null);
        return ids;
    }

    /**
     * Deletes every session of the user this store was built to allow it for ({@link
     * Builder#allowTruncateAllSessions(String)}), and only that user's: the server deletes the
     * sessions of the token's user. Refused unless allowed.
     */
    public void truncateAllSessions() {
        if (!truncateEnabled)
            throw new UnsupportedOperationException(
                    "truncateAllSessions is not enabled: build the store with allowTruncateAllSessions(userId)");
        Transport.Call call = new Transport.Call().query("all", "true");
        Transport.Answer answer = transport.send(truncateUser, "DELETE", "/v1/sessions", call);
        String prefix = userName(truncateUser) + '\u0000';
        synchronized (known) {
            known.keySet().removeIf(name -> name.startsWith(prefix));
        }
        if (answer.status() != 204) throw transport.error(truncateUser, answer);
    }

    /** Forgets the lists it remembers; the HTTP client holds no other resource. */
    @Override
    public void close() {
        known.clear();
    }

    // ---- lists ----

    /**
     * Saves the whole list under the builder's {@link Builder#listConflictPolicy list conflict
     * policy} (default {@code OVERWRITE}, the SPI's last-writer-wins): when it extends what the
     * store last read or wrote, only the new items are appended (at the count and hash the server
     * last answered); when it is that list, a conditional read confirms nothing changed meanwhile;
     * otherwise, or when another writer moved the list on, the whole list is sent and the server
     * decides (a rewrite archives the other writer's list).
     */
    @Override
    public void save(String userId, String sessionId, String key, List<? extends State> values) {
        save(userId, sessionId, key, values, listConflictPolicy);
    }

    /**
     * Saves the whole list under {@code policy}, when another writer (another replica) changed it
     * since this store's base: the count and hash this store last read or saved for that list in
     * this process (without one, {@code FAIL} and {@code APPEND_MERGE} read the list first and take
     * that as the base).
     *
     * <ul>
     *   <li>{@code OVERWRITE}: last-writer-wins, as {@link #save(String, String, String, List)}
     *       by default.
     *   <li>{@code FAIL}: the save is conditioned on the base (appends at its count and hash, a
     *       rewrite {@code If-Match} its hash); when the base moved, nothing is written and it throws
     *       {@link ConcurrentSessionModificationException} ({@code getExpectedVersion()}: the base's
     *       item count). Read the list again before saving again.
     *   <li>{@code APPEND_MERGE}: when this writer only appended to its base and the other writer
     *       only appended too, the list is read again and this writer's new items are appended after
     *       the other writer's (the list keeps both, the other writer's first); the caller's next
     *       save extending its own list appends on that. A rewrite by either writer whose base
     *       moved fails as {@code FAIL} does.
     * </ul>
     */
    public void save(String userId, String sessionId, String key, List<? extends State> values, ConflictPolicy policy) {
        Objects.requireNonNull(values, "values");
        Objects.requireNonNull(policy, "policy");
        List<JsonNode> items = new ArrayList<>(values.size());
        for (State value : values) items.add(tree(value));
        if (policy == ConflictPolicy.OVERWRITE) saveList(userId, sessionId, key, items, null);
        else saveOnBase(userId, sessionId, key, items, policy == ConflictPolicy.APPEND_MERGE);
    }

    /** {@code FAIL} ({@code merge} false) and {@code APPEND_MERGE}: see {@link #save(String, String, String, List, ConflictPolicy)}. */
    private String saveOnBase(String userId, String sessionId, String key, List<JsonNode> items, boolean merge) {
        KnownList base = knownList(userId, sessionId, key);
        if (base == null) {
            readList(userId, sessionId, key, null, null);
            base = knownList(userId, sessionId, key);
            if (base == null) throw new ConflictException("list " + key + " changed while it was read", "list-changed", null, true);
        }
        List<JsonNode> view = base.view() != null ? base.view() : base.items();
        if (!startsWith(items, view)) return rewriteOnBase(userId, sessionId, key, items, base);
        // This writer's new items, those not yet appended.
        List<JsonNode> pending = new ArrayList<>(items.subList(view.size(), items.size()));
        for (int attempt = 0; ; attempt++) {
            if (pending.isEmpty()) {
                // Nothing new of this writer's: after a merge, the list holds its items already.
                if (attempt > 0) {
                    if (!sameItems(base.items(), items)) rememberView(userId, sessionId, key, items);
                    return "unchanged";
                }
                if (unchangedSince(userId, sessionId, key, base.hash())) return "unchanged";
            } else {
                List<JsonNode> target = new ArrayList<>(base.items());
                target.addAll(pending);
                String appended = append(userId, sessionId, key, base, target, null);
                if (appended != null) {
                    if (!sameItems(target, items)) rememberView(userId, sessionId, key, items);
                    return appended;
                }
                // Some parts may have landed before the conflict: the store remembers up to them.
                KnownList now = knownList(userId, sessionId, key);
                if (now != null && now != base && startsWith(now.items(), base.items())) {
                    pending.subList(0, now.items().size() - base.items().size()).clear();
                    base = now;
                }
            }
            if (!merge) throw moved(userId, sessionId, key, base);
            if (attempt >= MERGE_ATTEMPTS)
                throw new ConflictException("list " + key + " kept changing: other writers kept winning", "contended", null, true);
            // APPEND_MERGE: only appends by the other writer are merged.
            List<JsonNode> current = readList(userId, sessionId, key, null, null);
            if (!startsWith(current, base.items())) throw moved(userId, sessionId, key, base);
            base = knownList(userId, sessionId, key);
            if (base == null) throw new ConflictException("list " + key + " changed while it was read", "list-changed", null, true);
        }
    }

    /** This writer's rewrite (a compaction): written only while the list has the base's hash. */
    private String rewriteOnBase(String userId, String sessionId, String key, List<JsonNode> items, KnownList base) {
        ArrayNode body = mapper.createArrayNode();
        body.addAll(items);
        byte[] json = transport.bytes(body);
        Transport.Answer answer = null;
        if (json.length <= bodyLimitBytes) {
            Transport.Call call = new Transport.Call().body(json).header("If-Match", "\"" + base.hash() + "\"");
            answer = transport.send(userId, "PUT", listPath(sessionId, key), call);
        }
        if (answer == null || answer.status() == 413) {
            try {
                return saveInParts(userId, sessionId, key, items, null, base.hash());
            } catch (PreconditionFailedException e) {
                throw (ConcurrentSessionModificationException) moved(userId, sessionId, key, base).initCause(e);
            }
        }
        if (answer.status() == 412) {
            // A retry of a PUT that landed meets its own list: then it is saved.
            if (answer.resent() && sameItems(readList(userId, sessionId, key, null, null), items)) return "rewritten";
            known.remove(listName(userId, sessionId, key));
            throw (ConcurrentSessionModificationException)
                    moved(userId, sessionId, key, base).initCause(transport.error(userId, answer));
        }
        if (answer.status() != 200) {
            known.remove(listName(userId, sessionId, key));
            throw transport.error(userId, answer);
        }
        JsonNode result = transport.json(answer);
        remember(userId, sessionId, key, items, result.path("count").asLong(), result.path("hash").asText());
        return result.path("action").asText();
    }

    /** The base of a list moved under a guarded save: AgentScope's exception, the base's count as its version. */
    private static ConcurrentSessionModificationException moved(String userId, String sessionId, String key, KnownList base) {
        return new ConcurrentSessionModificationException(userId, sessionId, key, base.count());
    }

    /** After a merged save: the caller's own items, so that its next save extending them appends. */
    private void rememberView(String userId, String sessionId, String key, List<JsonNode> view) {
        KnownList k = knownList(userId, sessionId, key);
        if (k != null) known.put(listName(userId, sessionId, key), new KnownList(k.items(), k.count(), k.hash(), List.copyOf(view)));
    }

    @Override
    public <T extends State> List<T> getList(String userId, String sessionId, String key, Class<T> itemType) {
        List<JsonNode> items = readList(userId, sessionId, key, null, null);
        List<T> result = new ArrayList<>(items.size());
        for (JsonNode item : items) result.add(convert(item, itemType));
        return result;
    }

    // ---- turns ----

    /**
     * Begins a turn: takes the session's lease and reads the named values and lists in one call
     * ({@code POST .../turns}); the turn serves reads from that, buffers saves, and commits them in
     * one call ({@code POST .../commits}) that also releases the lease. Waits up to the builder's
     * {@code leaseWait} for another holder; {@link LockHeldException} after that.
     */
    public AgentStateTurn beginTurn(
            String userId, String sessionId, Collection<String> valueKeys, Collection<String> listKeys) {
        String owner = "turn-" + UUID.randomUUID();
        var body = mapper.createObjectNode();
        body.put("leaseMs", leaseDuration.toMillis());
        body.put("waitMs", leaseWait.toMillis());
        body.put("owner", owner);
        ArrayNode values = body.putArray("values");
        valueKeys.forEach(values::add);
        ArrayNode lists = body.putArray("lists");
        listKeys.forEach(k -> lists.addObject().put("key", k));
        // An explicit owner makes the grant reentrant: a retry after a lost answer gets the same lease.
        Transport.Call call = new Transport.Call().body(transport.bytes(body)).extraMs(leaseWait.toMillis());
        Transport.Answer answer = transport.send(userId, "POST", sessionPath(sessionId) + "/turns", call);
        if (answer.status() != 201) throw transport.error(userId, answer);
        return new AgentStateTurn(this, userId, sessionId, valueKeys, listKeys, transport.json(answer));
    }

    // ---- what the turn shares ----

    Transport transport() {
        return transport;
    }

    int bodyLimitBytes() {
        return bodyLimitBytes;
    }

    /** Saves a value's JSON with a fencing token (a turn's); answers its etag and revision. */
    Saved saveFenced(String userId, String sessionId, String key, byte[] json, long token) {
        return putValue(userId, sessionId, key, json, new Transport.Call().token(token), null, 0);
    }

    ObjectMapper mapper() {
        return mapper;
    }

    /** A state's JSON as it is sent: its lone surrogates replaced with U+FFFD ({@link LoneSurrogates}). */
    JsonNode tree(Object state) {
        return LoneSurrogates.replace(mapper.valueToTree(state), mapper);
    }

    <T> T convert(JsonNode node, Class<T> type) {
        try {
            return mapper.treeToValue(node, type);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the stored JSON as " + type.getName() + ": " + e.getMessage(), e);
        }
    }

    static String sessionPath(String sessionId) {
        return "/v1/sessions/" + Transport.segment("sessionId", sessionId);
    }

    static String valuePath(String sessionId, String key) {
        return sessionPath(sessionId) + "/state/" + Transport.segment("key", key);
    }

    static String listPath(String sessionId, String key) {
        return sessionPath(sessionId) + "/lists/" + Transport.segment("key", key);
    }

    /** Records what the server answered of a list the store now holds as {@code items}. */
    void remember(String userId, String sessionId, String key, List<JsonNode> items, long count, String hash) {
        if (items.size() == count) known.put(listName(userId, sessionId, key), new KnownList(List.copyOf(items), count, hash));
        else known.remove(listName(userId, sessionId, key));
    }

    KnownList knownList(String userId, String sessionId, String key) {
        return known.get(listName(userId, sessionId, key));
    }

    /**
     * The whole list, page by page: without {@code expectedHash}, read again from the start when
     * it changes between pages (at most 3 times); with it, only while the list has that hash
     * ({@link PreconditionFailedException} otherwise), and with {@code until}, its first
     * {@code until} items at least (the last page may hold more).
     */
    List<JsonNode> readList(String userId, String sessionId, String key, String expectedHash, Long until) {
        String path = listPath(sessionId, key);
        for (int round = 0; round < 3; round++) {
            List<JsonNode> items = new ArrayList<>();
            String hash = expectedHash;
            long count = -1;
            boolean changed = false;
            while (count < 0 || items.size() < (until != null ? until : count)) {
                Transport.Call call = new Transport.Call().query("offset", items.size());
                if (hash != null) call.header("If-Match", "\"" + hash + "\"");
                Transport.Answer answer = transport.send(userId, "GET", path, call);
                if (answer.status() == 412 && expectedHash == null) {
                    changed = true;
                    break;
                }
                if (answer.status() != 200 && answer.status() != 303) throw transport.error(userId, answer);
                JsonNode page = transport.json(answer);
                count = page.path("count").asLong();
                hash = page.path("hash").asText();
                int before = items.size();
                if (answer.status() == 303) items.add(readTree(transport.direct(page.path("download"), null)));
                else page.path("items").forEach(items::add);
                if (items.size() == before && items.size() < count)
                    throw new StateApiException(
                            "an empty page before the end of the list", null, answer.status(), answer.requestId(), false, null);
            }
            if (changed) continue;
            if (until == null) remember(userId, sessionId, key, items, count, hash);
            return items;
        }
        throw new ConflictException("list " + key + " kept changing while it was read", "list-changed", null, true);
    }

    /**
     * Saves the whole list (see {@link #save(String, String, String, List)}); with a fencing
     * {@code token} (a turn's), every write carries it.
     */
    String saveList(String userId, String sessionId, String key, List<JsonNode> items, Long token) {
        KnownList last = knownList(userId, sessionId, key);
        if (last != null && items.size() >= last.items().size() && startsWith(items, last.items())) {
            if (items.size() == last.items().size()) {
                if (unchangedSince(userId, sessionId, key, last.hash())) return "unchanged";
            } else {
                String appended = append(userId, sessionId, key, last, items, token);
                if (appended != null) return appended;
            }
        }
        ArrayNode body = mapper.createArrayNode();
        body.addAll(items);
        byte[] json = transport.bytes(body);
        if (json.length > bodyLimitBytes) return saveInParts(userId, sessionId, key, items, token, null);
        Transport.Call call = new Transport.Call().body(json);
        call.token(token);
        Transport.Answer answer = transport.send(userId, "PUT", listPath(sessionId, key), call);
        if (answer.status() == 413) return saveInParts(userId, sessionId, key, items, token, null);
        if (answer.status() != 200) {
            known.remove(listName(userId, sessionId, key));
            throw transport.error(userId, answer);
        }
        JsonNode result = transport.json(answer);
        remember(userId, sessionId, key, items, result.path("count").asLong(), result.path("hash").asText());
        return result.path("action").asText();
    }

    /**
     * A whole list too large for one request: the stored list is read, cut to the prefix both
     * share ({@code truncate} at its hash: only the removed items are archived), and the rest
     * appended in parts. Not atomic: a reader may see the list cut before the appends land. With
     * {@code baseHash}, only while the list has that hash ({@link PreconditionFailedException}).
     */
    private String saveInParts(
            String userId, String sessionId, String key, List<JsonNode> items, Long token, String baseHash) {
        List<JsonNode> stored = readList(userId, sessionId, key, baseHash, null);
        KnownList read = knownList(userId, sessionId, key);
        if (read == null) throw new ConflictException("list " + key + " changed while it was read", "list-changed", null, true);
        int common = 0;
        while (common < stored.size() && common < items.size() && items.get(common).equals(NUMERIC, stored.get(common))) common++;
        String action = "appended";
        if (common < stored.size()) {
            var body = mapper.createObjectNode().put("count", common).put("expectedHash", read.hash());
            Transport.Call call =
                    new Transport.Call()
                            .body(transport.bytes(body))
                            .header("Idempotency-Key", UUID.randomUUID().toString());
            call.token(token);
            Transport.Answer answer = transport.send(userId, "POST", listPath(sessionId, key) + "/truncate", call);
            if (answer.status() != 200) {
                known.remove(listName(userId, sessionId, key));
                throw transport.error(userId, answer);
            }
            JsonNode result = transport.json(answer);
            remember(userId, sessionId, key, items.subList(0, common), result.path("count").asLong(), result.path("hash").asText());
            action = "rewritten";
        }
        if (common == items.size()) return common == stored.size() ? "unchanged" : action;
        if (append(userId, sessionId, key, knownList(userId, sessionId, key), items, token) == null)
            throw new ConflictException("list " + key + " was changed by another writer meanwhile", "append-conflict", null, true);
        return action;
    }

    /** Whether two item lists are equal item by item, numbers compared by value. */
    static boolean sameItems(List<JsonNode> a, List<JsonNode> b) {
        return a.size() == b.size() && startsWith(a, b);
    }

    /** Whether {@code list} starts with the items of {@code prefix}, numbers compared by value (1 and 1.0 alike). */
    static boolean startsWith(List<JsonNode> list, List<JsonNode> prefix) {
        if (list.size() < prefix.size()) return false;
        for (int i = 0; i < prefix.size(); i++) if (!list.get(i).equals(NUMERIC, prefix.get(i))) return false;
        return true;
    }

    /** Orders JSON nodes as equal when equal, numbers by value. */
    private static final java.util.Comparator<JsonNode> NUMERIC =
            (x, y) -> {
                if (x.isNumber() && y.isNumber()) return x.decimalValue().compareTo(y.decimalValue());
                return x.equals(y) ? 0 : 1;
            };

    // ---- internals ----

    /** A stored value, its etag and its revision (0: the server answered none). */
    private record Stored(JsonNode value, String etag, long revision) {}

    /** What a save answered: the value's new etag and revision. */
    record Saved(String etag, long revision) {}

    /** The revision of a value read, which a server with revisions always answers. */
    private static long revisionOf(Stored stored) {
        if (stored.revision() < 1)
            throw new StateApiException(
                    "the server answered no Agent-State-Revision: it predates revisions", null, 200, null, false, null);
        return stored.revision();
    }

    private Stored readValue(String userId, String sessionId, String key) {
        Transport.Answer answer = transport.send(userId, "GET", valuePath(sessionId, key), new Transport.Call());
        if (answer.status() == 404) return null;
        if (answer.status() == 303) {
            JsonNode located = transport.json(answer);
            return new Stored(
                    readTree(transport.direct(located.path("download"), null)),
                    located.path("etag").asText(),
                    located.path("revision").asLong(answer.revision()));
        }
        if (answer.status() == 202)
            throw new StateApiException(
                    "value " + key + " is archived and being restored: ask again later",
                    "restoring", 202, answer.requestId(), true, null);
        if (answer.status() != 200) throw transport.error(userId, answer);
        String etag = answer.etag();
        if (etag == null)
            throw new StateApiException("the answer has no strong ETag", null, 200, answer.requestId(), false, null);
        return new Stored(transport.json(answer), etag, answer.revision());
    }

    /**
     * PUTs a value and answers its etag and revision; with {@code mine} (a conditional save), a 412
     * answers null, unless an earlier attempt's answer was lost and the stored value is {@code mine}
     * at {@code landed} (the revision that attempt would have written): then it landed, and that is
     * answered.
     */
    private Saved putValue(
            String userId, String sessionId, String key, byte[] body, Transport.Call call, byte[] mine, long landed) {
        call.body(body);
        Transport.Answer answer =
                body.length > bodyLimitBytes ? null : transport.send(userId, "PUT", valuePath(sessionId, key), call);
        if (answer == null || answer.status() == 413) {
            answer = upload(userId, sessionId, key, body, call.headers);
            if (answer.status() == 404 && answer.resent()) {
                // The commit's answer was lost and the retry found the upload used: landed if the value is this one.
                Stored now = readValue(userId, sessionId, key);
                if (now != null && now.value().equals(NUMERIC, readTree(body))) return new Saved(now.etag(), now.revision());
            }
        }
        if (answer.status() == 200) {
            JsonNode saved = transport.json(answer);
            return new Saved(saved.path("etag").asText(), saved.path("revision").asLong(answer.revision()));
        }
        if (answer.status() == 412 && mine != null) {
            if (answer.resent()) {
                Stored now = readValue(userId, sessionId, key);
                if (now != null && now.revision() == landed && now.value().equals(NUMERIC, readTree(mine)))
                    return new Saved(now.etag(), now.revision());
            }
            return null;
        }
        throw transport.error(userId, answer);
    }

    /**
     * A value too large for a request body: declared (size and MD5), PUT straight to the object
     * store at the URL the server presigned, then committed under the same conditions as a save.
     * Answers the commit's answer.
     */
    private Transport.Answer upload(
            String userId, String sessionId, String key, byte[] body, Map<String, String> conditions) {
        String md5;
        try {
            md5 = Base64.getEncoder().encodeToString(MessageDigest.getInstance("MD5").digest(body));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("MD5 is missing from this JVM", e);
        }
        var request = mapper.createObjectNode().put("size", body.length).put("md5", md5);
        String uploads = valuePath(sessionId, key) + "/uploads";
        Transport.Answer started =
                transport.send(userId, "POST", uploads, new Transport.Call().body(transport.bytes(request)));
        if (started.status() != 201) throw transport.error(userId, started);
        JsonNode upload = transport.json(started);
        transport.direct(upload.path("upload"), body);
        Transport.Call commit = new Transport.Call();
        conditions.forEach(commit::header);
        String uploadId = Transport.segment("uploadId", upload.path("uploadId").asText());
        return transport.send(userId, "POST", uploads + "/" + uploadId, commit);
    }

    /** Whether the list still has {@code hash}: a read of no items, answered 304 while it has. */
    private boolean unchangedSince(String userId, String sessionId, String key, String hash) {
        Transport.Call call = new Transport.Call().query("last", 0).header("If-None-Match", "\"" + hash + "\"");
        Transport.Answer answer = transport.send(userId, "GET", listPath(sessionId, key), call);
        if (answer.status() == 304) return true;
        if (answer.status() != 200) throw transport.error(userId, answer);
        return false;
    }

    /**
     * Appends the items after {@code last} in requests of at most 1,000 items and 1 MiB (half the
     * body limit if lower), each at
     * the count and hash the server answered before it, each with its own {@code Idempotency-Key}
     * (sent again unchanged on a retry). Answers {@code "appended"}, or null when the list moved on
     * (another writer): the caller then sends the whole list, or (a guarded save) gives up or merges.
     */
    private String append(String userId, String sessionId, String key, KnownList last, List<JsonNode> items, Long token) {
        long count = last.count();
        String hash = last.hash();
        int from = last.items().size();
        while (from < items.size()) {
            var body = mapper.createObjectNode();
            ArrayNode chunk = body.putArray("items");
            int bytes = 0;
            int to = from;
            while (to < items.size() && to - from < MAX_APPEND_ITEMS) {
                int size = items.get(to).toString().getBytes(StandardCharsets.UTF_8).length;
                if (to > from && bytes + size > Math.min(MAX_APPEND_BYTES, bodyLimitBytes / 2)) break;
                chunk.add(items.get(to));
                bytes += size;
                to++;
            }
            body.put("expectedCount", count);
            body.put("expectedHash", hash);
            Transport.Call call =
                    new Transport.Call()
                            .body(transport.bytes(body))
                            .header("Idempotency-Key", UUID.randomUUID().toString());
            call.token(token);
            Transport.Answer answer = transport.send(userId, "POST", listPath(sessionId, key) + "/items", call);
            // The store keeps what it last saved (the parts before this one): a guarded save's base.
            if (answer.status() == 409 && "append-conflict".equals(transport.problemCode(answer))) return null;
            if (answer.status() != 200) {
                known.remove(listName(userId, sessionId, key));
                throw transport.error(userId, answer);
            }
            JsonNode result = transport.json(answer);
            count = result.path("count").asLong();
            hash = result.path("hash").asText();
            from = to;
            remember(userId, sessionId, key, items.subList(0, to), count, hash);
        }
        return "appended";
    }

    private JsonNode readTree(byte[] json) {
        try {
            return mapper.readTree(json);
        } catch (IOException e) {
            throw new StateApiException("stored data is not JSON", null, 200, null, false, e);
        }
    }

    private void forgetSession(String userId, String sessionId) {
        String prefix = userName(userId) + '\u0000' + sessionId + '\u0000';
        synchronized (known) {
            known.keySet().removeIf(name -> name.startsWith(prefix));
        }
    }

    private static String userName(String userId) {
        return Transport.anonymous(userId) ? "" : userId;
    }

    private static String listName(String userId, String sessionId, String key) {
        return userName(userId) + '\u0000' + sessionId + '\u0000' + key;
    }

    /** Options of the store. */
    public static final class Builder {
        private URI baseUrl;
        private TokenProvider tokens =
                userId -> {
                    throw new IllegalStateException("no token provider: set one to act as user " + userId);
                };
        private ObjectMapper mapper;
        private HttpClient http;
        private Duration timeout = Duration.ofSeconds(30);
        private int attempts = 4;
        private int sessionPageSize = 1000;
        private int bodyLimitBytes = 4 << 20;
        private Duration leaseDuration = Duration.ofSeconds(60);
        private Duration leaseWait = Duration.ofSeconds(5);
        private boolean truncateEnabled;
        private String truncateUser;
        private ConflictPolicy listConflictPolicy = ConflictPolicy.OVERWRITE;
        private Consumer<RequestEvent> listener = event -> {};

        private Builder() {}

        /** The API's address, e.g. {@code http://127.0.0.1:8787} (required). */
        public Builder baseUrl(String baseUrl) {
            this.baseUrl = URI.create(Objects.requireNonNull(baseUrl, "baseUrl"));
            return this;
        }

        /** The token of each named user. */
        public Builder tokenProvider(TokenProvider tokens) {
            this.tokens = Objects.requireNonNull(tokens, "tokens");
            return this;
        }

        /** The Jackson mapper for state objects (default: unknown properties ignored, modules found on the class path). */
        public Builder objectMapper(ObjectMapper mapper) {
            this.mapper = mapper;
            return this;
        }

        /** The HTTP client (default: HTTP/1.1, connect timeout = {@link #timeout(Duration)}). */
        public Builder httpClient(HttpClient http) {
            this.http = http;
            return this;
        }

        /** Time each attempt may take to be answered (default 30 s). */
        public Builder timeout(Duration timeout) {
            this.timeout = Objects.requireNonNull(timeout, "timeout");
            return this;
        }

        /** Attempts per call where retrying is safe (default 4). */
        public Builder attempts(int attempts) {
            if (attempts < 1) throw new IllegalArgumentException("attempts must be at least 1");
            this.attempts = attempts;
            return this;
        }

        /** Sessions per page when listing them (1 to 1,000; default 1,000). */
        public Builder sessionPageSize(int size) {
            if (size < 1 || size > 1000) throw new IllegalArgumentException("sessionPageSize must be 1 to 1000");
            this.sessionPageSize = size;
            return this;
        }

        /**
         * The server's request body limit (default 4 MiB, the API's {@code BODY_LIMIT_BYTES}): a
         * larger value goes straight to the object store, and a larger list is written in parts.
         * A 413 from a server with a lower limit does the same.
         */
        public Builder bodyLimitBytes(int bytes) {
            if (bytes < 1024) throw new IllegalArgumentException("bodyLimitBytes must be at least 1024");
            this.bodyLimitBytes = bytes;
            return this;
        }

        /** A turn's lease (1 s to 15 min; default 60 s). */
        public Builder leaseDuration(Duration lease) {
            this.leaseDuration = Objects.requireNonNull(lease, "lease");
            return this;
        }

        /** How long beginning a turn waits for another holder's lease (0 to 10 s; default 5 s). */
        public Builder leaseWait(Duration wait) {
            this.leaseWait = Objects.requireNonNull(wait, "wait");
            return this;
        }

        /** Allows {@link #truncateAllSessions()}, for this user's sessions (null: the anonymous user's). For tests. */
        public Builder allowTruncateAllSessions(String userId) {
            this.truncateEnabled = true;
            this.truncateUser = userId;
            return this;
        }

        /**
         * What {@code save(userId, sessionId, key, List)} does when another writer (another
         * replica) changed the list since this store last read or saved it (default
         * {@code OVERWRITE}: last-writer-wins, the SPI's meaning; the other writer's list is
         * archived). With replicas, {@code APPEND_MERGE} for conversation lists, or {@code FAIL};
         * see {@link HttpAgentStateStore#save(String, String, String, List, ConflictPolicy)}.
         */
        public Builder listConflictPolicy(ConflictPolicy policy) {
            this.listConflictPolicy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Told of every HTTP attempt (metrics, tests). */
        public Builder requestListener(Consumer<RequestEvent> listener) {
            this.listener = Objects.requireNonNull(listener, "listener");
            return this;
        }

        public HttpAgentStateStore build() {
            if (baseUrl == null) throw new IllegalStateException("baseUrl is required");
            return new HttpAgentStateStore(this);
        }
    }
}
