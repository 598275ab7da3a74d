//go:build integration

package publish

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// TestTransactionTimeoutNamed holds a transaction open past the transaction
// timeout, as a source transaction longer than --transaction-timeout does,
// until the broker aborts it. Committing must then fail with
// ErrTransactionTimeout naming --transaction-timeout and the broker's
// transaction.max.timeout.ms, not with ErrFenced ("fenced by a newer
// capture", which sends operators looking for a second capture).
func TestTransactionTimeoutNamed(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	id := testenv.Unique(t, "txt")
	p, err := New(t.Context(), Config{Brokers: brokers, ID: id, OffsetsTopic: id + ".offsets", TopicPartitions: 1, TopicReplication: 1,
		MaxRecordBytes: 1 << 20, TransactionTimeout: 2 * time.Second, MaxBufferedBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	topic := id + ".data"
	if err := p.EnsureTopic(t.Context(), topic, nil, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Begin(); err != nil {
		t.Fatal(err)
	}
	p.Produce(t.Context(), &kgo.Record{Topic: topic, Value: []byte("v")})
	if err := p.cl.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Wait for the broker to abort the transaction (its timed-out
	// transaction check runs every transaction.abort.timed.out.transaction.cleanup.interval.ms).
	adm := kadm.NewClient(p.cl)
	txnID := "binlake-capture-" + id
	var state string
	testenv.Eventually(t, 90*time.Second, 200*time.Millisecond, func() bool {
		d, err := adm.DescribeTransactions(t.Context(), txnID)
		if err != nil {
			return false
		}
		state = d[txnID].State
		return state != "" && state != "Ongoing"
	}, "the broker to abort the timed-out transaction")
	t.Logf("transaction state after the timeout: %s", state)

	err = p.Commit(t.Context(), "pos", []byte("{}"))
	t.Logf("commit: %v", err)
	if !errors.Is(err, ErrTransactionTimeout) {
		t.Fatalf("commit after the broker aborted the timed-out transaction: %v; want ErrTransactionTimeout", err)
	}
	if errors.Is(err, ErrFenced) {
		t.Errorf("the error still reads as fencing by a newer capture: %v", err)
	}
	for _, s := range []string{"--transaction-timeout", "transaction.max.timeout.ms"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not name %s: %v", s, err)
		}
	}
}
