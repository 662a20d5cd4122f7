package io.agentstate.agentscope;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Replaces lone UTF-16 surrogates (half a character, as a model's output cut mid-character leaves
 * them) with U+FFFD in the strings and member names of a state's JSON, as AgentScope's
 * {@code JsonFileAgentStateStore} does when it writes UTF-8. The API stores I-JSON, which has no
 * lone surrogates, and refuses them (400); a valid pair (an emoji) is kept.
 */
final class LoneSurrogates {
    private static final char REPLACEMENT = '\uFFFD';

    private LoneSurrogates() {}

    /** The text with every lone surrogate replaced (the same string when there is none). */
    static String replace(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean lone;
            if (Character.isHighSurrogate(c)) {
                if (i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
                    if (out != null) out.append(c).append(text.charAt(i + 1));
                    i++;
                    continue;
                }
                lone = true;
            } else lone = Character.isLowSurrogate(c);
            if (lone && out == null) out = new StringBuilder(text.length()).append(text, 0, i);
            if (out != null) out.append(lone ? REPLACEMENT : c);
        }
        return out == null ? text : out.toString();
    }

    /** The node with every lone surrogate replaced: the same node when there is none, else a copy of what changed. */
    static JsonNode replace(JsonNode node, ObjectMapper mapper) {
        if (node.isTextual()) {
            String text = node.asText();
            String replaced = replace(text);
            return replaced == text ? node : TextNode.valueOf(replaced);
        }
        if (node instanceof ObjectNode) {
            List<Map.Entry<String, JsonNode>> entries = new ArrayList<>();
            boolean changed = false;
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                String name = replace(e.getKey());
                JsonNode value = replace(e.getValue(), mapper);
                changed |= name != e.getKey() || value != e.getValue();
                entries.add(Map.entry(name, value));
            }
            if (!changed) return node;
            ObjectNode copy = mapper.createObjectNode();
            for (Map.Entry<String, JsonNode> e : entries) copy.set(e.getKey(), e.getValue());
            return copy;
        }
        if (node instanceof ArrayNode) {
            List<JsonNode> items = new ArrayList<>();
            boolean changed = false;
            for (JsonNode item : node) {
                JsonNode replaced = replace(item, mapper);
                changed |= replaced != item;
                items.add(replaced);
            }
            return changed ? mapper.createArrayNode().addAll(items) : node;
        }
        return node;
    }
}
