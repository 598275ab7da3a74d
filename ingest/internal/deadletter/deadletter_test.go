package deadletter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func newWriter(t *testing.T, fake *kfake.Cluster, group string) *Writer {
	t.Helper()
	w, err := New(Config{Topic: "dlq", Group: group}, kgo.SeedBrokers(fake.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := w.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

func readAll(t *testing.T, fake *kfake.Cluster, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumeTopics("dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for len(out) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

func hdr(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// TestSendOnceAcrossRuns: a record is sent unchanged with the context
// headers; a later run of the same group (a restart after a crash before
// the table commit) does not send it again, nor one below it, but sends
// the next; another group's records do not count.
func TestSendOnceAcrossRuns(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx := t.Context()
	rec := func(off int64) *kgo.Record {
		return &kgo.Record{Topic: "bl.db.t", Partition: 2, Offset: off, Key: []byte("k"), Value: []byte{0x07, byte(off)},
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}, Timestamp: time.UnixMilli(1700000000123)}
	}
	cause := fmt.Errorf("decoding: %w", errors.New("bad byte"))

	w1 := newWriter(t, fake, "g")
	for _, off := range []int64{5, 9} {
		if sent, err := w1.Send(ctx, rec(off), StageDecode, cause); err != nil || !sent {
			t.Fatalf("first run, offset %d: sent %v, err %v", off, sent, err)
		}
	}
	if sent, err := w1.Send(ctx, rec(9), StageDecode, cause); err != nil || sent {
		t.Fatalf("same run, offset 9 again: sent %v, err %v; want not sent", sent, err)
	}

	w2 := newWriter(t, fake, "g") // the restarted run
	for _, tc := range []struct {
		off  int64
		sent bool
	}{{5, false}, {9, false}, {10, true}} {
		if sent, err := w2.Send(ctx, rec(tc.off), StageMap, cause); err != nil || sent != tc.sent {
			t.Fatalf("second run, offset %d: sent %v, err %v; want sent %v", tc.off, sent, err, tc.sent)
		}
	}
	other := newWriter(t, fake, "other") // another deployment sharing the topic
	if sent, err := other.Send(ctx, rec(5), StageDecode, cause); err != nil || !sent {
		t.Fatalf("another group, offset 5: sent %v, err %v; want sent", sent, err)
	}

	got := readAll(t, fake, 4)
	if len(got) != 4 {
		t.Fatalf("%d records on the dead-letter topic, want 4", len(got))
	}
	r := got[0]
	if !bytes.Equal(r.Key, []byte("k")) || !bytes.Equal(r.Value, []byte{0x07, 5}) || r.Timestamp.UnixMilli() != 1700000000123 || hdr(r, "h") != "v" {
		t.Errorf("record changed: key %q value %q timestamp %v headers %v", r.Key, r.Value, r.Timestamp, r.Headers)
	}
	want := map[string]string{HeaderTopic: "bl.db.t", HeaderPartition: "2", HeaderOffset: "5", HeaderStage: "decode",
		HeaderConnector: "g", HeaderMessage: "decoding: bad byte"}
	for k, v := range want {
		if got := hdr(r, k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if got := hdr(got[2], HeaderStage); got != "map" {
		t.Errorf("third record's stage %q, want map", got)
	}
}

// TestAssignedRereads: after a partition is reassigned, the topic is read
// again before its next record, so what another member of the group sent
// meanwhile is not sent twice.
func TestAssignedRereads(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx := t.Context()
	rec := &kgo.Record{Topic: "bl.db.t", Partition: 0, Offset: 3, Value: []byte{1}}
	a, b := newWriter(t, fake, "g"), newWriter(t, fake, "g")
	if sent, err := a.Send(ctx, rec, StageDecode, errors.New("x")); err != nil || !sent {
		t.Fatalf("member a: sent %v, err %v", sent, err)
	}
	b.Assigned(map[string][]int32{"bl.db.t": {0}})
	if sent, err := b.Send(ctx, rec, StageDecode, errors.New("x")); err != nil || sent {
		t.Fatalf("member b after the reassignment: sent %v, err %v; want not sent", sent, err)
	}
}

// TestForgedRecordsDoNotSuppress: records anyone with produce rights put on
// the dead-letter topic, with the group's context headers, suppress
// nothing: one claiming a far offset (before, it hid every later dead
// letter of the partition) and one claiming the very position with other
// bytes. A genuine copy still counts as sent.
func TestForgedRecordsDoNotSuppress(t *testing.T) {
	fake, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx := t.Context()
	forger, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	forge := func(off int64, value []byte) {
		t.Helper()
		r := &kgo.Record{Topic: "dlq", Value: value, Headers: []kgo.RecordHeader{
			{Key: HeaderTopic, Value: []byte("bl.db.t")}, {Key: HeaderPartition, Value: []byte("0")},
			{Key: HeaderOffset, Value: []byte(fmt.Sprint(off))}, {Key: HeaderConnector, Value: []byte("g")}}}
		if err := forger.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	newWriter(t, fake, "g") // creates the topic
	forge(1<<40, []byte("anything"))
	forge(7, []byte("not the record"))
	w := newWriter(t, fake, "g")
	for _, off := range []int64{3, 7} {
		rec := &kgo.Record{Topic: "bl.db.t", Partition: 0, Offset: off, Value: []byte{0x07, byte(off)}}
		if sent, err := w.Send(ctx, rec, StageDecode, errors.New("bad")); err != nil || !sent {
			t.Errorf("offset %d after forged records: sent %v, err %v; want sent", off, sent, err)
		}
	}
	// A restart finds the genuine copies and does not send them again.
	w2 := newWriter(t, fake, "g")
	rec := &kgo.Record{Topic: "bl.db.t", Partition: 0, Offset: 7, Value: []byte{0x07, 7}}
	if sent, err := w2.Send(ctx, rec, StageDecode, errors.New("bad")); err != nil || sent {
		t.Errorf("offset 7 after a restart: sent %v, err %v; want not sent (its copy is on the topic)", sent, err)
	}
}
