// A Kafka Streams 4.4 application with group.protocol=streams, for the gateway test
// tests/gateway/test_streams_java.py: a count by key over one topic (one state store, so one
// changelog the coordinator must have created). It prints "RUNNING" once the client is in that
// state and runs until it is killed.

import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;

public class JoinOnly {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], topic = args[2], stateDir = args[3];
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(topic).groupByKey().count();
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> System.out.println(now));
        streams.start();
        Thread.sleep(Long.MAX_VALUE);
    }
}
