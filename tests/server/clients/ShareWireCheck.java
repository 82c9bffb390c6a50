// Kafka 4.3's own generated ShareFetch / ShareAcknowledge message classes write request and response
// bodies at a given version, so tests/server/test_share_fetch_sessions.py can check kcoord's codec against
// them byte for byte (librdkafka's ShareConsumer sends v1 only; v2 is KIP-1206/KIP-1222's).
// usage: java -cp kafka-clients.jar ShareWireCheck.java   -> one JSON line {"name-vN": "hex", ...}

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ShareAcknowledgeRequestData;
import org.apache.kafka.common.message.ShareAcknowledgeResponseData;
import org.apache.kafka.common.message.ShareFetchRequestData;
import org.apache.kafka.common.message.ShareFetchResponseData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.MemoryRecords;

public class ShareWireCheck {
    static final Uuid TOPIC = new Uuid(0x0102030405060708L, 0x1112131415161718L);

    static String hex(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buffer), cache, version);
        return HexFormat.of().formatHex(buffer.array());
    }

    static ShareFetchRequestData.AcknowledgementBatch batch() {
        return new ShareFetchRequestData.AcknowledgementBatch()
            .setFirstOffset(3).setLastOffset(5).setAcknowledgeTypes(List.of((byte) 1, (byte) 2, (byte) 4));
    }

    static ShareFetchRequestData fetchRequest() {
        ShareFetchRequestData.FetchTopicCollection topics = new ShareFetchRequestData.FetchTopicCollection();
        ShareFetchRequestData.FetchPartitionCollection partitions = new ShareFetchRequestData.FetchPartitionCollection();
        partitions.add(new ShareFetchRequestData.FetchPartition().setPartitionIndex(2)
            .setAcknowledgementBatches(new ArrayList<>(List.of(batch()))));
        topics.add(new ShareFetchRequestData.FetchTopic().setTopicId(TOPIC).setPartitions(partitions));
        List<ShareFetchRequestData.ForgottenTopic> forgotten = new ArrayList<>(List.of(
            new ShareFetchRequestData.ForgottenTopic().setTopicId(TOPIC).setPartitions(List.of(7, 8))));
        return new ShareFetchRequestData().setGroupId("g").setMemberId("m-1").setShareSessionEpoch(4)
            .setMaxWaitMs(500).setMinBytes(1).setMaxBytes(1 << 20).setMaxRecords(300).setBatchSize(100)
            .setTopics(topics).setForgottenTopicsData(forgotten);
    }

    static ShareFetchResponseData fetchResponse() {
        ShareFetchResponseData.PartitionData partition = new ShareFetchResponseData.PartitionData()
            .setPartitionIndex(2).setErrorCode((short) 0).setAcknowledgeErrorCode((short) 121)
            .setCurrentLeader(new ShareFetchResponseData.LeaderIdAndEpoch().setLeaderId(0).setLeaderEpoch(3))
            .setRecords(MemoryRecords.EMPTY)
            .setAcquiredRecords(List.of(new ShareFetchResponseData.AcquiredRecords()
                .setFirstOffset(10).setLastOffset(19).setDeliveryCount((short) 2)));
        ShareFetchResponseData.ShareFetchableTopicResponseCollection topics =
            new ShareFetchResponseData.ShareFetchableTopicResponseCollection();
        topics.add(new ShareFetchResponseData.ShareFetchableTopicResponse().setTopicId(TOPIC)
            .setPartitions(List.of(partition)));
        return new ShareFetchResponseData().setAcquisitionLockTimeoutMs(30000).setResponses(topics);
    }

    static ShareAcknowledgeRequestData ackRequest() {
        ShareAcknowledgeRequestData.AcknowledgeTopicCollection topics = new ShareAcknowledgeRequestData.AcknowledgeTopicCollection();
        ShareAcknowledgeRequestData.AcknowledgePartitionCollection partitions =
            new ShareAcknowledgeRequestData.AcknowledgePartitionCollection();
        partitions.add(new ShareAcknowledgeRequestData.AcknowledgePartition().setPartitionIndex(2)
            .setAcknowledgementBatches(List.of(new ShareAcknowledgeRequestData.AcknowledgementBatch()
                .setFirstOffset(3).setLastOffset(3).setAcknowledgeTypes(List.of((byte) 3)))));
        topics.add(new ShareAcknowledgeRequestData.AcknowledgeTopic().setTopicId(TOPIC).setPartitions(partitions));
        return new ShareAcknowledgeRequestData().setGroupId("g").setMemberId("m-1").setShareSessionEpoch(5)
            .setTopics(topics);
    }

    static ShareAcknowledgeResponseData ackResponse() {
        ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection topics =
            new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection();
        topics.add(new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse().setTopicId(TOPIC)
            .setPartitions(List.of(new ShareAcknowledgeResponseData.PartitionData().setPartitionIndex(2)
                .setErrorCode((short) 121))));
        return new ShareAcknowledgeResponseData().setAcquisitionLockTimeoutMs(15000).setResponses(topics);
    }

    public static void main(String[] args) {
        Map<String, String> out = new TreeMap<>();
        for (short version = 1; version <= 2; version++) {
            ShareFetchRequestData fetch = fetchRequest();
            if (version == 2) {
                fetch.setShareAcquireMode((byte) 1).setIsRenewAck(true);
            }
            out.put("fetch-request-v" + version, hex(fetch, version));
            out.put("fetch-response-v" + version, hex(fetchResponse(), version));
            ShareAcknowledgeRequestData ack = ackRequest();
            if (version == 2) {
                ack.setIsRenewAck(true);
            }
            out.put("ack-request-v" + version, hex(ack, version));
            out.put("ack-response-v" + version, hex(ackResponse(), version));
        }
        StringBuilder json = new StringBuilder("{");
        out.forEach((k, v) -> json.append(json.length() > 1 ? ", " : "").append('"').append(k).append("\": \"").append(v).append('"'));
        System.out.println(json.append('}'));
    }
}
