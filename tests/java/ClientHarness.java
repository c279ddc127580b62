// Test harness over the stock Java client (kafka-clients 3.9.1): one command per call, results
// as JSON lines on stdout, so integration tests can check exactly what a Java user would see.
//
//   produce                --bootstrap B --topic T --count N [--partition P] [--acks all|1|0]
//                          [--compression none|gzip|snappy|lz4|zstd] [--timestamps t1,t2,..]
//                          [--idempotence true|false] [--key-prefix k] [--value-prefix v]
//                          -> per record, in send order: {"index","partition","offset","timestamp"}
//                             (what RecordMetadata says), or {"index","error","class","message"}
//   consume                --bootstrap B --topic T --partition P --from-offset O|earliest|latest
//                          --count N [--timeout-ms MS] [--isolation read_committed|read_uncommitted]
//                          -> per record: {"partition","offset","timestamp","timestampType","key",
//                             "value","headers"}
//   offsets-for-times      --bootstrap B --topic T --partition P --ts t1,t2,..
//                          -> per target: {"target","offset","timestamp","leaderEpoch"} (null when none)
//   list-offsets           --bootstrap B --topic T --spec earliest|latest|max-timestamp|ts:N [--partition P]
//                          -> per partition: {"partition","offset","timestamp","leaderEpoch"}
//   admin-create           --bootstrap B --topic T --partitions N [--replication-factor R] [--config k=v,..]
//   admin-describe-configs --bootstrap B (--topic T | --broker ID)
//   admin-describe-cluster --bootstrap B
//   admin-describe-topics  --bootstrap B --topic T
//   group-consume          --bootstrap B --group G --topic T --count N [--timeout-ms MS]
//                          -> per record as consume, then {"committed":{"<partition>":offset,..}}
//   group-member           --bootstrap B --group G (--topic T[,T2..] | --pattern REGEX)
//                          [--protocol consumer|classic] [--instance-id ID] [--max-poll-records N]
//                          -> a long-lived group member (group.protocol=consumer by default):
//                             polls, commits synchronously after every non-empty poll, and prints
//                             {"ready":true} once subscribed, {"assigned":["t-p",..]} on every
//                             assignment change (after the rebalance listener ran), per record
//                             {"r":"t-p-offset"}, {"committed":n} after each commit. Commands on
//                             stdin: "stop" closes the consumer (leaving the group) and exits 0,
//                             "halt" exits at once without closing (a crashed member).
//   round-trip             produce, then offsets-for-times, then consume, in one JVM (each
//                          command's options; their lines in that order)
//
// Transactions (a transactional.id per producer; consumers read with --isolation):
//   txn-produce            --bootstrap B --topic T --txn-id ID --txns commit:3,abort:2,open:1
//                          [--partitions 0,1,..] [--value-prefix v]
//                          -> one transaction per item, in order: its records (round-robin over
//                             --partitions, default 0; value <prefix><txn>-<i>) are sent and
//                             flushed, then committed or aborted, or for "open" left open and the
//                             JVM halted without closing the producer (a producer gone silent).
//                             Per record {"txn","index","partition","offset","value"}, then per
//                             transaction {"txn","outcome"}
//   consume-to-end         --bootstrap B --topic T [--partitions 0,1,..] [--isolation ..]
//                          -> from the beginning until position >= endOffsets (the LSO under
//                             read_committed) on every partition: records as consume, then
//                             {"positions":{"<p>":pos,..},"endOffsets":{"<p>":end,..}}
//   txn-fence              --bootstrap B --topic T --txn-id ID [--partition P]
//                          -> a first producer opens a transaction (3 records, flushed), a second
//                             with the same id initializes; then the first one's commit and a
//                             send are tried, and the second commits 2 records of its own:
//                             {"first_sent":[offsets]}, {"second":"initialized"},
//                             {"first_commit":error|"ok"}, {"first_send":error|"ok"},
//                             {"second_committed":[offsets]}
//   txn-copy               --bootstrap B --input T --output T2 --group G --txn-id ID
//                          [--max-poll-records N] [--sleep-ms MS]
//                          -> consume-transform-produce, read_committed: each poll's records go to
//                             the same partition of T2 (key "<p>:<offset>", value "out-"+value) in
//                             one transaction with the consumed offsets (sendOffsetsToTransaction
//                             with groupMetadata()); stops when the group's committed offsets equal
//                             T's end offsets. {"assigned":[..]}, {"revoked":[..]}, per transaction
//                             {"txn","records"}, on an aborted one {"aborted","error"}, then
//                             {"done":true,"txns","records","aborts"}
//
// Throughput (bench/run.py's txn step; not tests):
//   perf-produce           --bootstrap B --topic T --records N [--record-size S]
//                          [--txn-commit-ms MS --txn-id ID] -> {"records","seconds","rps","mbps","txns"}
//   perf-consume           --bootstrap B --topic T --records N [--isolation ..]
//                          -> {"records","seconds","rps","mbps"}
//
// Quotas and dynamic broker configs (KIP-546, kafka-configs.sh):
//   admin-quotas           --bootstrap B [--alter SPEC] [--validate-only true] [--describe FILTER] [--strict true]
//                          SPEC: entries separated by ';', each ENTITY:OPS, ENTITY as type=name,..
//                          (name <default> = the default entity), OPS as key=value,.. (-key removes).
//                          -> per altered entity {"entity":{..},"ok":true} or {"entity":{..},"error",..};
//                          then, with --describe (FILTER: type=name|type=<default>|type=*,.., or "" for
//                          all), per described entity {"entity":{type:name|"<default>"},"values":{k:v}}
//                          or one error line
//   admin-alter-broker-configs --bootstrap B --broker ID|"" [--set k=v,..] [--delete k,..] [--legacy true]
//                          -> {"ok":true} or an error line (IncrementalAlterConfigs; --legacy: AlterConfigs)
//   throttled-produce      --bootstrap B --topic T --seconds S [--warmup-seconds W] [--record-size N]
//                          -> bytes acknowledged in S seconds after W: {"bytes","seconds","rate",
//                             "throttleAvg","throttleMax"} (produce-throttle-time-*)
//   throttled-consume      --bootstrap B --topic T --seconds S [--warmup-seconds W]
//                          -> bytes received in S seconds after W: {"bytes","seconds","rate",
//                             "throttleAvg","throttleMax"} (fetch-throttle-time-*)
//
// Every command also takes --props k=v,k=v (extra client properties), --props-file FILE (a
// .properties file, for values with commas such as sasl.jaas.config) and --timeout-ms (default
// 20000). Any failure prints {"error":SimpleClassName,"class":FullName,"message":..} and exits 1.
// Keys and values are UTF-8 strings (null stays null). Plain Java 17, no dependency beyond the
// client jars.

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

