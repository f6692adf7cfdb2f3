#!/usr/bin/env bash
# Cassandra helpers shared by cassandra/start.sh (one node) and cassandra-cluster/*.sh (three
# nodes): the jars from Maven Central and the JVM flags. Source it after common.sh; do not run it.

CASSANDRA_MAIN_CLASS=org.apache.cassandra.service.CassandraDaemon
# Every Cassandra started from this checkout runs these jars (the cluster reuses them too).
CASSANDRA_LIB="$WORK_ROOT/cassandra/lib"

# ensure_cassandra_jars: fills $CASSANDRA_LIB with cassandra-all and its dependencies from Maven
# Central, once per pom.xml (lib/.complete holds its checksum). A lock of its own, so the node and
# the cluster may start at the same time; neither waits for the other's JVM.
ensure_cassandra_jars() {
  local pom="$SERVERS_DIR/cassandra/pom.xml" work="$WORK_ROOT/cassandra"
  local marker="$CASSANDRA_LIB/.complete" pom_sum t_jars
  pom_sum="$(sha256sum "$pom" | cut -d' ' -f1)"
  mkdir -p "$work"
  exec 8>"$work/.jars.lock"
  flock -w 600 8 || die "another script holds $work/.jars.lock"
  t_jars="$(now)"
  if [[ -f "$marker" && "$(cat "$marker")" == "$pom_sum" ]]; then
    log "jars: reusing $CASSANDRA_LIB ($(find "$CASSANDRA_LIB" -name '*.jar' | wc -l) jars) in $(elapsed "$t_jars")s"
  else
    command -v mvn >/dev/null 2>&1 || die "mvn not found; install Maven (apt-get install maven)"
    log "jars: resolving cassandra-all from Maven Central into $CASSANDRA_LIB ..."
    rm -rf "$CASSANDRA_LIB" "$CASSANDRA_LIB.tmp"
    # mvn itself may run on whatever java is default; it only downloads, so that is fine.
    if ! mvn -B -q -f "$pom" dependency:copy-dependencies -DoutputDirectory="$CASSANDRA_LIB.tmp" >"$work/mvn.log" 2>&1; then
      tail -n 40 "$work/mvn.log" >&2 || true
      exec 8>&-
      die "mvn dependency:copy-dependencies failed (full output: $work/mvn.log)"
    fi
    mv "$CASSANDRA_LIB.tmp" "$CASSANDRA_LIB"
    printf '%s\n' "$pom_sum" >"$marker"
    log "jars: $(find "$CASSANDRA_LIB" -name '*.jar' | wc -l) jars, $(du -sh "$CASSANDRA_LIB" | cut -f1) downloaded/copied in $(elapsed "$t_jars")s"
  fi
  exec 8>&-
}

# set_cassandra_jvm_flags HEAP: sets the array CASSANDRA_JVM_FLAGS to the JVM flags every node
# needs on JDK 17: heap, GC, the jamm agent, and conf/jvm17-server.options of Cassandra 5.0.
# Call after ensure_cassandra_jars.
set_cassandra_jvm_flags() {
  local heap="$1" jamm
  jamm="$(find "$CASSANDRA_LIB" -maxdepth 1 -name 'jamm-*.jar' | head -n1)"
  [[ -n "$jamm" ]] || die "jamm jar not found in $CASSANDRA_LIB (delete it and retry)"
  CASSANDRA_JVM_FLAGS=(
    "-Xms$heap" "-Xmx$heap" -Xss256k -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError
    "-javaagent:$jamm"
    -Djdk.attach.allowAttachSelf=true
    -Dio.netty.tryReflectionSetAccessible=true
    -Dio.netty.allocator.useCacheForAllThreads=true -Dio.netty.allocator.maxOrder=11
    -Djava.net.preferIPv4Stack=true
    --add-exports java.base/jdk.internal.misc=ALL-UNNAMED
    --add-exports java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED
    --add-exports java.management/com.sun.jmx.remote.security=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.registry=ALL-UNNAMED
    --add-exports java.rmi/sun.rmi.server=ALL-UNNAMED
    --add-exports java.sql/java.sql=ALL-UNNAMED
    --add-exports java.base/java.lang.ref=ALL-UNNAMED
    --add-exports jdk.unsupported/sun.misc=ALL-UNNAMED
    --add-opens java.base/java.lang.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.loader=ALL-UNNAMED
    --add-opens java.base/jdk.internal.ref=ALL-UNNAMED
    --add-opens java.base/jdk.internal.reflect=ALL-UNNAMED
    --add-opens java.base/jdk.internal.math=ALL-UNNAMED
    --add-opens java.base/jdk.internal.module=ALL-UNNAMED
    --add-opens java.base/jdk.internal.util.jar=ALL-UNNAMED
    --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED
    --add-opens java.base/java.io=ALL-UNNAMED
    --add-opens java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens java.base/java.lang=ALL-UNNAMED
    --add-opens java.base/java.util=ALL-UNNAMED
    --add-opens java.base/java.nio=ALL-UNNAMED
  )
}
