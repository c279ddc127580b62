package dev.hourglass.tc;

import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.ConfluentKafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** org.testcontainers.kafka.ConfluentKafkaContainer (confluentinc/cp-kafka) with the Hourglass image. */
@Testcontainers
class ConfluentKafkaContainerTest extends KafkaScenariosTest {
    @Container
    static final ConfluentKafkaContainer KAFKA = new ConfluentKafkaContainer(
            DockerImageName.parse(KafkaScenarios.image()).asCompatibleSubstituteFor("confluentinc/cp-kafka"));

    @Override
    String bootstrapServers() {
        return KAFKA.getBootstrapServers();
    }
}
