// Encodes messages with Apache Kafka's own generated classes, for tests/protocol's cross-check:
// each stdin line is "<MessageName> <version> <json>" (Kafka's JSON field names); each stdout line is
// the hex of the body Kafka's *Data.write produces for that version.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public class KafkaEncode {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] parts = line.split(" ", 3);
            short version = Short.parseShort(parts[1]);
            Class<?> converter = Class.forName("org.apache.kafka.common.message." + parts[0] + "DataJsonConverter");
            JsonNode node = mapper.readTree(parts[2]);
            ApiMessage message = (ApiMessage) converter.getMethod("read", JsonNode.class, short.class)
                .invoke(null, node, version);
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
            message.write(new ByteBufferAccessor(buffer), cache, version);
            StringBuilder hex = new StringBuilder();
            for (byte b : buffer.array()) hex.append(String.format("%02x", b));
            System.out.println(hex);
        }
    }
}
