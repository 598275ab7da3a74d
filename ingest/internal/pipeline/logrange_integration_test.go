//go:build integration

package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// stopsWith waits for run r to stop on its own and returns its
// *OutsideLogError.
func stopsWith(t *testing.T, r *running) *OutsideLogError {
	t.Helper()
	select {
	case err := <-r.done:
		var oe *OutsideLogError
		if !errors.As(err, &oe) {
			t.Fatalf("ingest stopped with %v, want an *OutsideLogError; log:\n%s", err, r.log.String())
		}
		t.Logf("ingest stopped: %v", err)
		return oe
	case <-time.After(90 * time.Second):
		r.cancel()
		err := <-r.done
		t.Fatalf("ingest did not stop on an offset outside the log (stopped by the test: %v); log:\n%s", err, r.log.String())
	}
	return nil
}

// stopRun stops run r and checks that it stopped cleanly.
func stopRun(t *testing.T, r *running) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Fatalf("pipeline: %v; log:\n%s", err, r.log.String())
	}
}

// TestOffsetBelowLogStartStops is issue 29 item 3: ingest commits 10
// records and stops; the topic's records up to offset 15 are deleted
// (DeleteRecords, as retention does) while 10 more arrive; the restarted
// ingest must stop naming the partition, the stored offset 10 and the
// log's range 15..20, rather than resume at 15 and skip 10..14.
func TestOffsetBelowLogStartStops(t *testing.T) {
	tt := newTestTopic(t, "lrs", 1)
	uri := testenv.IcebergEnv(t).URI
	tt.produce(t, 1, 10, 1)
	r1 := startPipeline(t, uri, tt.db, tt.topic, "first", 10*time.Second)
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool { return len(tt.rows(t)) == 10 }, "the first 10 rows in the table")
	stopRun(t, r1)

	tt.produce(t, 11, 20, 1)
	adm := kadm.NewClient(tt.cl)
	var del kadm.Offsets
	del.Add(kadm.Offset{Topic: tt.topic, Partition: 0, At: 15})
	if _, err := adm.DeleteRecords(t.Context(), del); err != nil {
		t.Fatalf("deleting records: %v", err)
	}

	r2 := startPipeline(t, uri, tt.db, tt.topic, "second", 10*time.Second)
	oe := stopsWith(t, r2)
	if oe.Topic != tt.topic || oe.Partition != 0 || oe.Stored != 10 || oe.Start != 15 || oe.End != 20 || oe.Recreated {
		t.Errorf("got %+v, want topic %s partition 0 stored 10 log 15..20 not recreated", *oe, tt.topic)
	}
	msg := oe.Error()
	for _, want := range []string{"retention.ms=", "retention.bytes=", "cleanup.policy=", "binlake.offsets." + tt.topic, "capture snapshot", "table " + strings.Join(tt.ident, ".")} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not name %q: %s", want, msg)
		}
	}
	if n := len(tt.rows(t)); n != 10 {
		t.Errorf("the table holds %d rows after the stop, want the 10 committed before the gap", n)
	}
}

// TestRecreatedTopicStops is issue 29 item 3's recreated topic: the table
// holds offset 10 of a topic that is deleted and created again. With 3
// records in the new topic (its log ends below 10) and then with 20 (the
// topic ID the table recorded differs), the restarted ingest must stop
// rather than take the new records below 10 as applied.
func TestRecreatedTopicStops(t *testing.T) {
	tt := newTestTopic(t, "lrr", 1)
	uri := testenv.IcebergEnv(t).URI
	tt.produce(t, 1, 10, 1)
	r1 := startPipeline(t, uri, tt.db, tt.topic, "first", 10*time.Second)
	testenv.Eventually(t, 60*time.Second, 200*time.Millisecond, func() bool { return len(tt.rows(t)) == 10 }, "the first 10 rows in the table")
	stopRun(t, r1)
	// A start on a table that holds offsets records the topic's ID.
	r2 := startPipeline(t, uri, tt.db, tt.topic, "second", 10*time.Second)
	testenv.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		tbl, err := tt.direct.LoadTable(t.Context(), tt.ident)
		if err != nil {
			return err
		}
		if tbl.Properties()[TopicIDKeyPrefix+tt.topic] == "" {
			return fmt.Errorf("no %s%s property yet", TopicIDKeyPrefix, tt.topic)
		}
		return nil
	})
	stopRun(t, r2)

	adm := kadm.NewClient(tt.cl)
	if _, err := adm.DeleteTopics(t.Context(), tt.topic); err != nil {
		t.Fatalf("deleting the topic: %v", err)
	}
	testenv.CheckFor(t, 60*time.Second, 500*time.Millisecond, func() error {
		res, err := adm.CreateTopic(context.WithoutCancel(t.Context()), 1, 1, nil, tt.topic)
		if err == nil {
			err = res.Err
		}
		return err
	})
	// A new producer: the old one knows the old topic's ID.
	cl, err := kgo.NewClient(kgo.SeedBrokers(testenv.KafkaBrokers(t)...), kgo.DefaultProduceTopic(tt.topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tt.cl = cl
	tt.produce(t, 1, 3, 2)
	// As a table of an older binlake, which recorded no topic ID: the log
	// ends below the stored offset.
	tbl, err := tt.direct.LoadTable(t.Context(), tt.ident)
	if err != nil {
		t.Fatal(err)
	}
	idKey := TopicIDKeyPrefix + tt.topic
	oldID := tbl.Properties()[idKey]
	setProps(t, tbl, nil, []string{idKey})
	oe := stopsWith(t, startPipeline(t, uri, tt.db, tt.topic, "third", 10*time.Second))
	if !oe.Recreated || oe.Stored != 10 || oe.End != 3 || oe.StoredID != "" {
		t.Errorf("got %+v, want recreated, stored 10, log end 3, no stored topic ID", *oe)
	}
	if tbl, err = tt.direct.LoadTable(t.Context(), tt.ident); err != nil {
		t.Fatal(err)
	}
	setProps(t, tbl, iceberg.Properties{idKey: oldID}, nil)

	tt.produce(t, 4, 20, 2)
	oe = stopsWith(t, startPipeline(t, uri, tt.db, tt.topic, "fourth", 10*time.Second))
	if !oe.Recreated || oe.StoredID == "" || oe.StoredID == oe.ID || oe.End != 20 {
		t.Errorf("got %+v, want recreated by topic ID, log end 20", *oe)
	}
	if got := tt.rows(t); len(got) != 10 || got[1] != "v1" {
		t.Errorf("the table holds %v, want the 10 rows of the old topic at v1", got)
	}
}

// setProps sets and removes properties of tbl.
func setProps(t *testing.T, tbl *table.Table, set iceberg.Properties, remove []string) {
	t.Helper()
	tx := tbl.NewTransaction()
	if len(set) > 0 {
		if err := tx.SetProperties(set); err != nil {
			t.Fatal(err)
		}
	}
	if len(remove) > 0 {
		if err := tx.RemoveProperties(remove); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
}
