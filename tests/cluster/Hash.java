// The oracle for tests/cluster/test_shards.py: each stdin line is a string's UTF-8 bytes in hex
// (hex, so any string fits on one line); prints Java's String.hashCode() of the decoded string.
// Decoding UTF-8 is what a Kafka broker does with a group id off the wire.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public class Hash {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            byte[] bytes = new byte[line.length() / 2];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            }
            System.out.println(new String(bytes, StandardCharsets.UTF_8).hashCode());
            System.out.flush();
        }
    }
}
