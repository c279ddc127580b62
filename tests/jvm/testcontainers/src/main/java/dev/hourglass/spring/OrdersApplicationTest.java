package dev.hourglass.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.testcontainers.service.connection.ServiceConnection;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** Spring Boot's way of starting a Kafka for tests: @ServiceConnection on a Testcontainers
 *  KafkaContainer, here with the Hourglass image (-Dhourglass.image) in place of apache/kafka. */
@SpringBootTest(properties = {"spring.kafka.consumer.auto-offset-reset=earliest"})
@Testcontainers
class OrdersApplicationTest {
    @Container
    @ServiceConnection
    static final KafkaContainer KAFKA = new KafkaContainer(
            DockerImageName.parse(System.getProperty("hourglass.image")).asCompatibleSubstituteFor("apache/kafka"));

    @Autowired
    OrdersApplication.OrderSender sender;

    @Autowired
    OrdersApplication.OrderAudit audit;

    @Test
    void sendsReceivesAndCommits() throws Exception {
        Set<String> sent = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            sender.send("order-" + i, "{\"id\": " + i + "}");
            sent.add("{\"id\": " + i + "}");
        }
        await().atMost(Duration.ofSeconds(60)).untilAsserted(
                () -> assertThat(new HashSet<>(audit.received())).isEqualTo(sent));
        assertThat(audit.received()).hasSize(20);
        // the listener's group committed what it read: 20 records over the topic's two partitions
        try (Admin admin = Admin.create(java.util.Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                KAFKA.getBootstrapServers()))) {
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                var offsets = admin.listConsumerGroupOffsets("order-audit").partitionsToOffsetAndMetadata().get();
                long total = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
                assertThat(offsets.keySet()).containsExactlyInAnyOrder(
                        new TopicPartition(OrdersApplication.TOPIC, 0), new TopicPartition(OrdersApplication.TOPIC, 1));
                assertThat(total).isEqualTo(20L);
            });
        }
    }
}
