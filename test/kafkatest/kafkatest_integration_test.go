//go:build integration

package kafkatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// newTopics creates topics of the test's own on the stack's Kafka, with
// partitions each, and returns their names.
func newTopics(t *testing.T, brokers []string, partitions int32, names ...string) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for _, n := range names {
		out = append(out, testenv.Unique(t, n))
	}
	resp, err := kadm.NewClient(cl).CreateTopics(t.Context(), partitions, 1, nil, out...)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

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

// TestConsumeReadsToLastStableOffset, on the stack's Kafka: the read ends
// at the offsets recorded once want records are read, past transaction
// markers and an aborted transaction at the end of the partition (whose
// offsets a count of records never reaches; Consume fails the test when
// it cannot reach them), and passes on only committed data records.
func TestConsumeReadsToLastStableOffset(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := newTopics(t, brokers, 2, "lso")[0]
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID(testenv.Unique(t, "lso-tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
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
			n := Consume(t, brokers, topic, want, time.Minute, func(r *kgo.Record) {
				if r.Attrs.IsControl() {
					t.Errorf("control record at offset %d passed on", r.Offset)
				}
				got = append(got, string(r.Value))
			})
			if fmt.Sprint(got) != "[a b c]" || n != 3 {
				t.Fatalf("read %d records %q, want the 3 committed ones [a b c]", n, got)
			}
		})
	}
}

// TestConsumeEmptyAndMissing: with want 0 an empty topic and a topic that
// does not exist read as empty.
func TestConsumeEmptyAndMissing(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	empty := newTopics(t, brokers, 3, "empty")[0]
	for _, topic := range []string{empty, testenv.Unique(t, "missing")} {
		if n := Consume(t, brokers, topic, 0, time.Minute, func(*kgo.Record) {}); n != 0 {
			t.Errorf("%s: read %d records, want 0", topic, n)
		}
	}
}

// TestConsumeFewerThanWant: fewer records than wanted return at the
// timeout with what was read, for the caller to judge.
func TestConsumeFewerThanWant(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	topic := newTopics(t, brokers, 1, "fewer")[0]
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	if err := prod.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: []byte("only")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if n := Consume(t, brokers, topic, 2, 3*time.Second, func(*kgo.Record) {}); n != 1 {
		t.Fatalf("read %d records, want the 1 there is", n)
	}
}
