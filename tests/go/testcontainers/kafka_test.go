// Testcontainers for Go's Kafka module (modules/kafka) running the Hourglass image: the module is
// used as its users use it, with only the image name changed (HOURGLASS_IMAGE). Each test starts
// its own container and uses IBM/sarama, the client of the module's own tests: produce, a
// consumer group that consumes and commits, a transaction (one committed, one aborted batch,
// read with read_committed), and the cluster admin. The container runtime comes from
// DOCKER_HOST, as for any Testcontainers user; tests/container/test_testcontainers.py runs this.
package testcontainers_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/kafka"
)

func image(t *testing.T) string {
	t.Helper()
	img := os.Getenv("HOURGLASS_IMAGE")
	require.NotEmpty(t, img, "HOURGLASS_IMAGE names the image under test")
	return img
}

// start runs a container for one test. The tests run in parallel: the module's PID 1 is its own
// `sh -c` wait loop, which ignores SIGTERM, so each container's stop takes the full 10 s stop
// timeout before the kill, with any image.
func start(t *testing.T) (*kafka.KafkaContainer, []string) {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	ctr, err := kafka.Run(ctx, image(t), kafka.WithClusterID("kraftCluster"))
	testcontainers.CleanupContainer(t, ctr)
	require.NoError(t, err)
	brokers, err := ctr.Brokers(ctx)
	require.NoError(t, err)
	t.Logf("started in %s, brokers %v", time.Since(began), brokers)
	return ctr, brokers
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	return c
}

type groupHandler struct {
	got  chan *sarama.ConsumerMessage
	want int
}

func (h *groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *groupHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		s.Commit()
		h.got <- m
	}
	return nil
}

// consume reads n records with a consumer group, committing each, and returns their values.
func consume(t *testing.T, brokers []string, cfg *sarama.Config, group, topic string, n int) []string {
	t.Helper()
	cg, err := sarama.NewConsumerGroup(brokers, group, cfg)
	require.NoError(t, err)
	defer cg.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := &groupHandler{got: make(chan *sarama.ConsumerMessage, n), want: n}
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil {
				return
			}
		}
	}()
	var values []string
	for len(values) < n {
		select {
		case m := <-h.got:
			values = append(values, string(m.Value))
		case <-ctx.Done():
			t.Fatalf("group %s read %d of %d records of %s", group, len(values), n, topic)
		}
	}
	return values
}

func TestProduceAndConsumeWithAGroup(t *testing.T) {
	t.Parallel()
	ctr, brokers := start(t)
	require.Equal(t, "kraftCluster", ctr.ClusterID)

	// the module's own check: the BROKER listener is advertised on the container's hostname
	inspect, err := ctr.Inspect(context.Background())
	require.NoError(t, err)
	script := testcontainers.RequireContainerExec(context.Background(), t, ctr,
		[]string{"cat", "/usr/sbin/testcontainers_start.sh"})
	require.Contains(t, script, "BROKER://"+inspect.Config.Hostname+":9092")

	cfg := config()
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	require.NoError(t, err)
	defer producer.Close()
	var want []string
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("value-%d", i)
		want = append(want, v)
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "orders",
			Key: sarama.StringEncoder("key"), Value: sarama.StringEncoder(v)})
		require.NoError(t, err)
	}
	require.Equal(t, want, consume(t, brokers, cfg, "readers", "orders", 10))

	// the group's commits are there for the next reader
	admin, err := sarama.NewClusterAdmin(brokers, cfg)
	require.NoError(t, err)
	defer admin.Close()
	offsets, err := admin.ListConsumerGroupOffsets("readers", map[string][]int32{"orders": {0}})
	require.NoError(t, err)
	require.Equal(t, int64(10), offsets.Blocks["orders"][0].Offset)
}

func TestTransaction(t *testing.T) {
	t.Parallel()
	_, brokers := start(t)
	cfg := config()
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "tc-go-txn"
	cfg.Net.MaxOpenRequests = 1
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	require.NoError(t, err)
	defer producer.Close()
	send := func(v string) {
		_, _, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "payments", Value: sarama.StringEncoder(v)})
		require.NoError(t, err)
	}
	require.NoError(t, producer.BeginTxn())
	send("committed-1")
	send("committed-2")
	require.NoError(t, producer.CommitTxn())
	require.NoError(t, producer.BeginTxn())
	send("aborted")
	require.NoError(t, producer.AbortTxn())
	require.NoError(t, producer.BeginTxn())
	send("committed-3")
	require.NoError(t, producer.CommitTxn())

	read := config()
	read.Consumer.IsolationLevel = sarama.ReadCommitted
	require.Equal(t, []string{"committed-1", "committed-2", "committed-3"},
		consume(t, brokers, read, "txn-readers", "payments", 3))
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	_, brokers := start(t)
	admin, err := sarama.NewClusterAdmin(brokers, config())
	require.NoError(t, err)
	defer admin.Close()
	require.NoError(t, admin.CreateTopic("inventory", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"retention.ms": ptr("3600000")}}, false))
	err = admin.CreateTopic("inventory", &sarama.TopicDetail{NumPartitions: 3, ReplicationFactor: 1}, false)
	require.ErrorIs(t, err, sarama.ErrTopicAlreadyExists)

	topics, err := admin.ListTopics()
	require.NoError(t, err)
	require.Equal(t, int32(3), topics["inventory"].NumPartitions)
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "inventory",
		ConfigNames: []string{"retention.ms"}})
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "3600000", entries[0].Value)

	brokerList, controller, err := admin.DescribeCluster()
	require.NoError(t, err)
	require.Len(t, brokerList, 1)
	require.Equal(t, brokerList[0].ID(), controller)
	require.True(t, strings.Contains(brokers[0], ":"))

	require.NoError(t, admin.DeleteTopic("inventory"))
}

func ptr(s string) *string { return &s }

// TestFirstRecord is what a test suite waits for before its first assertion: from kafka.Run to a
// record produced and read back. bench/testcontainers_start.py reads the logged time.
func TestFirstRecord(t *testing.T) {
	t.Parallel()
	began := time.Now()
	_, brokers := start(t)
	cfg := config()
	producer, err := sarama.NewSyncProducer(brokers, cfg)
	require.NoError(t, err)
	defer producer.Close()
	_, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "first", Value: sarama.StringEncoder("hello")})
	require.NoError(t, err)
	consumer, err := sarama.NewConsumer(brokers, cfg)
	require.NoError(t, err)
	defer consumer.Close()
	pc, err := consumer.ConsumePartition("first", 0, offset)
	require.NoError(t, err)
	defer pc.Close()
	select {
	case m := <-pc.Messages():
		require.Equal(t, "hello", string(m.Value))
	case <-time.After(60 * time.Second):
		t.Fatal("the record did not come back within 60 s")
	}
	t.Logf("first record after %d ms", time.Since(began).Milliseconds())
}
