// Apache Kafka 4.3's own share-group client for tests/share (issue 34 item 5): a KafkaShareConsumer
// with implicit or explicit acknowledgement, and the Admin's share-group calls. Every fact it sees is
// printed as one JSON line on stdout for the test to read (tests/share/drivers.py).
//
//   consume BOOTSTRAP GROUP TOPIC POLICY   POLICY: implicit | accept | release | reject |
//                                           release-once (RELEASE at delivery 1, then ACCEPT) |
//                                           hold (poll once, acknowledge nothing, stay a member)
//       runs until a line "stop" or the end of stdin; then closes (acknowledgements committed).
//   admin BOOTSTRAP                         the commands below, one per stdin line (without BOOTSTRAP)
//   configure BOOTSTRAP GROUP KEY=VALUE...  incrementalAlterConfigs on the GROUP resource
//   describe BOOTSTRAP GROUP                describeShareGroups
//   offsets BOOTSTRAP GROUP                 listShareGroupOffsets
//   alter BOOTSTRAP GROUP TOPIC P=OFFSET... alterShareGroupOffsets
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareDriver {
    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String quote(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4]);
        } else if (args[0].equals("admin")) {
            serveAdmin(args[1]);
        } else {
            try (Admin admin = admin(args[1])) {
                adminCall(admin, args[0], List.of(args).subList(2, args.length));
            }
        }
    }

    static void adminCall(Admin admin, String command, List<String> a) throws Exception {
        switch (command) {
            case "configure" -> configure(admin, a.get(0), a.subList(1, a.size()));
            case "describe" -> describe(admin, a.get(0));
            case "offsets" -> offsets(admin, a.get(0));
            case "alter" -> alter(admin, a.get(0), a.get(1), a.subList(2, a.size()));
            default -> throw new IllegalArgumentException(command);
        }
    }

    // One Admin for many calls (a JVM start per call costs a second or more): a command per stdin line,
    // its JSON answer, or {"event": "error"} with the cause, on stdout; ends with stdin.
    static void serveAdmin(String bootstrap) throws Exception {
        try (Admin admin = admin(bootstrap);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            emit("{\"event\": \"ready\"}");
            String line;
            while ((line = in.readLine()) != null) {
                List<String> words = List.of(line.trim().split(" "));
                try {
                    adminCall(admin, words.get(0), words.subList(1, words.size()));
                } catch (Exception e) {
                    Throwable cause = e.getCause() == null ? e : e.getCause();
                    emit("{\"event\": \"error\", \"message\": " + quote(cause.toString()) + "}");
                }
            }
        }
    }

    static AtomicBoolean stopOnStdin() {
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { }
            } catch (Exception ignored) { }
            stop.set(true);
        });
        reader.setDaemon(true);
        reader.start();
        return stop;
    }

    static AcknowledgeType choose(String policy, int delivery) {
        return switch (policy) {
            case "accept" -> AcknowledgeType.ACCEPT;
            case "release" -> AcknowledgeType.RELEASE;
            case "reject" -> AcknowledgeType.REJECT;
            case "release-once" -> delivery <= 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT;
            default -> null;
        };
    }

    static void consume(String bootstrap, String group, String topic, String policy) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", policy.equals("implicit") ? "implicit" : "explicit");
        AtomicBoolean stop = stopOnStdin();
        try (KafkaShareConsumer<String, String> consumer =
                 new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            emit("{\"event\": \"subscribed\"}");
            boolean held = false;
            while (!stop.get()) {
                if (held) {
                    Thread.sleep(50);  // a member that holds its records: it polls no more
                    continue;
                }
                var records = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : records) {
                    int delivery = r.deliveryCount().map(Short::intValue).orElse(-1);
                    AcknowledgeType type = choose(policy, delivery);
                    emit("{\"event\": \"record\", \"ms\": " + System.currentTimeMillis()
                        + ", \"partition\": " + r.partition() + ", \"offset\": " + r.offset()
                        + ", \"delivery\": " + delivery + ", \"value\": " + quote(r.value())
                        + ", \"ack\": " + quote(type == null ? policy : type.toString()) + "}");
                    if (type != null) consumer.acknowledge(r, type);
                }
                if (!records.isEmpty() && policy.equals("hold")) held = true;
                if (!records.isEmpty() && !policy.equals("hold")) commit(consumer);
            }
            emit("{\"event\": \"closing\"}");
        }
        emit("{\"event\": \"closed\"}");
    }

    static void commit(KafkaShareConsumer<String, String> consumer) {
        Map<TopicIdPartition, java.util.Optional<org.apache.kafka.common.KafkaException>> done = consumer.commitSync();
        List<String> errors = new ArrayList<>();
        done.forEach((tp, e) -> e.ifPresent(x -> errors.add(quote(tp.partition() + ": " + x))));
        emit("{\"event\": \"committed\", \"errors\": " + errors + "}");
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return Admin.create(p);
    }

    static void configure(Admin admin, String group, List<String> pairs) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String pair : pairs) {
            String[] kv = pair.split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(kv[0], kv[1]), AlterConfigOp.OpType.SET));
        }
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        emit("{\"event\": \"configured\"}");
    }

    static void describe(Admin admin, String group) throws Exception {
        ShareGroupDescription d = admin.describeShareGroups(List.of(group)).all().get().get(group);
        List<String> members = new ArrayList<>();
        for (ShareMemberDescription m : d.members()) {
            List<String> parts = new ArrayList<>();
            for (TopicPartition tp : m.assignment().topicPartitions()) parts.add(quote(tp.toString()));
            members.add("{\"client_id\": " + quote(m.clientId()) + ", \"epoch\": " + m.memberEpoch()
                + ", \"partitions\": " + parts + "}");
        }
        emit("{\"event\": \"described\", \"state\": " + quote(d.groupState().toString())
            + ", \"members\": " + members + "}");
    }

    static void offsets(Admin admin, String group) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> found = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
            .partitionsToOffsetInfo(group).get();
        List<String> rows = new ArrayList<>();
        found.forEach((tp, info) -> rows.add("{\"topic\": " + quote(tp.topic()) + ", \"partition\": "
            + tp.partition() + ", \"start_offset\": " + (info == null ? "null" : info.startOffset())
            + ", \"lag\": " + (info == null ? "null" : info.lag().map(String::valueOf).orElse("null")) + "}"));
        emit("{\"event\": \"offsets\", \"partitions\": " + rows + "}");
    }

    static void alter(Admin admin, String group, String topic, Collection<String> pairs) throws Exception {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (String pair : pairs) {
            String[] po = pair.split("=", 2);
            offsets.put(new TopicPartition(topic, Integer.parseInt(po[0])), Long.parseLong(po[1]));
        }
        admin.alterShareGroupOffsets(group, offsets).all().get();
        emit("{\"event\": \"altered\"}");
    }
}
