import java.util.List;
import java.util.Map;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

/**
 * A client telemetry receiver for the Kafka oracle (``metric.reporters=TelemetrySink``): Kafka
 * serves GetTelemetrySubscriptions and PushTelemetry only with one configured. It accepts every
 * payload and keeps nothing, so the oracle answers 71/72 as any Kafka with a receiver does.
 */
public class TelemetrySink implements MetricsReporter, ClientTelemetry {
    @Override public void configure(Map<String, ?> configs) { }
    @Override public void init(List<KafkaMetric> metrics) { }
    @Override public void metricChange(KafkaMetric metric) { }
    @Override public void metricRemoval(KafkaMetric metric) { }
    @Override public void close() { }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (AuthorizableRequestContext context, ClientTelemetryPayload payload) -> { };
    }
}
