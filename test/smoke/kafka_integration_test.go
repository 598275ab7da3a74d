//go:build integration

package smoke

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// TestKafkaTransactions commits two transactions around an aborted one and
// checks that a read_committed consumer sees exactly the committed records,
// in order, while a read_uncommitted consumer also sees the aborted ones
// (so the isolation, not an empty log, is what hides them).
func TestKafkaTransactions(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	topic := testenv.Unique(t, "smoke")

	admin, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.Background(), topic) })

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(topic+"-txn"),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	txn := func(prefix string, n int, commit bool) {
		t.Helper()
		if err := producer.BeginTransaction(); err != nil {
			t.Fatalf("beginning transaction: %v", err)
		}
		for i := range n {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%s-%d", prefix, i)}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("producing: %v", err)
			}
		}
		if err := producer.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("ending transaction (commit=%v): %v", commit, err)
		}
	}
	txn("a", 3, true)
	txn("x", 2, false) // aborted
	txn("b", 1, true)

	committed := consumeAll(t, brokers, topic, kgo.ReadCommitted(), 4)
	want := []string{"a-0", "a-1", "a-2", "b-0"}
	if !slices.Equal(committed, want) {
		t.Fatalf("read_committed consumer got %q, want %q", committed, want)
	}
	all := consumeAll(t, brokers, topic, kgo.ReadUncommitted(), 6)
	wantAll := []string{"a-0", "a-1", "a-2", "x-0", "x-1", "b-0"}
	if !slices.Equal(all, wantAll) {
		t.Fatalf("read_uncommitted consumer got %q, want %q", all, wantAll)
	}
}

// consumeAll reads the topic from the start until it has want records and
// then for one more second, to catch records that should not be there.
func consumeAll(t *testing.T, brokers []string, topic string, iso kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	var settle time.Time
	for time.Now().Before(deadline) {
		if len(got) >= want && settle.IsZero() {
			settle = time.Now().Add(time.Second)
		}
		if !settle.IsZero() && time.Now().After(settle) {
			break
		}
		pctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		for _, fe := range fetches.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				t.Fatalf("fetching %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}
