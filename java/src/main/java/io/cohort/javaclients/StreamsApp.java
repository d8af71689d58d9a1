package io.cohort.javaclients;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

/**
 * A small Kafka Streams application in a streams group ({@code group.protocol=streams},
 * KIP-1071): {@code instances} KafkaStreams clients in this JVM, each its own Streams process
 * (its own state directory, so its own process id), one stream thread each.
 *
 * <p>The topology counts words. The input's key is a record id, its value a word; the stream is
 * re-keyed by word (a repartition topic, {@code APP-words-repartition}), and an in-memory store
 * ({@code counts}, changelog {@code APP-counts-changelog}) keeps per word the ids it has seen and
 * how many updates it took. Each update writes {@code "DISTINCT RAW"} to the output topic under
 * the word. At least once, a replay after a crash raises RAW but never DISTINCT: the final
 * DISTINCT per word is exact whatever was replayed, which lets a test kill instances and still
 * assert exact counts without transactions (that Cohort in front of an upstream does not offer).
 *
 * <p>Reports (JSON lines, each with its {@code instance} and {@code ms}, the wall clock):
 * {@code state} on every KafkaStreams state change ({@code RUNNING}, {@code REBALANCING}, ...),
 * {@code tasks} whenever its active or standby tasks changed (checked every 50 ms),
 * {@code error} for a stream thread that died (it is replaced), {@code closed} at the end.
 *
 * <pre>
 * streams ID bootstrap=B app=APP input=T output=T state_dir=DIR [instances=K]
 *         [first=N] [config.K=V ...]     instances numbered from first (0)
 * </pre>
 */
final class StreamsApp {
    private static final long WATCH_MS = 50;

    private StreamsApp() { }

    static void run(String id, Options o, AtomicBoolean stop) throws Exception {
        int instances = (int) o.getLong("instances", 1);
        int first = (int) o.getLong("first", 0);
        Topology topology = topology(o.get("input"), o.get("output"));
        List<KafkaStreams> clients = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        try {
            for (int i = first; i < first + instances; i++) {
                clients.add(start(id, i, o, topology));
                seen.add("");
            }
            while (!stop.get()) {
                for (int k = 0; k < clients.size(); k++) {
                    seen.set(k, reportTasks(id, first + k, clients.get(k), seen.get(k)));
                }
                Thread.sleep(WATCH_MS);
            }
        } finally {
            CloseOptions leave = CloseOptions.groupMembershipOperation(
                CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(20));
            for (int k = 0; k < clients.size(); k++) {
                clients.get(k).close(leave);
                Out.event(id, "closed", "instance", first + k, "ms", System.currentTimeMillis());
            }
        }
    }

    static Topology topology(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .map((recordId, word) -> KeyValue.pair(word, recordId), Named.as("by-word"))
            .groupByKey(Grouped.with("words", Serdes.String(), Serdes.String()))
            .aggregate(() -> "0", (word, recordId, seen) -> add(seen, recordId), Named.as("count"),
                       Materialized.<String, String>as(Stores.inMemoryKeyValueStore("counts"))
                           .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
            .toStream(Named.as("updates"))
            .mapValues(StreamsApp::summary, Named.as("summary"))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /** The aggregate {@code "RAW id,id,..."}: the update count and the set of ids seen. */
    static String add(String seen, String recordId) {
        String[] parts = seen.split(" ", 2);
        TreeSet<String> ids = new TreeSet<>();
        if (parts.length > 1 && !parts[1].isEmpty()) ids.addAll(List.of(parts[1].split(",")));
        ids.add(recordId);
        return (Long.parseLong(parts[0]) + 1) + " " + String.join(",", ids);
    }

    /** {@code "DISTINCT RAW"} of an aggregate. */
    static String summary(String seen) {
        String[] parts = seen.split(" ", 2);
        int distinct = parts.length > 1 && !parts[1].isEmpty() ? parts[1].split(",").length : 0;
        return distinct + " " + parts[0];
    }

    private static KafkaStreams start(String id, int instance, Options o, Topology topology) {
        Properties defaults = new Properties();
        defaults.put(StreamsConfig.APPLICATION_ID_CONFIG, o.get("app"));
        defaults.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        defaults.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        defaults.put(StreamsConfig.STATE_DIR_CONFIG,
                     Path.of(o.get("state_dir"), "instance-" + instance).toString());
        defaults.put(StreamsConfig.CLIENT_ID_CONFIG, o.get("app") + "-" + instance);
        defaults.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        defaults.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        defaults.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // Output within a fraction of a second (the default commits every 30 s at least once).
        defaults.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        defaults.put("consumer.auto.offset.reset", "earliest");
        KafkaStreams streams = new KafkaStreams(topology, o.client(defaults));
        streams.setStateListener((now, before) -> Out.event(
            id, "state", "instance", instance, "state", now.name(), "before", before.name(),
            "ms", System.currentTimeMillis()));
        streams.setUncaughtExceptionHandler(e -> {
            Out.event(id, "error", "instance", instance, "error", e.toString(),
                      "ms", System.currentTimeMillis());
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        streams.start();
        return streams;
    }

    /** Print the instance's tasks if they differ from {@code before} (their last print). */
    private static String reportTasks(String id, int instance, KafkaStreams streams, String before) {
        Map<String, List<String>> tasks = new TreeMap<>();
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        try {
            for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
                thread.activeTasks().forEach(t -> active.add(t.taskId().toString()));
                thread.standbyTasks().forEach(t -> standby.add(t.taskId().toString()));
            }
        } catch (RuntimeException e) {
            return before;  // not running (yet, or any more): nothing to report
        }
        tasks.put("active", new ArrayList<>(active));
        tasks.put("standby", new ArrayList<>(standby));
        String now = tasks.toString();
        if (Objects.equals(now, before)) return before;
        Out.event(id, "tasks", "instance", instance, "active", tasks.get("active"),
                  "standby", tasks.get("standby"), "ms", System.currentTimeMillis());
        return now;
    }
}
