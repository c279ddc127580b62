package dev.hourglass.tc;

import org.junit.jupiter.api.Test;

/** A user's basic Kafka test, the same for every container class: each subclass names its
 *  container (started by @Testcontainers) through {@link #bootstrapServers()}. */
abstract class KafkaScenariosTest {
    abstract String bootstrapServers();

    @Test
    void produceAndConsumeWithAGroup() throws Exception {
        KafkaScenarios.produceConsumeWithAGroup(bootstrapServers());
    }

    @Test
    void transaction() throws Exception {
        KafkaScenarios.transaction(bootstrapServers());
    }

    @Test
    void admin() throws Exception {
        KafkaScenarios.admin(bootstrapServers(), 1);
    }
}
