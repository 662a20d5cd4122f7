#!/usr/bin/env bash
# Builds and tests the Java client without Maven: javac against Debian's jars in /usr/share/java
# (libjackson2-databind-java, junit5), then the JUnit console launcher. The AgentScope SPI is the
# test-scope stand-in (src/test/java/io/agentscope/...), compiled first; the main classes are
# compiled against it alone (and packed as the jar, with its module name), the tests against
# everything. Arguments go to the launcher.
# The tests read AGENT_STATE_URL, AGENT_STATE_ANON_URL and AGENT_STATE_TOKENS (JSON: user -> JWT);
# test/java/agentscope-java.test.ts sets them.
set -euo pipefail
cd "$(dirname "$0")"

JARS=/usr/share/java
JACKSON="$JARS/jackson-databind.jar:$JARS/jackson-core.jar:$JARS/jackson-annotations.jar"
JUNIT="$JARS/junit-jupiter-api.jar:$JARS/junit-jupiter-params.jar:$JARS/opentest4j.jar:$JARS/junit-platform-commons.jar:$JARS/apiguardian-api.jar"
OUT=build
# javac and the tests are short runs: the client compiler alone and the serial GC start faster.
QUICK=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC)
JQUICK=("${QUICK[@]/#/-J}")

rm -rf "$OUT"
mkdir -p "$OUT/spi" "$OUT/main" "$OUT/test"
find src/test/java/io/agentscope -name '*.java' >"$OUT/spi.txt"
find src/main/java -name '*.java' >"$OUT/main.txt"
find src/test/java -name '*.java' -not -path 'src/test/java/io/agentscope/*' >"$OUT/test.txt"

javac "${JQUICK[@]}" --release 17 -Xlint:all -Werror -d "$OUT/spi" @"$OUT/spi.txt"
javac "${JQUICK[@]}" --release 17 -Xlint:all,-serial -Werror -cp "$OUT/spi:$JACKSON" -d "$OUT/main" @"$OUT/main.txt"
# The jar a Maven build makes, with the pom's Automatic-Module-Name in its manifest (BuildTest reads it).
MODULE=$(sed -n 's:.*<Automatic-Module-Name>\(.*\)</Automatic-Module-Name>.*:\1:p' pom.xml)
printf 'Automatic-Module-Name: %s\n' "$MODULE" >"$OUT/MANIFEST.MF"
jar --create --file "$OUT/agent-state-store-agentscope.jar" --manifest "$OUT/MANIFEST.MF" -C "$OUT/main" .
javac "${JQUICK[@]}" --release 17 -d "$OUT/test" -cp "$OUT/spi:$OUT/main:$JACKSON:$JUNIT" @"$OUT/test.txt"

exec java "${QUICK[@]}" -jar "$JARS/junit-platform-console-standalone.jar" \
  --disable-banner --disable-ansi-colors --details=summary \
  --class-path "$OUT/spi:$OUT/main:$OUT/test:$JACKSON" \
  --scan-class-path "$OUT/test" \
  --reports-dir "$OUT/reports" --fail-if-no-tests "$@"
