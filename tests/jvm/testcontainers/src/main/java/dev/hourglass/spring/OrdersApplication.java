package dev.hourglass.spring;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

/** The smallest real Spring Kafka application: a topic bean, a KafkaTemplate that sends orders,
 *  and a @KafkaListener in group "order-audit" that records what it received (the listener
 *  container commits each batch, Spring Kafka's default AckMode.BATCH). */
@SpringBootApplication
public class OrdersApplication {
    public static final String TOPIC = "orders";

    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }

    @Bean
    NewTopic ordersTopic() {
        return TopicBuilder.name(TOPIC).partitions(2).replicas(1).build();
    }

    @Component
    public static class OrderSender {
        private final KafkaTemplate<String, String> template;

        OrderSender(KafkaTemplate<String, String> template) {
            this.template = template;
        }

        public void send(String id, String order) throws Exception {
            template.send(TOPIC, id, order).get();
        }
    }

    @Component
    public static class OrderAudit {
        final List<String> received = new CopyOnWriteArrayList<>();

        @KafkaListener(topics = TOPIC, groupId = "order-audit")
        void on(String order) {
            received.add(order);
        }

        public List<String> received() {
            return received;
        }
    }
}
