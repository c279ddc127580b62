package dev.hourglass.tc;

import java.time.Duration;
import java.util.List;

import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** What a test suite waits for before its first assertion, with Testcontainers' KafkaContainer:
 *  from creating the container to a record produced and read back. Prints
 *  "first record after N ms" (bench/testcontainers_start.py reads it); exits 1 on failure. */
public final class FirstRecord {
    public static void main(String[] args) throws Exception {
        long began = System.nanoTime();
        try (KafkaContainer kafka = new KafkaContainer(
                DockerImageName.parse(KafkaScenarios.image()).asCompatibleSubstituteFor("apache/kafka"))) {
            kafka.start();
            String bootstrap = kafka.getBootstrapServers();
            try (KafkaProducer<String, String> p = KafkaScenarios.producer(bootstrap, null)) {
                p.send(new ProducerRecord<>("first", "hello")).get();
            }
            try (KafkaConsumer<String, String> c = KafkaScenarios.consumer(bootstrap, "first-reader", false)) {
                TopicPartition tp = new TopicPartition("first", 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
                while (c.poll(Duration.ofMillis(200)).isEmpty()) {
                    if (System.nanoTime() > deadline) {
                        System.err.println("the record did not come back within 60 s");
                        System.exit(1);
                    }
                }
            }
            System.out.println("first record after " + (System.nanoTime() - began) / 1_000_000 + " ms");
        }
    }
}
