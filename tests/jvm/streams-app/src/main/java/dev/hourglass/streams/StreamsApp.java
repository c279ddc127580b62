package dev.hourglass.streams;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.test.TestRecord;

/**
 * The Kafka Streams application of issue 35, run against Hourglass and, for the reference
 * output, in {@link TopologyTestDriver} (no broker).
 *
 * <pre>
 *   events (key user, value amount; event time = the record's timestamp via EventTimeExtractor)
 *     -> groupByKey -> 10 s tumbling windows, 5 s grace -> count,sum per user and window
 *     -> suppress until the window closes (one final result per user and window)
 *     -> re-keyed by the user's region ("r3-alice" -> "r3") -> repartition "by-region"
 *     -> join the KTable over "regions" (region -> display name; its store's changelog is
 *        compacted)
 *     -> "window-results"          (region -> user,windowStart,count,sum,name)
 *     -> groupByKey -> running totals per region (windows,count,sum; compacted changelog)
 *     -> "region-totals"           (region -> windows,count,sum)
 * </pre>
 *
 * Record caches are off (statestore.cache.max.bytes=0): every update is forwarded when it is
 * made, as TopologyTestDriver does, so the output does not depend on when commits happen.
 *
 * Usage:
 * <pre>
 *   run BOOTSTRAP APP_ID STATE_DIR [key=value ...]   the application, until SIGTERM
 *   driver INPUT.tsv OUTPUT.tsv                      TopologyTestDriver over the input
 * </pre>
 * TSV lines are {@code topic \t key \t value \t timestamp}, in the order records are piped or
 * were output. In run mode the application prints {@code STATE <new state>} on each change.
 */
public final class StreamsApp {
    public static final String EVENTS = "events";
    public static final String REGIONS = "regions";
    public static final String WINDOW_RESULTS = "window-results";
    public static final String REGION_TOTALS = "region-totals";
    static final Duration WINDOW = Duration.ofSeconds(10);
    static final Duration GRACE = Duration.ofSeconds(5);

    private StreamsApp() {}

    /**
     * Event time is the record's own timestamp (the producer's CreateTime, as the broker stored
     * it); a record without one (-1) takes the partition's stream time, as Kafka's
     * UsePartitionTimeOnInvalidTimestamp does, rather than failing the task.
     */
    public static final class EventTimeExtractor implements TimestampExtractor {
        @Override
        public long extract(ConsumerRecord<Object, Object> record, long partitionTime) {
            long ts = record.timestamp();
            return ts >= 0 ? ts : Math.max(partitionTime, 0L);
        }
    }

    /** "r3-alice" -> "r3": a user's region is the part of its name before the first '-'. */
    static String regionOf(String user) {
        int dash = user.indexOf('-');
        return dash > 0 ? user.substring(0, dash) : user;
    }

    static String addAmount(String agg, String amount) {
        String[] a = agg.split(",");
        return (Long.parseLong(a[0]) + 1) + "," + (Long.parseLong(a[1]) + Long.parseLong(amount.trim()));
    }

    /** windows,count,sum + one window result "user,windowStart,count,sum,name". */
    static String addWindow(String totals, String windowResult) {
        String[] t = totals.split(",");
        String[] w = windowResult.split(",");
        return (Long.parseLong(t[0]) + 1) + "," + (Long.parseLong(t[1]) + Long.parseLong(w[2])) + ","
                + (Long.parseLong(t[2]) + Long.parseLong(w[3]));
    }

    public static Topology topology() {
        StreamsBuilder builder = new StreamsBuilder();
        KTable<String, String> regions = builder.table(REGIONS, Consumed.with(Serdes.String(), Serdes.String()),
                Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("regions-store")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));

        KStream<String, String> events = builder.stream(EVENTS,
                Consumed.with(Serdes.String(), Serdes.String()).withTimestampExtractor(new EventTimeExtractor()));

        KStream<String, String> byRegion = events
                .groupByKey(Grouped.with("by-user", Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(WINDOW, GRACE))
                .aggregate(() -> "0,0", (user, amount, agg) -> addAmount(agg, amount),
                        Materialized.<String, String, org.apache.kafka.streams.state.WindowStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("user-windows")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()).withName("final-windows"))
                .toStream()
                .map((Windowed<String> w, String agg) -> KeyValue.pair(regionOf(w.key()),
                        w.key() + "," + w.window().start() + "," + agg))
                .repartition(Repartitioned.<String, String>with(Serdes.String(), Serdes.String()).withName("by-region"));

