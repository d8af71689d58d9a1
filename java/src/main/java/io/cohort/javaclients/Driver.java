package io.cohort.javaclients;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Kafka's own Java clients and tools, driven from Python tests and benchmarks
 * (actors/tools/java_clients.py). One JVM start costs a second of this machine, so one JVM
 * serves many commands: {@code Driver serve} reads commands from stdin, one a line, its tokens
 * separated by tabs, and runs each on its own thread; {@code Driver VERB ID ARGS...} runs one
 * and exits. Every command reports JSON lines tagged with its id on stdout (Out) and ends with
 * exactly one {@code {"event": "end", "ok": ...}}.
 *
 * <pre>
 * consume ID bootstrap=B topic=T group=G [protocol=consumer|classic] [instances=K] [together=true]
 *         [records=N] [stop_at=X] [config.K=V ...]   KafkaConsumers (GroupConsumers)
 * share   ID bootstrap=B topic=T group=G [instances=K] [records=N] [config.K=V ...]
 * produce ID bootstrap=B topic=T partitions=P records=N   N records per partition, value "offset"
 * topic   ID bootstrap=B topic=T partitions=P           create a topic (Admin)
 * tool    ID MAIN_CLASS ARG...                           one of Kafka's command-line tools (Tools)
 * streams ID bootstrap=B app=A input=T output=T state_dir=D [instances=K]
 *                                                        a Kafka Streams app (StreamsApp)
 * stop    ID                                             end a consume, share or streams command
 * </pre>
 */
public final class Driver {
    private static final Map<String, AtomicBoolean> STOPS = new ConcurrentHashMap<>();

    private Driver() { }

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("serve")) {
            serve();
        } else {
            run(Arrays.asList(args));
        }
    }

    private static void serve() throws Exception {
        List<Thread> running = new ArrayList<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            List<String> tokens = Arrays.asList(line.split("\t", -1));
            if (tokens.get(0).equals("stop")) {
                AtomicBoolean stop = STOPS.get(tokens.get(1));
                if (stop != null) stop.set(true);
                continue;
            }
            Thread t = new Thread(() -> run(tokens), "cmd-" + (tokens.size() > 1 ? tokens.get(1) : "?"));
            t.start();
            running.add(t);
        }
        // stdin closed: the caller is done; end what still runs, politely.
        STOPS.values().forEach(s -> s.set(true));
        for (Thread t : running) t.join(30_000);
        System.exit(0);
    }

    private static void run(List<String> tokens) {
        String verb = tokens.get(0);
        String id = tokens.size() > 1 ? tokens.get(1) : "";
        List<String> rest = tokens.subList(Math.min(2, tokens.size()), tokens.size());
        AtomicBoolean stop = new AtomicBoolean(false);
        STOPS.put(id, stop);
        try {
            switch (verb) {
                case "consume" -> GroupConsumers.run(id, new Options(rest), stop);
                case "share" -> ShareConsumers.run(id, new Options(rest), stop);
                case "produce" -> Records.produce(id, new Options(rest));
                case "topic" -> Records.createTopic(id, new Options(rest));
                case "tool" -> Tools.run(id, rest.get(0), rest.subList(1, rest.size()));
                case "streams" -> StreamsApp.run(id, new Options(rest), stop);
                default -> throw new IllegalArgumentException("unknown command " + verb);
            }
            Out.event(id, "end", "ok", true);
        } catch (Throwable e) {
            Out.event(id, "end", "ok", false, "error", e.toString());
        } finally {
            STOPS.remove(id);
        }
    }
}
