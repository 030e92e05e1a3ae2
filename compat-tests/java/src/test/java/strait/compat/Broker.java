package strait.compat;

import java.util.Properties;
import java.util.UUID;

/** Connection settings shared by the tests: the broker under test comes from -Dbootstrap.servers. */
final class Broker {
    static final String BOOTSTRAP = System.getProperty("bootstrap.servers", "127.0.0.1:9092");

    static Properties props() {
        Properties p = new Properties();
        p.put("bootstrap.servers", BOOTSTRAP);
        return p;
    }

    static String topic(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    private Broker() {}
}
