package io.cohort.javaclients;

import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** Topics and records for a broker that keeps them (the reference broker): a topic made with
 * Admin, and records whose value is their offset, as Cohort's synthetic stream has them. */
final class Records {
    private Records() { }

    static void createTopic(String id, Options o) throws Exception {
        try (Admin admin = Admin.create(o.client(new Properties()))) {
            int partitions = (int) o.getLong("partitions", 1);
            admin.createTopics(List.of(new NewTopic(o.get("topic"), partitions, (short) 1)))
                .all().get();
        }
        Out.event(id, "created", "topic", o.get("topic"));
    }

    /** {@code records} records to each of {@code partitions} partitions, record n of a
     * partition with the value "start + n": its offset there when the partition held
     * {@code start} records before. */
    static void produce(String id, Options o) throws Exception {
        Properties defaults = new Properties();
        defaults.put("key.serializer", StringSerializer.class.getName());
        defaults.put("value.serializer", StringSerializer.class.getName());
        defaults.put("linger.ms", "5");
        String topic = o.get("topic");
        int partitions = (int) o.getLong("partitions", 1);
        long records = o.getLong("records", 1);
        long start = o.getLong("start", 0);
        AtomicReference<Exception> failed = new AtomicReference<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(o.client(defaults))) {
            for (long n = 0; n < records; n++) {
                for (int p = 0; p < partitions; p++) {
                    producer.send(new ProducerRecord<>(topic, p, null, Long.toString(start + n)),
                                  (meta, e) -> { if (e != null) failed.compareAndSet(null, e); });
                }
            }
            producer.flush();
        }
        if (failed.get() != null) throw failed.get();
        Out.event(id, "produced", "topic", topic, "per_partition", records);
    }
}