public final class ClientHarness {
    private static final Map<String, String> OPTS = new HashMap<>();

    public static void main(String[] args) {
        int rc;
        OPTS.clear();  // a ToolRunner JVM runs one command after another
        try {
            if (args.length < 1) throw new IllegalArgumentException("missing command");
            String cmd = args[0];
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                if (!a.startsWith("--")) throw new IllegalArgumentException("unexpected argument " + a);
                String k = a.substring(2);
                int eq = k.indexOf('=');
                if (eq >= 0) {
                    OPTS.put(k.substring(0, eq), k.substring(eq + 1));
                } else {
                    if (i + 1 >= args.length) throw new IllegalArgumentException("missing value for " + a);
                    OPTS.put(k, args[++i]);
                }
            }
            switch (cmd) {
                case "produce": rc = produce(); break;
                case "consume": rc = consume(); break;
                case "offsets-for-times": rc = offsetsForTimes(); break;
                case "list-offsets": rc = listOffsets(); break;
                case "admin-create": rc = adminCreate(); break;
                case "admin-describe-configs": rc = adminDescribeConfigs(); break;
                case "admin-describe-cluster": rc = adminDescribeCluster(); break;
                case "admin-describe-topics": rc = adminDescribeTopics(); break;
                case "group-consume": rc = groupConsume(); break;
                case "round-trip":
                    rc = produce();
                    if (rc == 0) rc = offsetsForTimes();
                    if (rc == 0) rc = consume();
                    break;
                case "txn-produce": rc = txnProduce(); break;
                case "consume-to-end": rc = consumeToEnd(); break;
                case "txn-fence": rc = txnFence(); break;
                case "txn-copy": rc = txnCopy(); break;
                case "perf-produce": rc = perfProduce(); break;
                case "admin-quotas": rc = adminQuotas(); break;
                case "admin-alter-broker-configs": rc = adminAlterBrokerConfigs(); break;
                case "throttled-produce": rc = throttledProduce(); break;
                case "throttled-consume": rc = throttledConsume(); break;
                case "perf-consume": rc = perfConsume(); break;
                case "group-member": rc = groupMember(); break;
                default: throw new IllegalArgumentException("unknown command " + cmd);
            }
        } catch (Throwable t) {
            emit(error(t));
            rc = 1;
        }
        System.out.flush();
        // Client threads are closed already; exit explicitly so nothing left over can hang us
        // (in a ToolRunner JVM: the run ends here, and the JVM goes on to the next one).
        ToolRunner.exit(rc);
    }

    // ---------------------------------------------------------------- commands

    private static int produce() throws Exception {
        String topic = req("topic");
        List<Long> timestamps = OPTS.containsKey("timestamps") ? longs(OPTS.get("timestamps")) : null;
        int count = OPTS.containsKey("count") ? Integer.parseInt(OPTS.get("count"))
                : (timestamps != null ? timestamps.size() : -1);
        if (count < 0) throw new IllegalArgumentException("missing --count");
        if (timestamps != null && timestamps.size() != count)
            throw new IllegalArgumentException("--timestamps has " + timestamps.size() + " values, --count is " + count);
        Integer partition = OPTS.containsKey("partition") ? Integer.valueOf(OPTS.get("partition")) : null;
        String keyPrefix = OPTS.get("key-prefix");
        String valuePrefix = opt("value-prefix", "value-");

        Properties p = producerProps();
        p.put(ProducerConfig.ACKS_CONFIG, opt("acks", "all"));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, opt("compression", "none"));
        if (OPTS.containsKey("idempotence")) p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, OPTS.get("idempotence"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, opt("linger-ms", "5"));
        int timeout = timeoutMs();
        extraProps(p);

        boolean failed = false;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                byte[] key = keyPrefix == null ? null : utf8(keyPrefix + i);
                byte[] value = utf8(valuePrefix + i);
                Long ts = timestamps == null ? null : timestamps.get(i);
                futures.add(producer.send(new ProducerRecord<>(topic, partition, ts, key, value)));
            }
            producer.flush();
            for (int i = 0; i < count; i++) {
                Json line = new Json().put("index", i);
                try {
                    RecordMetadata md = futures.get(i).get(timeout, TimeUnit.MILLISECONDS);
                    line.put("partition", md.partition()).put("offset", md.offset()).put("timestamp", md.timestamp());
                } catch (ExecutionException e) {
                    failed = true;
                    line.putAll(error(e));
                }
                emit(line);
            }
        }
        return failed ? 1 : 0;
    }

    private static int consume() throws Exception {
        String topic = req("topic");
        TopicPartition tp = new TopicPartition(topic, Integer.parseInt(req("partition")));
        String from = req("from-offset");
        int count = Integer.parseInt(req("count"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(null))) {
            consumer.assign(Collections.singletonList(tp));
            if (from.equals("earliest")) consumer.seekToBeginning(Collections.singletonList(tp));
            else if (from.equals("latest")) consumer.seekToEnd(Collections.singletonList(tp));
            else consumer.seek(tp, Long.parseLong(from));
            int got = pollRecords(consumer, count);
            if (got < count) throw new java.util.concurrent.TimeoutException(
                    "consumed " + got + " of " + count + " records within " + timeoutMs() + " ms");
        }
        return 0;
    }

    private static int groupConsume() throws Exception {
        String topic = req("topic");
        int count = Integer.parseInt(req("count"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(req("group")))) {
            consumer.subscribe(Collections.singletonList(topic));
            int got = pollRecords(consumer, count);
            if (got < count) throw new java.util.concurrent.TimeoutException(
                    "consumed " + got + " of " + count + " records within " + timeoutMs() + " ms");
            consumer.commitSync(Duration.ofMillis(timeoutMs()));
            Set<TopicPartition> assigned = consumer.assignment();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofMillis(timeoutMs()));
            Json c = new Json();
            for (TopicPartition tp : sorted(committed.keySet())) {
                OffsetAndMetadata om = committed.get(tp);
                c.put(String.valueOf(tp.partition()), om == null ? null : om.offset());
            }
            emit(new Json().put("committed", c));
        }
        return 0;
    }

    private static int groupMember() throws Exception {
        Properties p = consumerProps(req("group"));
        p.put("group.protocol", opt("protocol", "consumer"));
        if (OPTS.containsKey("instance-id")) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, OPTS.get("instance-id"));
        if (OPTS.containsKey("max-poll-records")) p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, OPTS.get("max-poll-records"));
        if (p.getProperty("group.protocol").equals("classic")) {
            p.putIfAbsent(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            p.putIfAbsent(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "300");
        }
        final java.util.concurrent.atomic.AtomicReference<String> command = new java.util.concurrent.atomic.AtomicReference<>();
        Thread stdin = new Thread(() -> {
            try (java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    line = line.trim();
                    if (line.equals("halt")) { System.out.flush(); Runtime.getRuntime().halt(0); }
                    if (line.equals("stop")) { command.set("stop"); return; }
                }
                command.set("stop");
            } catch (java.io.IOException e) {
                command.set("stop");
            }
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            final Set<TopicPartition> owned = new java.util.TreeSet<>((a, b) -> a.toString().compareTo(b.toString()));
            org.apache.kafka.clients.consumer.ConsumerRebalanceListener listener = new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
                public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {
                    owned.removeAll(parts);
                    emit(new Json().put("assigned", names(owned)));
                }
                public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {
                    owned.addAll(parts);
                    emit(new Json().put("assigned", names(owned)));
                }
                public void onPartitionsLost(java.util.Collection<TopicPartition> parts) {
                    owned.removeAll(parts);
                    emit(new Json().put("assigned", names(owned)).put("lost", names(parts)));
                }
            };
            if (OPTS.containsKey("pattern")) {
                consumer.subscribe(java.util.regex.Pattern.compile(OPTS.get("pattern")), listener);
            } else {
                consumer.subscribe(java.util.Arrays.asList(req("topic").split(",")), listener);
            }
            emit(new Json().put("ready", true));
            while (command.get() == null) {
                org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(100));
                if (recs.isEmpty()) continue;
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    emit(new Json().put("r", r.topic() + "-" + r.partition() + "-" + r.offset()));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                // The 3.9 client fails commitSync on STALE_MEMBER_EPOCH (its epoch moved on while the
                // commit was in flight, as with Kafka's brokers): an application retries it with the
                // offsets it consumed, as later clients do themselves.
                for (int attempt = 1; ; attempt++) {
                    try {
                        consumer.commitSync(next, Duration.ofMillis(timeoutMs()));
                        break;
                    } catch (org.apache.kafka.clients.consumer.CommitFailedException
                             | org.apache.kafka.common.errors.StaleMemberEpochException e) {
                        if (attempt >= 20) throw e;
                        emit(new Json().put("commit_retry", String.valueOf(e.getMessage())));
                        Thread.sleep(50);
                    }
                }
                emit(new Json().put("committed", recs.count()));
            }
            emit(new Json().put("closing", true));
        }
        emit(new Json().put("closed", true));
        return 0;
    }

    private static List<String> names(java.util.Collection<TopicPartition> parts) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : parts) out.add(tp.topic() + "-" + tp.partition());
        Collections.sort(out);
        return out;
    }

    private static int offsetsForTimes() throws Exception {
        TopicPartition tp = new TopicPartition(req("topic"), Integer.parseInt(req("partition")));
        List<Long> targets = longs(req("ts"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(null))) {
            for (long target : targets) {
                // One lookup per target: a map can hold only one target per partition.
                Map<TopicPartition, OffsetAndTimestamp> res =
                        consumer.offsetsForTimes(Collections.singletonMap(tp, target), Duration.ofMillis(timeoutMs()));
                OffsetAndTimestamp ot = res.get(tp);
                Json line = new Json().put("target", target);
                if (ot == null) {
                    line.put("offset", null).put("timestamp", null).put("leaderEpoch", null);
                } else {
                    line.put("offset", ot.offset()).put("timestamp", ot.timestamp())
                        .put("leaderEpoch", ot.leaderEpoch().orElse(null));
                }
                emit(line);
            }
        }
        return 0;
    }

    private static int listOffsets() throws Exception {
        String topic = req("topic");
        String spec = req("spec");
        OffsetSpec os;
        if (spec.equals("earliest")) os = OffsetSpec.earliest();
        else if (spec.equals("latest")) os = OffsetSpec.latest();
        else if (spec.equals("max-timestamp")) os = OffsetSpec.maxTimestamp();
        else if (spec.startsWith("ts:")) os = OffsetSpec.forTimestamp(Long.parseLong(spec.substring(3)));
        else throw new IllegalArgumentException("bad --spec " + spec);
        try (Admin admin = Admin.create(adminProps())) {
            List<Integer> partitions = new ArrayList<>();
            if (OPTS.containsKey("partition")) {
                partitions.add(Integer.parseInt(OPTS.get("partition")));
            } else {
                TopicDescription td = admin.describeTopics(Collections.singletonList(topic))
                        .allTopicNames().get(timeoutMs(), TimeUnit.MILLISECONDS).get(topic);
                for (TopicPartitionInfo pi : td.partitions()) partitions.add(pi.partition());
            }
            Map<TopicPartition, OffsetSpec> q = new LinkedHashMap<>();
            for (int part : partitions) q.put(new TopicPartition(topic, part), os);
            ListOffsetsOptions lo = new ListOffsetsOptions(
                    opt("isolation", "read_uncommitted").equals("read_committed")
                            ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED);
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> res =
                    admin.listOffsets(q, lo).all().get(timeoutMs(), TimeUnit.MILLISECONDS);
            for (TopicPartition tp : sorted(res.keySet())) {
                ListOffsetsResult.ListOffsetsResultInfo info = res.get(tp);
                emit(new Json().put("partition", tp.partition()).put("offset", info.offset())
                        .put("timestamp", info.timestamp()).put("leaderEpoch", info.leaderEpoch().orElse(null)));
            }
        }
        return 0;
    }

    private static int adminCreate() throws Exception {
        String topic = req("topic");
        Optional<Integer> partitions = OPTS.containsKey("partitions")
                ? Optional.of(Integer.parseInt(OPTS.get("partitions"))) : Optional.empty();
        Optional<Short> rf = OPTS.containsKey("replication-factor")
                ? Optional.of(Short.parseShort(OPTS.get("replication-factor"))) : Optional.empty();
        NewTopic nt = new NewTopic(topic, partitions, rf);
        if (OPTS.containsKey("config")) nt.configs(kv(OPTS.get("config")));
        try (Admin admin = Admin.create(adminProps())) {
            CreateTopicsResult r = admin.createTopics(Collections.singletonList(nt));
            r.all().get(timeoutMs(), TimeUnit.MILLISECONDS);
            Json line = new Json().put("topic", topic).put("created", true);
            // These come from CreateTopics v5+ responses; older answers leave them unknown.
            try { line.put("topicId", String.valueOf(r.topicId(topic).get())); } catch (ExecutionException e) { line.put("topicId", null); }
            try { line.put("partitions", r.numPartitions(topic).get()); } catch (ExecutionException e) { line.put("partitions", null); }
            try { line.put("replicationFactor", r.replicationFactor(topic).get()); } catch (ExecutionException e) { line.put("replicationFactor", null); }
            emit(line);
        }
        return 0;
    }

    private static int adminDescribeConfigs() throws Exception {
        ConfigResource res = OPTS.containsKey("broker")
                ? new ConfigResource(ConfigResource.Type.BROKER, OPTS.get("broker"))
                : new ConfigResource(ConfigResource.Type.TOPIC, req("topic"));
        try (Admin admin = Admin.create(adminProps())) {
            Map<ConfigResource, Config> all = admin.describeConfigs(Collections.singletonList(res),
                    new DescribeConfigsOptions().includeSynonyms(true))
                    .all().get(timeoutMs(), TimeUnit.MILLISECONDS);
            List<ConfigEntry> entries = new ArrayList<>(all.get(res).entries());
            entries.sort((a, b) -> a.name().compareTo(b.name()));
            for (ConfigEntry e : entries) {
                List<Object> syn = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym s : e.synonyms())
                    syn.add(new Json().put("name", s.name()).put("value", s.value()).put("source", s.source().name()));
                emit(new Json().put("name", e.name()).put("value", e.value()).put("source", e.source().name())
                        .put("isDefault", e.isDefault()).put("isReadOnly", e.isReadOnly())
                        .put("isSensitive", e.isSensitive()).put("synonyms", syn));
            }
        }
        return 0;
    }

    private static int adminDescribeCluster() throws Exception {
        try (Admin admin = Admin.create(adminProps())) {
            DescribeClusterResult r = admin.describeCluster();
            long t = timeoutMs();
            List<Object> nodes = new ArrayList<>();
            for (Node n : r.nodes().get(t, TimeUnit.MILLISECONDS)) nodes.add(node(n));
            emit(new Json().put("clusterId", r.clusterId().get(t, TimeUnit.MILLISECONDS))
                    .put("controller", node(r.controller().get(t, TimeUnit.MILLISECONDS)))
                    .put("nodes", nodes));
        }
        return 0;
    }

    private static int adminDescribeTopics() throws Exception {
        String topic = req("topic");
        try (Admin admin = Admin.create(adminProps())) {
            TopicDescription td = admin.describeTopics(Collections.singletonList(topic))
                    .allTopicNames().get(timeoutMs(), TimeUnit.MILLISECONDS).get(topic);
            List<Object> parts = new ArrayList<>();
            for (TopicPartitionInfo pi : td.partitions()) {
                List<Object> replicas = new ArrayList<>();
                for (Node n : pi.replicas()) replicas.add(n.id());
                List<Object> isr = new ArrayList<>();
                for (Node n : pi.isr()) isr.add(n.id());
                parts.add(new Json().put("partition", pi.partition())
                        .put("leader", pi.leader() == null ? null : pi.leader().id())
                        .put("replicas", replicas).put("isr", isr));
            }
            emit(new Json().put("name", td.name()).put("topicId", String.valueOf(td.topicId()))
                    .put("internal", td.isInternal()).put("partitions", parts));
        }
        return 0;
    }

    // ---------------------------------------------------------------- transactions

    private static Properties txnProducerProps(String txnId) {
        Properties p = producerProps();
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, opt("linger-ms", "0"));
        extraProps(p);
        return p;
    }

    private static List<Integer> ints(String csv) {
        List<Integer> out = new ArrayList<>();
        for (String s : csv.split(",")) if (!s.isBlank()) out.add(Integer.parseInt(s.trim()));
        return out;
    }

    private static int txnProduce() throws Exception {
        String topic = req("topic");
        List<Integer> partitions = ints(opt("partitions", "0"));
        String prefix = opt("value-prefix", "v");
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(txnProducerProps(req("txn-id")));
        producer.initTransactions();
        int t = 0;
        for (String item : req("txns").split(",")) {
            String[] kv = item.split(":");
            String outcome = kv[0].trim();
            int n = Integer.parseInt(kv[1].trim());
            producer.beginTransaction();
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            List<String> values = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                String v = prefix + t + "-" + i;
                values.add(v);
                futures.add(producer.send(new ProducerRecord<>(topic, partitions.get(i % partitions.size()), null, utf8(v))));
            }
            producer.flush();
            for (int i = 0; i < n; i++) {
                RecordMetadata md = futures.get(i).get(timeoutMs(), TimeUnit.MILLISECONDS);
                emit(new Json().put("txn", t).put("index", i).put("partition", md.partition())
                        .put("offset", md.offset()).put("value", values.get(i)));
            }
            switch (outcome) {
                case "commit": producer.commitTransaction(); break;
                case "abort": producer.abortTransaction(); break;
                case "open":
                    // Gone silent: no commit, no abort, no close (close would abort it). In a
                    // ToolRunner JVM the producer is left behind unclosed, as silent as a halt.
                    emit(new Json().put("txn", t).put("outcome", outcome));
                    System.out.flush();
                    ToolRunner.exit(0);
                    break;
                default: throw new IllegalArgumentException("bad transaction outcome " + outcome);
            }
            emit(new Json().put("txn", t).put("outcome", outcome));
            t++;
        }
        producer.close(Duration.ofMillis(timeoutMs()));
        return 0;
    }

    private static List<TopicPartition> topicPartitions(KafkaConsumer<?, ?> consumer, String topic, String csv) {
        List<TopicPartition> tps = new ArrayList<>();
        if (csv != null) {
            for (int p : ints(csv)) tps.add(new TopicPartition(topic, p));
        } else {
            for (PartitionInfo pi : consumer.partitionsFor(topic, Duration.ofMillis(timeoutMs())))
                tps.add(new TopicPartition(topic, pi.partition()));
            tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
        }
        return tps;
    }

    private static int consumeToEnd() throws Exception {
        String topic = req("topic");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(null))) {
            List<TopicPartition> tps = topicPartitions(consumer, topic, OPTS.get("partitions"));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            // endOffsets answers the LSO for a read_committed consumer (ListOffsets READ_COMMITTED)
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofMillis(timeoutMs()));
            long deadline = System.currentTimeMillis() + timeoutMs();
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) if (consumer.position(tp) < ends.get(tp)) done = false;
                if (done) break;
                if (System.currentTimeMillis() > deadline) throw new java.util.concurrent.TimeoutException(
                        "positions did not reach the end offsets " + ends + " within " + timeoutMs() + " ms");
                emitRecords(consumer.poll(Duration.ofMillis(200)));
            }
            Json pos = new Json();
            Json end = new Json();
            for (TopicPartition tp : tps) {
                pos.put(String.valueOf(tp.partition()), consumer.position(tp));
                end.put(String.valueOf(tp.partition()), ends.get(tp));
            }
            emit(new Json().put("positions", pos).put("endOffsets", end));
        }
        return 0;
    }

    private static Json attempt(ThrowingRunnable r) {
        try {
            r.run();
            return null;
        } catch (Throwable t) {
            return error(t);
        }
    }

    interface ThrowingRunnable { void run() throws Exception; }

    private static int txnFence() throws Exception {
        String topic = req("topic");
        int partition = Integer.parseInt(opt("partition", "0"));
        String txnId = req("txn-id");
        KafkaProducer<byte[], byte[]> first = new KafkaProducer<>(txnProducerProps(txnId));
        first.initTransactions();
        first.beginTransaction();
        List<Future<RecordMetadata>> fs = new ArrayList<>();
        for (int i = 0; i < 3; i++)
            fs.add(first.send(new ProducerRecord<>(topic, partition, null, utf8("fence-a-" + i))));
        first.flush();
        List<Object> offs = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) offs.add(f.get(timeoutMs(), TimeUnit.MILLISECONDS).offset());
        emit(new Json().put("first_sent", offs));

        KafkaProducer<byte[], byte[]> second = new KafkaProducer<>(txnProducerProps(txnId));
        second.initTransactions();
        emit(new Json().put("second", "initialized"));

        Json commitErr = attempt(first::commitTransaction);
        emit(new Json().put("first_commit", commitErr == null ? "ok" : commitErr));
        Json sendErr = attempt(() -> first.send(new ProducerRecord<>(topic, partition, null, utf8("fence-a-3")))
                .get(timeoutMs(), TimeUnit.MILLISECONDS));
        emit(new Json().put("first_send", sendErr == null ? "ok" : sendErr));
        attempt(() -> first.close(Duration.ofMillis(2000)));

        second.beginTransaction();
        fs.clear();
        for (int i = 0; i < 2; i++)
            fs.add(second.send(new ProducerRecord<>(topic, partition, null, utf8("fence-b-" + i))));
        second.commitTransaction();
        offs = new ArrayList<>();
        for (Future<RecordMetadata> f : fs) offs.add(f.get(timeoutMs(), TimeUnit.MILLISECONDS).offset());
        emit(new Json().put("second_committed", offs));
        second.close(Duration.ofMillis(timeoutMs()));
        return 0;
    }

    private static int txnCopy() throws Exception {
        String input = req("input");
        String output = req("output");
        Properties cp = consumerProps(req("group"));
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opt("max-poll-records", "5"));
        int sleepMs = Integer.parseInt(opt("sleep-ms", "0"));
        long deadline = System.currentTimeMillis() + timeoutMs();
        int txns = 0, aborts = 0, total = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp);
             KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(txnProducerProps(req("txn-id")))) {
            producer.initTransactions();
            List<TopicPartition> all = topicPartitions(consumer, input, null);
            consumer.subscribe(Collections.singletonList(input), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
                @Override public void onPartitionsRevoked(java.util.Collection<TopicPartition> parts) {
                    emit(new Json().put("revoked", partitionList(parts)));
                }
                @Override public void onPartitionsAssigned(java.util.Collection<TopicPartition> parts) {
                    emit(new Json().put("assigned", partitionList(parts)));
                }
            });
            long nextCheck = 0;
            while (true) {
                if (System.currentTimeMillis() > deadline) throw new java.util.concurrent.TimeoutException(
                        "input not fully copied within " + timeoutMs() + " ms");
                org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    if (System.currentTimeMillis() >= nextCheck) {
                        nextCheck = System.currentTimeMillis() + 300;
                        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(new java.util.HashSet<>(all));
                        Map<TopicPartition, Long> ends = consumer.endOffsets(all);
                        boolean done = true;
                        for (TopicPartition tp : all) {
                            OffsetAndMetadata om = committed.get(tp);
                            if (om == null || om.offset() < ends.get(tp)) done = false;
                        }
                        if (done) break;
                    }
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    producer.send(new ProducerRecord<>(output, r.partition(), utf8(r.partition() + ":" + r.offset()),
                            utf8("out-" + str(r.value()))));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                try {
                    producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                    producer.commitTransaction();
                    txns++;
                    total += recs.count();
                    emit(new Json().put("txn", txns).put("records", recs.count()));
                } catch (org.apache.kafka.common.errors.ProducerFencedException
                         | org.apache.kafka.common.errors.OutOfOrderSequenceException
                         | org.apache.kafka.common.errors.AuthorizationException e) {
                    throw e;    // fatal: this producer cannot go on
                } catch (org.apache.kafka.common.KafkaException e) {
                    // e.g. CommitFailedException after a rebalance: abort and resume from the
                    // group's committed offsets, as Kafka's EOS examples do
                    producer.abortTransaction();
                    aborts++;
                    emit(new Json().put("aborted", aborts).putAll(error(e)));
                    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(consumer.assignment());
                    for (TopicPartition tp : consumer.assignment()) {
                        OffsetAndMetadata om = committed.get(tp);
                        if (om == null) consumer.seekToBeginning(Collections.singletonList(tp));
                        else consumer.seek(tp, om.offset());
                    }
                }
                if (sleepMs > 0) Thread.sleep(sleepMs);
            }
        }
        emit(new Json().put("done", true).put("txns", txns).put("records", total).put("aborts", aborts));
        return 0;
    }

    private static List<Object> partitionList(java.util.Collection<TopicPartition> parts) {
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : sorted(new java.util.HashSet<>(parts))) out.add(tp.partition());
        return out;
    }

    private static int perfProduce() throws Exception {
        String topic = req("topic");
        long n = Long.parseLong(req("records"));
        int size = Integer.parseInt(opt("record-size", "100"));
        long commitMs = Long.parseLong(opt("txn-commit-ms", "0"));
        Properties p = commitMs > 0 ? txnProducerProps(req("txn-id")) : txnProducerProps("unused");
        if (commitMs <= 0) {
            p.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        }
        p.put(ProducerConfig.LINGER_MS_CONFIG, opt("linger-ms", "5"));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, opt("batch-size", "65536"));
        extraProps(p);
        byte[] value = new byte[size];
        new java.util.Random(1).nextBytes(value);
        long txns = 0;
        long t0, t1;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            // warm-up: metadata, connections and the coordinator, not timed
            if (commitMs > 0) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            producer.send(new ProducerRecord<>(topic, null, value)).get(timeoutMs(), TimeUnit.MILLISECONDS);
            if (commitMs > 0) producer.commitTransaction();
            t0 = System.nanoTime();
            long nextCommit = t0 + commitMs * 1_000_000L;
            if (commitMs > 0) producer.beginTransaction();
            for (long i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, null, value));
                if (commitMs > 0 && System.nanoTime() >= nextCommit) {
                    producer.commitTransaction();
                    txns++;
                    producer.beginTransaction();
                    nextCommit = System.nanoTime() + commitMs * 1_000_000L;
                }
            }
            if (commitMs > 0) {
                producer.commitTransaction();
                txns++;
            } else {
                producer.flush();
            }
            t1 = System.nanoTime();
        }
        double s = (t1 - t0) / 1e9;
        emit(new Json().put("records", n).put("seconds", s).put("rps", n / s).put("mbps", n * (double) size / 1e6 / s)
                .put("txns", txns));
        return 0;
    }

    private static Map<String, String> quotaEntity(String spec) {
        Map<String, String> ent = new TreeMap<>();
        for (String pair : spec.split(",")) {
            if (pair.isBlank()) continue;
            int eq = pair.indexOf('=');
            String name = pair.substring(eq + 1).trim();
            ent.put(pair.substring(0, eq).trim(), name.equals("<default>") ? null : name);
        }
        return ent;
    }

    private static Json entityJson(Map<String, String> entries) {
        Json j = new Json();
        for (Map.Entry<String, String> e : new TreeMap<>(entries).entrySet())
            j.put(e.getKey(), e.getValue() == null ? "<default>" : e.getValue());
        return j;
    }

    private static int adminQuotas() throws Exception {
        int rc = 0;
        try (Admin admin = Admin.create(adminProps())) {
            if (OPTS.containsKey("alter")) {
                List<org.apache.kafka.common.quota.ClientQuotaAlteration> alts = new ArrayList<>();
                for (String entry : req("alter").split(";")) {
                    if (entry.isBlank()) continue;
                    int colon = entry.indexOf(':');
                    Map<String, String> ent = quotaEntity(entry.substring(0, colon));
                    List<org.apache.kafka.common.quota.ClientQuotaAlteration.Op> ops = new ArrayList<>();
                    for (String op : entry.substring(colon + 1).split(",")) {
                        if (op.isBlank()) continue;
                        op = op.trim();
                        if (op.startsWith("-")) {
                            ops.add(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op(op.substring(1), null));
                        } else {
                            int eq = op.indexOf('=');
                            ops.add(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op(
                                    op.substring(0, eq), Double.parseDouble(op.substring(eq + 1))));
                        }
                    }
                    alts.add(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                            new org.apache.kafka.common.quota.ClientQuotaEntity(ent), ops));
                }
                org.apache.kafka.clients.admin.AlterClientQuotasOptions o =
                        new org.apache.kafka.clients.admin.AlterClientQuotasOptions()
                                .validateOnly(Boolean.parseBoolean(opt("validate-only", "false")));
                Map<org.apache.kafka.common.quota.ClientQuotaEntity, org.apache.kafka.common.KafkaFuture<Void>> res =
                        admin.alterClientQuotas(alts, o).values();
                for (org.apache.kafka.common.quota.ClientQuotaAlteration a : alts) {
                    Json j = new Json().put("entity", entityJson(a.entity().entries()));
                    try {
                        res.get(a.entity()).get(timeoutMs(), TimeUnit.MILLISECONDS);
                        j.put("ok", true);
                    } catch (ExecutionException e) {
                        Json err = error(e.getCause());
                        j.put("error", err.get("error")).put("message", err.get("message"));
                    }
                    emit(j);
                }
            }
            if (OPTS.containsKey("describe")) {
                List<org.apache.kafka.common.quota.ClientQuotaFilterComponent> comps = new ArrayList<>();
                for (String pair : OPTS.get("describe").split(",")) {
                    if (pair.isBlank()) continue;
                    int eq = pair.indexOf('=');
                    String type = pair.substring(0, eq).trim(), name = pair.substring(eq + 1).trim();
                    if (name.equals("<default>"))
                        comps.add(org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofDefaultEntity(type));
                    else if (name.equals("*"))
                        comps.add(org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntityType(type));
                    else
                        comps.add(org.apache.kafka.common.quota.ClientQuotaFilterComponent.ofEntity(type, name));
                }
                org.apache.kafka.common.quota.ClientQuotaFilter f = Boolean.parseBoolean(opt("strict", "false"))
                        ? org.apache.kafka.common.quota.ClientQuotaFilter.containsOnly(comps)
                        : org.apache.kafka.common.quota.ClientQuotaFilter.contains(comps);
                try {
                    Map<org.apache.kafka.common.quota.ClientQuotaEntity, Map<String, Double>> got =
                            admin.describeClientQuotas(f).entities().get(timeoutMs(), TimeUnit.MILLISECONDS);
                    List<Json> out = new ArrayList<>();
                    for (Map.Entry<org.apache.kafka.common.quota.ClientQuotaEntity, Map<String, Double>> e : got.entrySet()) {
                        Json v = new Json();
                        for (Map.Entry<String, Double> kvp : new TreeMap<>(e.getValue()).entrySet()) v.put(kvp.getKey(), kvp.getValue());
                        out.add(new Json().put("entity", entityJson(e.getKey().entries())).put("values", v));
                    }
                    out.sort((a, b) -> a.toString().compareTo(b.toString()));
                    for (Json j : out) emit(j);
                } catch (ExecutionException e) {
                    emit(error(e.getCause()));
                }
            }
        }
        return rc;
    }

    @SuppressWarnings("deprecation")
    private static int adminAlterBrokerConfigs() throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.BROKER, opt("broker", ""));
        Map<String, String> set = kv(opt("set", ""));
        List<String> del = new ArrayList<>();
        for (String k : opt("delete", "").split(",")) if (!k.isBlank()) del.add(k.trim());
        try (Admin admin = Admin.create(adminProps())) {
            try {
                if (Boolean.parseBoolean(opt("legacy", "false"))) {
                    List<ConfigEntry> entries = new ArrayList<>();
                    for (Map.Entry<String, String> e : set.entrySet()) entries.add(new ConfigEntry(e.getKey(), e.getValue()));
                    admin.alterConfigs(Collections.singletonMap(res, new Config(entries)))
                            .all().get(timeoutMs(), TimeUnit.MILLISECONDS);
                } else {
                    List<org.apache.kafka.clients.admin.AlterConfigOp> ops = new ArrayList<>();
                    for (Map.Entry<String, String> e : set.entrySet())
                        ops.add(new org.apache.kafka.clients.admin.AlterConfigOp(new ConfigEntry(e.getKey(), e.getValue()),
                                org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET));
                    for (String k : del)
                        ops.add(new org.apache.kafka.clients.admin.AlterConfigOp(new ConfigEntry(k, null),
                                org.apache.kafka.clients.admin.AlterConfigOp.OpType.DELETE));
                    admin.incrementalAlterConfigs(Collections.singletonMap(res, ops))
                            .all().get(timeoutMs(), TimeUnit.MILLISECONDS);
                }
                emit(new Json().put("ok", true));
            } catch (ExecutionException e) {
                emit(error(e.getCause()));
            }
        }
        return 0;
    }

    private static double metricValue(Map<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> ms,
                                      String group, String name) {
        for (Map.Entry<org.apache.kafka.common.MetricName, ? extends org.apache.kafka.common.Metric> e : ms.entrySet()) {
            if (e.getKey().group().equals(group) && e.getKey().name().equals(name) && e.getKey().tags().size() == 1) {
                Object v = e.getValue().metricValue();
                if (v instanceof Number) return ((Number) v).doubleValue();
            }
        }
        return Double.NaN;
    }

    private static int throttledProduce() throws Exception {
        String topic = req("topic");
        double seconds = Double.parseDouble(req("seconds"));
        double warmup = Double.parseDouble(opt("warmup-seconds", "0"));
        byte[] value = new byte[Integer.parseInt(opt("record-size", "1000"))];
        Properties p = producerProps();
        p.put(ProducerConfig.LINGER_MS_CONFIG, opt("linger-ms", "5"));
        extraProps(p);
        long acked = 0, ackedAtStart = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(topic, null, value)).get(timeoutMs(), TimeUnit.MILLISECONDS);
            long t0 = System.nanoTime();
            long start = t0 + (long) (warmup * 1e9), end = start + (long) (seconds * 1e9);
            boolean started = warmup <= 0;
            List<Future<RecordMetadata>> pending = new ArrayList<>();
            while (System.nanoTime() < end) {
                pending.add(producer.send(new ProducerRecord<>(topic, null, value)));
                if (pending.size() >= 50) {  // bound what is queued ahead of the quota
                    pending.remove(0).get(timeoutMs(), TimeUnit.MILLISECONDS);
                    acked += value.length;
                }
                if (!started && System.nanoTime() >= start) {
                    started = true;
                    ackedAtStart = acked;
                }
            }
            long measured = acked - ackedAtStart;
            for (Future<RecordMetadata> f : pending) f.get(timeoutMs(), TimeUnit.MILLISECONDS);
            emit(new Json().put("bytes", measured).put("seconds", seconds).put("rate", measured / seconds)
                    .put("throttleAvg", metricValue(producer.metrics(), "producer-metrics", "produce-throttle-time-avg"))
                    .put("throttleMax", metricValue(producer.metrics(), "producer-metrics", "produce-throttle-time-max")));
        }
        return 0;
    }

    private static int throttledConsume() throws Exception {
        String topic = req("topic");
        double seconds = Double.parseDouble(req("seconds"));
        double warmup = Double.parseDouble(opt("warmup-seconds", "0"));
        long bytes = 0, bytesAtStart = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(null))) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic)) parts.add(new TopicPartition(topic, pi.partition()));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long t0 = System.nanoTime();
            long start = t0 + (long) (warmup * 1e9), end = start + (long) (seconds * 1e9);
            boolean started = warmup <= 0;
            while (System.nanoTime() < end) {
                if (!started && System.nanoTime() >= start) {
                    started = true;
                    bytesAtStart = bytes;
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100)))
                    bytes += r.serializedValueSize() + Math.max(r.serializedKeySize(), 0);
            }
            long measured = bytes - bytesAtStart;
            emit(new Json().put("bytes", measured).put("seconds", seconds).put("rate", measured / seconds)
                    .put("throttleAvg", metricValue(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-avg"))
                    .put("throttleMax", metricValue(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-throttle-time-max")));
        }
        return 0;
    }

    private static int perfConsume() throws Exception {
        String topic = req("topic");
        long n = Long.parseLong(req("records"));
        Properties p = consumerProps(null);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opt("max-poll-records", "2000"));
        extraProps(p);
        long got = 0, bytes = 0;
        long t0, t1;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = topicPartitions(consumer, topic, OPTS.get("partitions"));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + timeoutMs();
            t0 = System.nanoTime();
            while (got < n) {
                if (System.currentTimeMillis() > deadline) throw new java.util.concurrent.TimeoutException(
                        "consumed " + got + " of " + n + " records within " + timeoutMs() + " ms");
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    got++;
                    bytes += r.serializedValueSize();
                }
            }
            t1 = System.nanoTime();
        }
        double s = (t1 - t0) / 1e9;
        emit(new Json().put("records", got).put("seconds", s).put("rps", got / s).put("mbps", bytes / 1e6 / s));
        return 0;
    }

    private static void emitRecords(Iterable<ConsumerRecord<byte[], byte[]>> records) {
        for (ConsumerRecord<byte[], byte[]> r : records) {
            Json h = new Json();
            for (Header hd : r.headers()) h.put(hd.key(), str(hd.value()));
            emit(new Json().put("partition", r.partition()).put("offset", r.offset())
                    .put("timestamp", r.timestamp()).put("timestampType", r.timestampType().toString())
                    .put("key", str(r.key())).put("value", str(r.value())).put("headers", h));
        }
    }

    // ---------------------------------------------------------------- helpers

    private static int pollRecords(KafkaConsumer<byte[], byte[]> consumer, int count) {
        long deadline = System.currentTimeMillis() + timeoutMs();
        int got = 0;
        while (got < count && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                if (got >= count) break;
                Json h = new Json();
                for (Header hd : r.headers()) h.put(hd.key(), str(hd.value()));
                emit(new Json().put("partition", r.partition()).put("offset", r.offset())
                        .put("timestamp", r.timestamp()).put("timestampType", r.timestampType().toString())
                        .put("key", str(r.key())).put("value", str(r.value())).put("headers", h));
                got++;
            }
        }
        return got;
    }

    private static Properties common() {
        Properties p = new Properties();
        p.put("bootstrap.servers", req("bootstrap"));
        p.put("client.id", opt("client-id", "hourglass-harness"));
        return p;
    }

    /** Byte-array serializers and timeouts from --timeout-ms (delivery timeout at least linger + request timeout). */
    private static Properties producerProps() {
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        int timeout = timeoutMs();
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeout));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(timeout, 15000)));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout, 15000 + 5 + 1)));
        return p;
    }

    private static Properties consumerProps(String group) {
        Properties p = common();
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, opt("auto-offset-reset", "earliest"));
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, opt("isolation", "read_uncommitted"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs()));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(timeoutMs(), 15000)));
        extraProps(p);
        return p;
    }

    private static Properties adminProps() {
        Properties p = common();
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs()));
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(timeoutMs(), 15000)));
        extraProps(p);
        return p;
    }

    private static void extraProps(Properties p) {
        if (OPTS.containsKey("props-file")) {
            try (java.io.Reader r = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(OPTS.get("props-file")))) {
                p.load(r);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        if (OPTS.containsKey("props")) p.putAll(kv(OPTS.get("props")));
    }

    private static int timeoutMs() {
        return Integer.parseInt(opt("timeout-ms", "20000"));
    }

    private static Json node(Node n) {
        if (n == null) return null;
        return new Json().put("id", n.id()).put("host", n.host()).put("port", n.port()).put("rack", n.rack());
    }

    private static Json error(Throwable t) {
        // Futures wrap the client's own exception; report that one.
        while ((t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException)
                && t.getCause() != null) t = t.getCause();
        Json j = new Json().put("error", t.getClass().getSimpleName()).put("class", t.getClass().getName())
                .put("message", t.getMessage());
        if (t.getCause() != null) j.put("cause", t.getCause().getClass().getName() + ": " + t.getCause().getMessage());
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        if (root != t && root != t.getCause()) j.put("root", root.getClass().getName() + ": " + root.getMessage());
        return j;
    }

    private static List<TopicPartition> sorted(Set<TopicPartition> s) {
        List<TopicPartition> l = new ArrayList<>(s);
        l.sort((a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition()) : a.topic().compareTo(b.topic()));
        return l;
    }

    private static String req(String k) {
        String v = OPTS.get(k);
        if (v == null) throw new IllegalArgumentException("missing --" + k);
        return v;
    }

    private static String opt(String k, String dflt) {
        return OPTS.getOrDefault(k, dflt);
    }

    private static List<Long> longs(String csv) {
        List<Long> out = new ArrayList<>();
        for (String s : csv.split(",")) if (!s.isBlank()) out.add(Long.parseLong(s.trim()));
        return out;
    }

    private static Map<String, String> kv(String csv) {
        Map<String, String> out = new TreeMap<>();
        for (String s : csv.split(",")) {
            if (s.isBlank()) continue;
            int eq = s.indexOf('=');
            if (eq < 0) throw new IllegalArgumentException("expected key=value, got " + s);
            out.put(s.substring(0, eq).trim(), s.substring(eq + 1).trim());
        }
        return out;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String str(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    private static void emit(Json j) {
        System.out.println(j.toString());
    }

    /** An ordered JSON object; values are null, Boolean, Number, String, Json or List. */
    static final class Json {
        private final LinkedHashMap<String, Object> m = new LinkedHashMap<>();

        Json put(String k, Object v) { m.put(k, v); return this; }

        Json putAll(Json o) { m.putAll(o.m); return this; }

        Object get(String k) { return m.get(k); }

        @Override public String toString() {
            StringBuilder sb = new StringBuilder();
            write(sb, this);
            return sb.toString();
        }

        private static void write(StringBuilder sb, Object v) {
            if (v == null) sb.append("null");
            else if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short) sb.append(v);
            else if (v instanceof Number && Double.isNaN(((Number) v).doubleValue())) sb.append("null");
            else if (v instanceof Number) sb.append(v.toString());
            else if (v instanceof Json) {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<String, Object> e : ((Json) v).m.entrySet()) {
                    if (!first) sb.append(',');
                    first = false;
                    quote(sb, e.getKey());
                    sb.append(':');
                    write(sb, e.getValue());
                }
                sb.append('}');
            } else if (v instanceof List) {
                sb.append('[');
                boolean first = true;
                for (Object o : (List<?>) v) {
                    if (!first) sb.append(',');
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            } else quote(sb, v.toString());
        }

        private static void quote(StringBuilder sb, String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                        else sb.append(c);
                }
            }
            sb.append('"');
        }
    }
}
