package io.agentstate.agentscope;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentscope.core.state.State;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;

/**
 * One agent turn (what {@code agent.call()} does: get at the start, save at the end) in two calls:
 * {@link HttpAgentStateStore#beginTurn} took the session's lease and read the named keys; reads
 * are served from that, saves are buffered (a read after a save sees the save), and {@link
 * #commit()} sends them all in one {@code POST .../commits} with the lease's fencing token, then
 * releases the lease. {@link #close()} without a commit releases the lease and writes nothing. One
 * thread at a time.
 */
public final class AgentStateTurn implements AutoCloseable {
    /** List items one commit carries at most; a list change beyond it is written before the commit. */
    private static final int MAX_COMMIT_ITEMS = 1000;
    /** Bytes of a commit body around its entries: commitId, token, lease, brackets (generous). */
    private static final int COMMIT_FRAME_BYTES = 4096;
    /** Bytes of one entry around its value or items: key, member names, counts, hashes (a key up to 128 bytes, generous). */
    private static final int ENTRY_FRAME_BYTES = 512;

    private final HttpAgentStateStore store;
    private final Transport transport;
    private final String userId;
    private final String sessionId;
    private final String owner;
    private final long token;
    private final Instant leaseExpiresAt;
    private final boolean existed;
    /** The snapshot's values: the JSON, null when absent; a too-large one as its download. */
    private final Map<String, JsonNode> values = new LinkedHashMap<>();
    private final Map<String, JsonNode> downloads = new LinkedHashMap<>();
    /** The snapshot's versions (etags) and revisions of the values it read (absent ones have none). */
    private final Map<String, String> etags = new LinkedHashMap<>();

    private final Map<String, Long> revisions = new LinkedHashMap<>();
    /** The snapshot's lists: its most recent items (from {@code offset}), count and hash. */
    private final Map<String, SnapshotList> lists = new LinkedHashMap<>();
    /** Buffered values: the JSON, or null for a delete. */
    private final Map<String, JsonNode> valueChanges = new LinkedHashMap<>();
    /** Buffered lists: the whole list. */
    private final Map<String, List<JsonNode>> listChanges = new LinkedHashMap<>();
    private boolean over;

    /** A list of the snapshot. */
    private static final class SnapshotList {
        List<JsonNode> items;
        long offset;
        final long count;
        final String hash;

        SnapshotList(List<JsonNode> items, long offset, long count, String hash) {
            this.items = items;
            this.offset = offset;
            this.count = count;
            this.hash = hash;
        }
    }

    /** What a commit wrote: each value's new version (its revision), and what became of each list. */
    public record CommitResult(Map<String, Long> versions, Map<String, String> listActions) {}

    AgentStateTurn(
            HttpAgentStateStore store,
            String userId,
            String sessionId,
            Collection<String> valueKeys,
            Collection<String> listKeys,
            JsonNode answer) {
        this.store = store;
        this.transport = store.transport();
        this.userId = userId;
        this.sessionId = sessionId;
        JsonNode lease = answer.path("lease");
        this.owner = lease.path("owner").asText();
        this.token = lease.path("token").asLong();
        this.leaseExpiresAt = Instant.parse(lease.path("expiresAt").asText());
        this.existed = answer.path("exists").asBoolean();
        // An absent session answers no keys: each one asked for is absent (a list empty, its hash unknown).
        for (String key : valueKeys) values.put(key, null);
        for (String key : listKeys) lists.put(key, new SnapshotList(new ArrayList<>(), 0, 0, null));
        for (JsonNode v : answer.path("values")) {
            String key = v.path("key").asText();
            if (v.path("corrupt").asBoolean(false)) values.put(key, CORRUPT);
            else if (v.path("absent").asBoolean(false)) values.put(key, null);
            else if (v.has("download")) {
                downloads.put(key, v.path("download"));
                values.put(key, null);
                seen(key, v);
            } else {
                values.put(key, v.path("value"));
                seen(key, v);
            }
        }
        for (JsonNode l : answer.path("lists")) {
            String key = l.path("key").asText();
            if (l.path("corrupt").asBoolean(false)) {
                lists.put(key, null);
                continue;
            }
            List<JsonNode> items = new ArrayList<>();
            l.path("items").forEach(items::add);
            long offset = l.path("offset").asLong();
            long count = l.path("count").asLong();
            String hash = l.path("hash").asText();
            lists.put(key, new SnapshotList(items, offset, count, hash));
            // A list read whole is what the store knows of it: a plain save after the turn appends.
            if (offset == 0 && !hash.isEmpty()) store.remember(userId, sessionId, key, items, count, hash);
        }
    }

