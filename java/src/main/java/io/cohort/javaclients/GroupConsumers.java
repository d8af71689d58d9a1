package io.cohort.javaclients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * {@code instances} KafkaConsumers of one group (threads of this JVM), each subscribed to the
 * topics, reporting (JSON lines, each with its {@code instance}):
 * <ul>
 * <li>{@code assignment}: its whole assignment, whenever it changed after a poll;
 * <li>{@code records}: per partition of a poll, first and last offset, count, and whether
 *     every value was its offset (as in Cohort's synthetic stream and {@code produce});
 * <li>{@code committed}: offsets a commitSync just wrote; {@code commit_failed}: why not;
 * <li>{@code error}: a poll that threw (the loop carries on); {@code closed} at the end.
 * </ul>
 * After each poll with records it commits, synchronously, the next offset of each partition
 * it read. With {@code stop_at=X} it instead commits exactly X for a partition once it read
 * up to X and pauses it: the group ends at a known committed offset everywhere (a partition
 * that moves on starts again at X and is paused again at its first records).
 * The consumers close (leaving the group) on {@code stop}, or once {@code records} records
 * were read by them all. With {@code together=true} every consumer is constructed before any
 * subscribes, and instance 0 reports {@code subscribing} at that moment: a benchmark's clock
 * starts there, not while a thousand consumers are still being built.
 */
final class GroupConsumers {
    private static final Duration POLL = Duration.ofMillis(200);

    private GroupConsumers() { }

    static void run(String id, Options o, AtomicBoolean stop) throws Exception {
        int instances = (int) o.getLong("instances", 1);
        long records = o.getLong("records", Long.MAX_VALUE);
        AtomicLong seen = new AtomicLong();
        CyclicBarrier built = Boolean.parseBoolean(o.get("together", "false"))
            ? new CyclicBarrier(instances, () -> Out.event(id, "subscribing", "instances", instances))
            : null;
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            int instance = i;
            Thread t = new Thread(() -> consume(id, instance, o, stop, seen, records, built),
                                  id + "-" + i);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
    }

    private static void consume(String id, int instance, Options o, AtomicBoolean stop,
                                AtomicLong seen, long records, CyclicBarrier built) {
        Properties defaults = new Properties();
        defaults.put("group.id", o.get("group"));
        defaults.put("group.protocol", o.get("protocol", "consumer"));
        defaults.put("client.id", id + "-" + instance);
        defaults.put("auto.offset.reset", "earliest");
        defaults.put("enable.auto.commit", "false");
        defaults.put("key.deserializer", StringDeserializer.class.getName());
        defaults.put("value.deserializer", StringDeserializer.class.getName());
        long stopAt = o.getLong("stop_at", -1);
        List<String> topics = List.of(o.get("topic").split(","));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(o.client(defaults))) {
            if (built != null) await(built);
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    Out.event(id, "revoked", "instance", instance, "partitions", names(partitions));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    Out.event(id, "assigned", "instance", instance, "partitions", names(partitions));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    Out.event(id, "lost", "instance", instance, "partitions", names(partitions));
                }
            });
            Set<TopicPartition> owned = new HashSet<>();
            while (!stop.get() && seen.get() < records) {
                ConsumerRecords<String, String> polled;
                try {
                    polled = consumer.poll(POLL);
                } catch (RuntimeException e) {
                    Out.event(id, "error", "instance", instance, "error", e.toString());
                    continue;
                }
                if (!owned.equals(consumer.assignment())) {
                    owned = new HashSet<>(consumer.assignment());
                    Out.event(id, "assignment", "instance", instance, "partitions", names(owned));
                }
                Map<TopicPartition, OffsetAndMetadata> next = report(id, instance, polled);
                seen.addAndGet(polled.count());
                if (stopAt >= 0) {
                    next = reached(consumer, polled, stopAt);
                }
                if (!next.isEmpty()) commit(id, instance, consumer, next);
            }
        } catch (RuntimeException e) {
            Out.event(id, "error", "instance", instance, "error", e.toString());
        }
        Out.event(id, "closed", "instance", instance);
    }

    /** Wait until every instance is built (the barrier's action reports {@code subscribing}). */
    private static void await(CyclicBarrier built) {
        try {
            built.await();
        } catch (InterruptedException | BrokenBarrierException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("the consumers were not all built", e);
        }
    }

    /** Report a poll's records per partition; the offset after the last one of each. */
    private static Map<TopicPartition, OffsetAndMetadata> report(
            String id, int instance, ConsumerRecords<String, String> polled) {
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (TopicPartition tp : polled.partitions()) {
            List<ConsumerRecord<String, String>> got = polled.records(tp);
            boolean valuesAreOffsets = true;
            for (ConsumerRecord<String, String> r : got) {
                valuesAreOffsets &= Long.toString(r.offset()).equals(r.value());
            }
            long first = got.get(0).offset();
            long last = got.get(got.size() - 1).offset();
            Out.event(id, "records", "instance", instance, "partition", name(tp),
                      "first", first, "last", last, "count", got.size(),
                      "values_are_offsets", valuesAreOffsets);
            next.put(tp, new OffsetAndMetadata(last + 1));
        }
        return next;
    }

    /** stop_at: X for each partition this poll read up to X or past it, which is paused.
     * (Read off the records, not {@code position()}: a partition pending revocation has no
     * position to give, and asking blocks the poll loop for default.api.timeout.ms.) */
    private static Map<TopicPartition, OffsetAndMetadata> reached(
            KafkaConsumer<String, String> consumer, ConsumerRecords<String, String> polled,
            long stopAt) {
        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
        for (TopicPartition tp : polled.partitions()) {
            List<ConsumerRecord<String, String>> got = polled.records(tp);
            if (got.get(got.size() - 1).offset() + 1 >= stopAt) {
                next.put(tp, new OffsetAndMetadata(stopAt));
            }
        }
        consumer.pause(next.keySet());
        return next;
    }

    private static void commit(String id, int instance, KafkaConsumer<String, String> consumer,
                               Map<TopicPartition, OffsetAndMetadata> offsets) {
        try {
            consumer.commitSync(offsets);
            Map<String, Long> written = new TreeMap<>();
            offsets.forEach((tp, om) -> written.put(name(tp), om.offset()));
            Out.event(id, "committed", "instance", instance, "offsets", written);
        } catch (RuntimeException e) {
            Out.event(id, "commit_failed", "instance", instance, "error", e.toString());
        }
    }

    static String name(TopicPartition tp) {
        return tp.topic() + "-" + tp.partition();
    }

    static List<String> names(Collection<TopicPartition> partitions) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : partitions) out.add(name(tp));
        out.sort(null);
        return out;
    }
}
