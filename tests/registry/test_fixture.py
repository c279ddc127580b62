"""The README's Schema Registry example through the pytest plugin's fixture."""
import pytest


@pytest.mark.hourglass(schema_registry=True)
def test_avro_serializer_with_the_fixture(hourglass_broker):
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    sr = SchemaRegistryClient({"url": hourglass_broker.schema_registry_url})
    serialize = AvroSerializer(sr, '{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}')
    data = serialize({"id": 7}, SerializationContext("orders", MessageField.VALUE))
    assert data[0] == 0 and sr.get_latest_version("orders-value").schema_id == int.from_bytes(data[1:5], "big")