    /** Records the version and revision the snapshot answered for a value. */
    private void seen(String key, JsonNode v) {
        etags.put(key, v.path("etag").asText());
        long revision = v.path("revision").asLong(0);
        if (revision > 0) revisions.put(key, revision);
    }

    /** A marker for a damaged value in the snapshot. */
    private static final JsonNode CORRUPT = com.fasterxml.jackson.databind.node.MissingNode.getInstance();

    /** Whether the session existed when the turn began. */
    public boolean sessionExisted() {
        return existed;
    }

    /** The lease's fencing token. */
    public long token() {
        return token;
    }

    /** The lease's owner name. */
    public String owner() {
        return owner;
    }

    /** When the lease ends unless committed earlier. */
    public Instant leaseExpiresAt() {
        return leaseExpiresAt;
    }

    /** The value as this turn sees it (a buffered save or delete, else what the turn read). */
    public <T extends State> Optional<T> get(String key, Class<T> type) {
        if (valueChanges.containsKey(key)) {
            JsonNode change = valueChanges.get(key);
            return change == null ? Optional.empty() : Optional.of(store.convert(change, type));
        }
        if (!values.containsKey(key)) throw new IllegalArgumentException("value " + key + " was not read by this turn");
        JsonNode value = values.get(key);
        if (value == CORRUPT) throw new StateApiException("value " + key + " is damaged", "internal", 200, null, false, null);
        if (value == null && downloads.containsKey(key)) {
            try {
                value = store.mapper().readTree(transport.direct(downloads.remove(key), null));
            } catch (java.io.IOException e) {
                throw new StateApiException("value " + key + " is not JSON", null, 200, null, false, e);
            }
            values.put(key, value);
        }
        return value == null ? Optional.empty() : Optional.of(store.convert(value, type));
    }

    /**
     * The version of the value when the turn read it: its revision, as {@code getVersioned}
     * answers it (0 when absent).
     */
    public long version(String key) {
        if (!values.containsKey(key)) throw new IllegalArgumentException("value " + key + " was not read by this turn");
        if (!etags.containsKey(key)) return HttpAgentStateStore.ABSENT;
        Long revision = revisions.get(key);
        if (revision == null)
            throw new StateApiException("the snapshot answered no revision: the server predates revisions", null, 200, null, false, null);
        return revision;
    }

    /** The whole list as this turn sees it (a buffered save, else what the turn read). */
    public <T extends State> List<T> getList(String key, Class<T> itemType) {
        List<JsonNode> items = listChanges.containsKey(key) ? listChanges.get(key) : whole(key);
        List<T> result = new ArrayList<>(items.size());
        for (JsonNode item : items) result.add(store.convert(item, itemType));
        return result;
    }

    /** Buffers a save of a single value. */
    public void save(String key, State value) {
        open();
        Objects.requireNonNull(value, "value");
        valueChanges.put(key, store.tree(value));
    }

    /** Buffers a save of the whole list (only what changed is sent at the commit). */
    public void save(String key, List<? extends State> items) {
        open();
        List<JsonNode> nodes = new ArrayList<>(items.size());
        for (State item : items) nodes.add(store.tree(item));
        listChanges.put(key, nodes);
    }

    /** Buffers a delete of a single value. */
    public void delete(String key) {
        open();
        valueChanges.put(key, null);
    }

