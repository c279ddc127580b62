package dev.hourglass.tc;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.testcontainers.containers.Network;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;

/** org.testcontainers.kafka.KafkaContainer (apache/kafka) with the Hourglass image substituted. */
@Testcontainers
class KafkaContainerTest extends KafkaScenariosTest {
    @Container
    static final KafkaContainer KAFKA = new KafkaContainer(
            DockerImageName.parse(KafkaScenarios.image()).asCompatibleSubstituteFor("apache/kafka"));

    @Override
    String bootstrapServers() {
        return KAFKA.getBootstrapServers();
    }

    @Test
    void listenerForOtherContainers() throws Exception {
        // withListener: a second listener for containers on the same network (the module's own
        // feature); here the container itself reaches it, as a client on that network would
        try (Network network = Network.newNetwork();
             KafkaContainer kafka = new KafkaContainer(DockerImageName.parse(KafkaScenarios.image())
                     .asCompatibleSubstituteFor("apache/kafka")).withNetwork(network).withListener("kafka:19092")) {
            kafka.start();
            KafkaScenarios.produceConsumeWithAGroup(kafka.getBootstrapServers());
            var r = kafka.execInContainer("hourglass", "probe", "-b", "kafka:19092");
            assertTrue(r.getExitCode() == 0, r.getStdout() + r.getStderr());
        }
    }
}