        KStream<String, String> joined = byRegion.join(regions, (window, name) -> window + "," + name,
                Joined.with(Serdes.String(), Serdes.String(), Serdes.String()));
        joined.to(WINDOW_RESULTS, Produced.with(Serdes.String(), Serdes.String()));
        joined.groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> "0,0,0", (region, window, totals) -> addWindow(totals, window),
                        Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("region-totals-store")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toStream()
                .to(REGION_TOTALS, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    static Properties baseConfig(String appId) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 3 && args[0].equals("driver")) {
            driver(Path.of(args[1]), Path.of(args[2]));
        } else if (args.length >= 4 && args[0].equals("run")) {
            Map<String, String> extra = new LinkedHashMap<>();
            for (int i = 4; i < args.length; i++) {
                int eq = args[i].indexOf('=');
                extra.put(args[i].substring(0, eq), args[i].substring(eq + 1));
            }
            System.exit(run(args[1], args[2], args[3], extra));
        } else {
            System.err.println("usage: run BOOTSTRAP APP_ID STATE_DIR [key=value ...] | driver INPUT.tsv OUTPUT.tsv");
            System.exit(2);
        }
    }

    static int run(String bootstrap, String appId, String stateDir, Map<String, String> extra) throws Exception {
        Properties p = baseConfig(appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // a member killed with kill -9 leaves the group after this, not Kafka's 45 s
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), 10000);
        p.putAll(extra);

        KafkaStreams streams = new KafkaStreams(topology(), p);
        CountDownLatch done = new CountDownLatch(1);
        int[] exit = {0};
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + now);
            System.out.flush();
            if (now == KafkaStreams.State.ERROR) {
                exit[0] = 1;
                done.countDown();
            }
        });
        // a broker restart or a fencing during a rebalance kills a stream thread; its tasks go
        // to a new one, as an application that must keep running would configure it
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("THREAD-EXCEPTION " + e);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
            done.countDown();
        }));
        streams.start();
        done.await();
        if (exit[0] != 0) {
            streams.close(Duration.ofSeconds(10));
        }
        return exit[0];
    }

    static void driver(Path input, Path output) throws IOException {
        Properties p = baseConfig("hourglass-streams-driver");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        // its own state directory: the default (/tmp/kafka-streams/<application.id>) is shared by
        // every driver run on the machine, and RocksDB's lock fails a concurrent one
        Path stateDir = Files.createTempDirectory("hourglass-streams-driver-");
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        List<String[]> out = new ArrayList<>();
        try (TopologyTestDriver driver = new TopologyTestDriver(topology(), p)) {
            TestInputTopic<String, String> events = driver.createInputTopic(EVENTS, new StringSerializer(), new StringSerializer());
            TestInputTopic<String, String> regions = driver.createInputTopic(REGIONS, new StringSerializer(), new StringSerializer());
            TestOutputTopic<String, String> windows = driver.createOutputTopic(WINDOW_RESULTS, new StringDeserializer(), new StringDeserializer());
            TestOutputTopic<String, String> totals = driver.createOutputTopic(REGION_TOTALS, new StringDeserializer(), new StringDeserializer());
            try (BufferedReader r = Files.newBufferedReader(input, StandardCharsets.UTF_8)) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.isEmpty()) continue;
                    String[] f = line.split("\t", -1);
                    TestInputTopic<String, String> topic = f[0].equals(EVENTS) ? events : f[0].equals(REGIONS) ? regions : null;
                    if (topic == null) throw new IllegalArgumentException("unknown input topic " + f[0]);
                    topic.pipeInput(f[1], f[2], Long.parseLong(f[3]));
                    // drain after each input: the two outputs' records interleave as produced
                    drain(WINDOW_RESULTS, windows, out);
                    drain(REGION_TOTALS, totals, out);
                }
            }
        }
        try (BufferedWriter w = Files.newBufferedWriter(output, StandardCharsets.UTF_8)) {
            for (String[] rec : out) {
                w.write(String.join("\t", rec));
                w.newLine();
            }
        }
        try (java.util.stream.Stream<Path> paths = Files.walk(stateDir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }

    private static void drain(String name, TestOutputTopic<String, String> topic, List<String[]> out) {
        for (TestRecord<String, String> r : topic.readRecordsToList()) {
            out.add(new String[] {name, r.key(), r.value(), Long.toString(r.timestamp())});
        }
    }
}