    /**
     * Sends every buffered change in one commit with the lease's token and releases the lease
     * (also when nothing is buffered). A list that grew is appended at the count and hash the turn
     * read; one that changed otherwise replaces the list on that hash (the old one is archived).
     * Retried with the same {@code commitId} after lost answers. The turn is then over. What one
     * commit cannot carry (a value over half the body limit, a list change of more than 1,000
     * items) is written just before it, fenced by the same token.
     */
    public CommitResult commit() {
        open();
        ObjectNode body = store.mapper().createObjectNode();
        body.put("commitId", "c-" + UUID.randomUUID());
        body.put("token", token);
        ArrayNode valueBody = body.putArray("values");
        Map<String, Long> versions = new LinkedHashMap<>();
        // Bytes the commit's body may still take (its own members and each entry's frame aside).
        long[] room = {store.bodyLimitBytes() - COMMIT_FRAME_BYTES};
        valueChanges.forEach((key, value) -> {
            byte[] json = value == null ? null : transport.bytes(value);
            if (json != null && (json.length > store.bodyLimitBytes() / 2 || json.length > room[0])) {
                // Too large for the commit's body: saved now (through the object store), fenced by the lease's token.
                versions.put(key, store.saveFenced(userId, sessionId, key, json, token).revision());
                return;
            }
            room[0] -= (json == null ? 0 : json.length) + ENTRY_FRAME_BYTES;
            ObjectNode entry = valueBody.addObject().put("key", key);
            if (value == null) entry.put("delete", true);
            else {
                entry.set("value", value);
                // Not a condition: the version and revision the snapshot read, so the server writes
                // the next revision over that version without reading the value first.
                if (etags.containsKey(key) && revisions.containsKey(key))
                    entry.put("seenVersion", etags.get(key)).put("seenRevision", revisions.get(key).longValue());
            }
        });
        ArrayNode listBody = body.putArray("lists");
        Map<String, String> actions = new LinkedHashMap<>();
        int budget = MAX_COMMIT_ITEMS;
        for (Map.Entry<String, List<JsonNode>> change : listChanges.entrySet()) {
            String key = change.getKey();
            List<JsonNode> next = change.getValue();
            SnapshotList read = lists.containsKey(key) ? lists.get(key) : null;
            List<JsonNode> before = read == null ? null : whole(key);
            if (before != null && HttpAgentStateStore.sameItems(next, before)) {
                actions.put(key, "unchanged");
                continue;
            }
            // Without the list's hash (an absent session), it is sent whole.
            boolean grows = before != null && read.hash != null && HttpAgentStateStore.startsWith(next, before);
            int sent = grows ? next.size() - before.size() : next.size();
            List<JsonNode> sentItems = grows ? next.subList(before.size(), next.size()) : next;
            long bytes = ENTRY_FRAME_BYTES;
            for (JsonNode item : sentItems) bytes += transport.bytes(item).length + 1;
            if (sent > budget || bytes > room[0]) {
                // Too many items or bytes for the commit: written now, fenced by the lease's token.
                if (read != null && read.hash != null) store.remember(userId, sessionId, key, before, read.count, read.hash);
                actions.put(key, store.saveList(userId, sessionId, key, next, token));
                continue;
            }
            budget -= sent;
            room[0] -= bytes;
            ObjectNode entry = listBody.addObject().put("key", key);
            ArrayNode items = entry.putArray(grows ? "append" : "replace");
            sentItems.forEach(items::add);
            if (grows) entry.put("expectedCount", read.count);
            if (read != null && read.hash != null) entry.put("expectedHash", read.hash);
        }
        body.putObject("lease").put("owner", owner).put("release", true);
        Transport.Call call = new Transport.Call().body(transport.bytes(body));
        Transport.Answer answer =
                transport.send(userId, "POST", HttpAgentStateStore.sessionPath(sessionId) + "/commits", call);
        if (answer.status() != 200) throw transport.error(userId, answer);
        over = true;
        JsonNode result = transport.json(answer);
        for (JsonNode v : result.path("values")) {
            long revision = v.path("revision").asLong(0);
            if (revision > 0) versions.put(v.path("key").asText(), revision);
        }
        for (JsonNode l : result.path("lists")) {
            String key = l.path("key").asText();
            actions.put(key, l.path("action").asText());
            // The store now knows the list as committed, so a later plain save appends to it.
            store.remember(userId, sessionId, key, listChanges.get(key), l.path("count").asLong(), l.path("hash").asText());
        }
        return new CommitResult(Collections.unmodifiableMap(versions), Collections.unmodifiableMap(actions));
    }

    /** Releases the lease when the turn was not committed (nothing buffered is written). */
    @Override
    public void close() {
        if (over) return;
        over = true;
        Transport.Call call = new Transport.Call().header("Lock-Owner", owner).token(token);
        Transport.Answer answer =
                transport.send(userId, "DELETE", HttpAgentStateStore.sessionPath(sessionId) + "/lock", call);
        if (answer.status() != 204 && answer.status() != 409) throw transport.error(userId, answer);
    }

    private void open() {
        if (over) throw new IllegalStateException("the turn is over: it was committed or closed");
    }

    /** The whole list the turn read: the snapshot's items, with the older ones read on first need (at the snapshot's hash). */
    private List<JsonNode> whole(String key) {
        if (!lists.containsKey(key)) throw new IllegalArgumentException("list " + key + " was not read by this turn");
        SnapshotList list = lists.get(key);
        if (list == null) throw new StateApiException("list " + key + " is damaged", "internal", 200, null, false, null);
        if (list.offset > 0) {
            List<JsonNode> older = store.readList(userId, sessionId, key, list.hash, list.offset);
            List<JsonNode> all = new ArrayList<>(older.subList(0, (int) list.offset));
            all.addAll(list.items);
            list.items = all;
            list.offset = 0;
        }
        return list.items;
    }
}
