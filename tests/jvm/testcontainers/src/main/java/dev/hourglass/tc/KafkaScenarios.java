package dev.hourglass.tc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** What a user's basic Kafka test checks, against any bootstrap address a container gives. */
final class KafkaScenarios {
    private KafkaScenarios() {
    }

    /** The image under test: -Dhourglass.image (tests/container/test_testcontainers.py sets it). */
    static String image() {
        String image = System.getProperty("hourglass.image");
        if (image == null || image.isEmpty()) {
            throw new IllegalStateException("-Dhourglass.image names the image under test");
        }
        return image;
    }

    static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        if (transactionalId != null) {
            p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, boolean readCommitted) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        if (readCommitted) {
            p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        }
        return new KafkaConsumer<>(p);
    }

    /** Reads until n values came (60 s at most), committing them; returns the values in order. */
    static List<String> consume(String bootstrap, String group, String topic, int n, boolean readCommitted) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = consumer(bootstrap, group, readCommitted)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (values.size() < n && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    values.add(r.value());
                }
                c.commitSync();
            }
        }
        return values;
    }

    static void produceConsumeWithAGroup(String bootstrap) throws Exception {
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<String, String> p = producer(bootstrap, null)) {
            for (int i = 0; i < 10; i++) {
                sent.add("value-" + i);
                p.send(new ProducerRecord<>("orders", "key", "value-" + i)).get();
            }
        }
        assertEquals(sent, consume(bootstrap, "readers", "orders", 10, false));
        try (Admin admin = admin(bootstrap)) {
            var committed = admin.listConsumerGroupOffsets("readers").partitionsToOffsetAndMetadata().get();
            assertEquals(10L, committed.get(new TopicPartition("orders", 0)).offset());
        }
    }

    static void transaction(String bootstrap) throws Exception {
        try (KafkaProducer<String, String> p = producer(bootstrap, "tc-java-txn")) {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>("payments", "committed-1"));
            p.send(new ProducerRecord<>("payments", "committed-2"));
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>("payments", "aborted"));
            p.flush();
            p.abortTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>("payments", "committed-3"));
            p.commitTransaction();
        }
        assertEquals(List.of("committed-1", "committed-2", "committed-3"),
                consume(bootstrap, "txn-readers", "payments", 3, true));
    }

    static void admin(String bootstrap, int expectedNodes) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic("inventory", 3, (short) 1)
                    .configs(Map.of("retention.ms", "3600000")))).all().get();
            ExecutionException again = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                    () -> admin.createTopics(List.of(new NewTopic("inventory", 3, (short) 1))).all().get());
            assertTrue(again.getCause() instanceof TopicExistsException, String.valueOf(again.getCause()));
            assertEquals(3, admin.describeTopics(Set.of("inventory")).allTopicNames().get()
                    .get("inventory").partitions().size());
            assertEquals(expectedNodes, admin.describeCluster().nodes().get().size());
            assertTrue(admin.listTopics().names().get().contains("inventory"));
            admin.deleteTopics(Set.of("inventory")).all().get();
        }
    }

    static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }
}
