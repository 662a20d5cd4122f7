package io.agentstate.agentscope;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarFile;
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
 * agentscope-core and Jackson as provided, the stand-in names the commit it mirrors, the compiled
 * client references no AgentScope type but the five of the SPI's package (so it compiles against
 * the real jar) and only the Jackson members jackson-api.txt lists as present since 2.12, and its jar is the
 * automatic module {@code io.agentstate.agentscope}.
 */
class BuildTest {
    private static final Set<String> SPI_TYPES =
            Set.of(
                    "io/agentscope/core/state/AgentStateStore",
                    "io/agentscope/core/state/State",
                    "io/agentscope/core/state/VersionedState",
                    "io/agentscope/core/state/ConflictPolicy",
                    "io/agentscope/core/state/ConcurrentSessionModificationException");

    @Test
    void thePomDeclaresAgentscopeCoreAndJacksonProvidedOnJava17() throws Exception {
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
        assertEquals("provided", text(jackson, "scope"), "the application's Jackson");
        assertTrue(properties.get("jackson.version").startsWith("2.12."), "compiled against the floor, 2.12");
        assertTrue(
                Files.readString(Path.of("pom.xml")).contains("<Automatic-Module-Name>io.agentstate.agentscope</Automatic-Module-Name>"));
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

    @Test
    void theJarIsTheAutomaticModuleIoAgentstateAgentscope() throws IOException {
        Path jar = Path.of("build/agent-state-store-agentscope.jar");
        try (JarFile file = new JarFile(jar.toFile())) {
            assertEquals("io.agentstate.agentscope", file.getManifest().getMainAttributes().getValue("Automatic-Module-Name"));
        }
        // What the module system makes of it: that name, exporting the client's package.
        ModuleDescriptor module = ModuleFinder.of(jar).findAll().iterator().next().descriptor();
        assertEquals("io.agentstate.agentscope", module.name());
        assertTrue(module.isAutomatic());
        assertTrue(module.packages().contains("io.agentstate.agentscope"));
    }

    @Test
    void theClientUsesOnlyTheJacksonMembersListedAsPresentSince212() throws Exception {
        Set<String> allowed = new TreeSet<>();
        for (String line : Files.readAllLines(Path.of("jackson-api.txt")))
            if (!line.isBlank() && !line.startsWith("#")) allowed.add(line.trim());
        List<String> command = new ArrayList<>();
        Path java = Path.of(ProcessHandle.current().info().command().orElseThrow());
        command.add(java.resolveSibling("javap").toString());
        command.add("-c");
        command.add("-p");
        try (Stream<Path> classes = Files.walk(Path.of("build/main"))) {
            classes.filter(p -> p.toString().endsWith(".class")).forEach(p -> command.add(p.toString()));
        }
        Process javap = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(javap.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, javap.waitFor(), out);
        Set<String> used = new TreeSet<>();
        Matcher m = Pattern.compile("(?:Method|InterfaceMethod|Field) (com/fasterxml/jackson/\\S+)").matcher(out);
        while (m.find()) used.add(m.group(1));
        assertTrue(used.size() > 20, "the scan sees the client's Jackson calls: " + used.size());
        Set<String> unlisted = new TreeSet<>(used);
        unlisted.removeAll(allowed);
        assertEquals(Set.of(), unlisted, "members not checked against Jackson 2.12 (jackson-api.txt)");
    }

    private static String text(Element parent, String tag) {
        NodeList nodes = parent.getElementsByTagName(tag);
        return nodes.getLength() == 0 ? "" : nodes.item(0).getTextContent().trim();
    }
}
