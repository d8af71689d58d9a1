package io.cohort.javaclients;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * {@code instances} KafkaShareConsumers of one share group (threads of this JVM), in explicit
 * acknowledgement mode: each record of a poll is accepted, then commitSync sends the
 * acknowledgements. Reports (JSON lines, each with its {@code instance}): {@code records} per
 * partition of a poll (offsets, the highest delivery count, values that are their offsets),
 * {@code acknowledged} per partition whose acknowledgements the commit carried (the offsets,
 * and the error if the broker refused them), {@code error} for a poll or commit that threw, {@code closed}.
 * They close on {@code stop}, or once {@code records} records were acknowledged by them all.
 */
final class ShareConsumers {
    private static final Duration POLL = Duration.ofMillis(200);

    private ShareConsumers() { }

    static void run(String id, Options o, AtomicBoolean stop) throws Exception {
        int instances = (int) o.getLong("instances", 1);
        long records = o.getLong("records", Long.MAX_VALUE);
        AtomicLong acknowledged = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < instances; i++) {
            int instance = i;
            Thread t = new Thread(() -> consume(id, instance, o, stop, acknowledged, records),
                                  id + "-" + i);
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) t.join();
    }

    private static void consume(String id, int instance, Options o, AtomicBoolean stop,
                                AtomicLong acknowledged, long records) {
        Properties defaults = new Properties();
        defaults.put("group.id", o.get("group"));
        defaults.put("client.id", id + "-" + instance);
        defaults.put("share.acknowledgement.mode", "explicit");
        defaults.put("key.deserializer", StringDeserializer.class.getName());
        defaults.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(o.client(defaults))) {
            consumer.subscribe(List.of(o.get("topic").split(",")));
            while (!stop.get() && acknowledged.get() < records) {
                try {
                    ConsumerRecords<String, String> polled = consumer.poll(POLL);
                    if (polled.isEmpty()) continue;
                    report(id, instance, polled);
                    for (ConsumerRecord<String, String> r : polled) {
                        consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    Map<TopicIdPartition, Optional<KafkaException>> result = consumer.commitSync();
                    for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                        TopicPartition tp = e.getKey().topicPartition();
                        String error = e.getValue().map(Throwable::toString).orElse(null);
                        Out.event(id, "acknowledged", "instance", instance,
                                  "partition", GroupConsumers.name(tp),
                                  "offsets", offsets(polled.records(tp)), "error", error);
                    }
                    acknowledged.addAndGet(polled.count());
                } catch (RuntimeException e) {
                    Out.event(id, "error", "instance", instance, "error", e.toString());
                }
            }
        } catch (RuntimeException e) {
            Out.event(id, "error", "instance", instance, "error", e.toString());
        }
        Out.event(id, "closed", "instance", instance);
    }

    private static List<Long> offsets(List<ConsumerRecord<String, String>> records) {
        List<Long> offsets = new ArrayList<>();
        for (ConsumerRecord<String, String> r : records) offsets.add(r.offset());
        return offsets;
    }

    private static void report(String id, int instance, ConsumerRecords<String, String> polled) {
        for (TopicPartition tp : polled.partitions()) {
            List<ConsumerRecord<String, String>> got = polled.records(tp);
            boolean valuesAreOffsets = true;
            int deliveries = 0;
            for (ConsumerRecord<String, String> r : got) {
                valuesAreOffsets &= Long.toString(r.offset()).equals(r.value());
                deliveries = Math.max(deliveries, r.deliveryCount().map(Short::intValue).orElse(0));
            }
            Out.event(id, "records", "instance", instance, "partition", GroupConsumers.name(tp),
                      "offsets", offsets(got), "max_delivery_count", deliveries,
                      "values_are_offsets", valuesAreOffsets);
        }
    }
}
