package dev.hourglass.tc;

import org.junit.jupiter.api.Test;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.ConfluentKafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** org.testcontainers.kafka.ConfluentKafkaContainer (confluentinc/cp-kafka) with the Hourglass image. */
@Testcontainers
class ConfluentKafkaContainerTest {
    @Container
    static final ConfluentKafkaContainer KAFKA = new ConfluentKafkaContainer(
            DockerImageName.parse(KafkaScenarios.image()).asCompatibleSubstituteFor("confluentinc/cp-kafka"));

    @Test
    void produceAndConsumeWithAGroup() throws Exception {
        KafkaScenarios.produceConsumeWithAGroup(KAFKA.getBootstrapServers());
    }

    @Test
    void transaction() throws Exception {
        KafkaScenarios.transaction(KAFKA.getBootstrapServers());
    }

    @Test
    void admin() throws Exception {
        KafkaScenarios.admin(KAFKA.getBootstrapServers(), 1);
    }
}
