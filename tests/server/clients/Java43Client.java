// Apache Kafka 4.3's Java client against a running kcoord (issue 33 item 6): its producer (Produce v13,
// topics by id), its consumers (Fetch v18; a classic group; a KIP-848 group, whose OffsetCommit and
// OffsetFetch are v10, by topic id) and its
// Admin (DescribeMetadataQuorum, DescribeTopicPartitions behind describeTopics, UpdateFeatures,
// AlterReplicaLogDirs, DescribeCluster v2). Run as `java -cp kafka-clients.jar:slf4j-api.jar
// Java43Client.java BOOTSTRAP TOPIC GROUP LOG_DIR`; prints one JSON line.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Java43Client {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], logDir = args[3];
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        StringBuilder out = new StringBuilder("{");
        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            List<String> offsets = new ArrayList<>();
            Properties p = new Properties();
            p.putAll(common);
            p.put("acks", "all");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 5; i++) {
                    RecordMetadata m = producer.send(new ProducerRecord<>(topic, i % 2, "k" + i, "v" + i)).get();
                    offsets.add("\"" + m.partition() + ":" + m.offset() + "\"");
                }
            }
            Properties c = new Properties();
            c.putAll(common);
            c.put("group.id", group);
            c.put("auto.offset.reset", "earliest");
            c.put("enable.auto.commit", "false");
            List<String> values = new ArrayList<>();
            long committed;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                while (values.size() < 5 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        values.add("\"" + r.value() + "\"");
                    }
                }
                TopicPartition tp = new TopicPartition(topic, 1);
                consumer.commitSync(Map.of(tp, new OffsetAndMetadata(2, "j43")));
                committed = consumer.committed(Collections.singleton(tp)).get(tp).offset();
            }
            Collections.sort(values);
            // the KIP-848 consumer commits by topic id (OffsetCommit / OffsetFetch v10)
            c.put("group.id", group + "-848");
            c.put("group.protocol", "consumer");
            long committed848;
            int read848 = 0;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of(topic));
                long deadline = System.currentTimeMillis() + 60_000;
                while (read848 < 5 && System.currentTimeMillis() < deadline) {
                    read848 += consumer.poll(Duration.ofMillis(200)).count();
                }
                TopicPartition tp = new TopicPartition(topic, 0);
                consumer.commitSync(Map.of(tp, new OffsetAndMetadata(3, "j848")));
                committed848 = consumer.committed(Collections.singleton(tp)).get(tp).offset();
            }
            QuorumInfo quorum = admin.describeMetadataQuorum().quorumInfo().get();
            TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            short level = admin.describeFeatures().featureMetadata().get()
                .finalizedFeatures().get("transaction.version").maxVersionLevel();
            admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate(level, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions().validateOnly(true)).all().get();
            admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica(topic, 0, 0), logDir)).all().get();
            int nodes = admin.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)).nodes().get().size();
            out.append("\"offsets\": ").append(offsets)
                .append(", \"values\": ").append(values)
                .append(", \"committed\": ").append(committed)
                .append(", \"read848\": ").append(read848)
                .append(", \"committed848\": ").append(committed848)
                .append(", \"quorum_leader\": ").append(quorum.leaderId())
                .append(", \"voters\": ").append(quorum.voters().size())
                .append(", \"observers\": ").append(quorum.observers().size())
                .append(", \"partitions\": ").append(described.partitions().size())
                .append(", \"transaction_version\": ").append(level)
                .append(", \"nodes\": ").append(nodes)
                .append("}");
        }
        System.out.println(out);
    }
}
