package kafkatest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceTxn writes values to partition 0 of topic in one transaction and
// commits it, or aborts it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, commit bool, values ...string) {
	t.Helper()
	ctx := t.Context()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// TestConsumeReadsToLastStableOffset: the read ends at the offsets
// recorded once want records are read, past transaction markers and an
// aborted transaction at the end of the partition (whose offsets a count
// of records never reaches), and passes on only committed data records.
func TestConsumeReadsToLastStableOffset(t *testing.T) {
	const topic = "t"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("p"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	produceTxn(t, prod, topic, true, "a", "b")
	produceTxn(t, prod, topic, false, "aborted1", "aborted2")
	produceTxn(t, prod, topic, true, "c")
	produceTxn(t, prod, topic, false, "aborted3") // the partition ends with an abort

	for _, want := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("want=%d", want), func(t *testing.T) {
			var got []string
			start := time.Now()
			n := Consume(t, brokers, topic, want, 30*time.Second, func(r *kgo.Record) {
				if r.Attrs.IsControl() {
					t.Errorf("control record at offset %d passed on", r.Offset)
				}
				got = append(got, string(r.Value))
			})
			if fmt.Sprint(got) != "[a b c]" || n != 3 {
				t.Fatalf("read %d records %q, want the 3 committed ones [a b c]", n, got)
			}
			// Reaching the offsets ends the read at once; waiting for the
			// timeout would take 30 s.
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the read took %s: it did not end at the recorded offsets", took)
			}
		})
	}
}

// TestConsumeEmptyAndMissing: with want 0 an empty topic and a topic that
// does not exist read as empty, at once.
func TestConsumeEmptyAndMissing(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "empty"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, topic := range []string{"empty", "missing"} {
		start := time.Now()
		if n := Consume(t, c.ListenAddrs(), topic, 0, 30*time.Second, func(*kgo.Record) {}); n != 0 {
			t.Errorf("%s: read %d records, want 0", topic, n)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: the read took %s", topic, took)
		}
	}
}

// TestConsumeFewerThanWant: fewer records than wanted return at the
// timeout with what was read, for the caller to judge.
func TestConsumeFewerThanWant(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	prod, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	if err := prod.ProduceSync(context.Background(), &kgo.Record{Topic: "t", Value: []byte("only")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := Consume(t, c.ListenAddrs(), "t", 2, 2*time.Second, func(*kgo.Record) {}); n != 1 {
		t.Fatalf("read %d records, want the 1 there is", n)
	}
}
