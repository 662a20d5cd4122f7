package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * What a user's build relies on (run from clients/java by build.sh): the pom declares
 * agentscope-core as provided, the stand-in names the commit it mirrors, and the compiled client
 * references no AgentScope type but the three of the SPI, so it compiles against the real jar.
 */
class BuildTest {
    private static final Set<String> SPI_TYPES =
            Set.of("io/agentscope/core/state/AgentStateStore", "io/agentscope/core/state/State", "io/agentscope/core/state/VersionedState");

    @Test
    void thePomDeclaresAgentscopeCoreProvidedAndJackson214OnJava17() throws Exception {
        Document pom = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(Path.of("pom.xml").toFile());
        Element project = pom.getDocumentElement();
        assertEquals("project", project.getTagName());
        Map<String, String> properties = new java.util.HashMap<>();
        NodeList props = ((Element) project.getElementsByTagName("properties").item(0)).getChildNodes();
        for (int i = 0; i < props.getLength(); i++)
            if (props.item(i) instanceof Element e) properties.put(e.getTagName(), e.getTextContent().trim());
        assertEquals("17", properties.get("maven.compiler.release"));
        NodeList dependencies = project.getElementsByTagName("dependency");
        Map<String, Element> byArtifact = new java.util.HashMap<>();
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element d = (Element) dependencies.item(i);
            byArtifact.put(text(d, "groupId") + ":" + text(d, "artifactId"), d);
        }
        Element core = byArtifact.get("io.agentscope:agentscope-core");
        assertEquals("provided", text(core, "scope"));
        assertEquals("${agentscope.version}", text(core, "version"));
        assertTrue(properties.get("agentscope.version").startsWith("2.0."));
        Element jackson = byArtifact.get("com.fasterxml.jackson.core:jackson-databind");
        assertEquals("", text(jackson, "scope"), "compile scope");
        assertTrue(properties.get("jackson.version").startsWith("2.14."), "the APIs used are those of 2.14");
        assertEquals("test", text(byArtifact.get("org.junit.jupiter:junit-jupiter"), "scope"));
    }

    @Test
    void theStandInNamesTheCommitItMirrors() throws IOException {
        String source = Files.readString(Path.of("src/test/java/io/agentscope/core/state/AgentStateStore.java"));
        assertTrue(source.contains("agentscope-ai/agentscope-java"));
        assertTrue(Pattern.compile("commit [0-9a-f]{40}").matcher(source).find(), "a full commit id");
        for (String member : new String[] {"supportsVersioning", "getVersioned", "saveIfVersion", "listSessionIds", "default void close", "default void delete"})
            assertTrue(source.contains(member), member);
    }

    @Test
    void theClientReferencesNoAgentscopeTypeButTheSpis() throws IOException {
        Set<String> referenced = new TreeSet<>();
        Pattern name = Pattern.compile("io/agentscope/[A-Za-z0-9_/$]+");
        try (Stream<Path> classes = Files.walk(Path.of("build/main"))) {
            for (Path c : (Iterable<Path>) classes.filter(p -> p.toString().endsWith(".class"))::iterator) {
                // The constant pool holds every class a class file refers to, as UTF-8 names.
                Matcher m = name.matcher(new String(Files.readAllBytes(c), StandardCharsets.ISO_8859_1));
                while (m.find()) referenced.add(m.group());
            }
        }
        assertFalse(referenced.isEmpty(), "the scan sees the SPI");
        assertTrue(SPI_TYPES.containsAll(referenced), "referenced: " + referenced);
        try (Stream<Path> sources = Files.walk(Path.of("src/main/java"))) {
            assertTrue(sources.noneMatch(p -> p.toString().contains("io/agentscope")), "no AgentScope source in main");
        }
    }

    private static String text(Element parent, String tag) {
        NodeList nodes = parent.getElementsByTagName(tag);
        return nodes.getLength() == 0 ? "" : nodes.item(0).getTextContent().trim();
    }
}
