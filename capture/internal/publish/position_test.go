package publish

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestPositionReaderHanging: the position is the last one a commit marker
// ended; a position no marker ended is reported open, and hangingOf keeps
// those of this capture's producer at an epoch below the one it was
// fenced to (a hanging transaction: chaos-short saw one after a broker
// stopped with capture's transaction open, and the next capture's first
// commit made its records visible, repeating 3 changes on their topic).
func TestPositionReaderHanging(t *testing.T) {
	const key, pid = "cap", int64(107)
	txn := func(off int64, producer int64, epoch int16, k, v string) *kgo.Record {
		r := &kgo.Record{Topic: "offs", Offset: off, ProducerID: producer, ProducerEpoch: epoch, Key: []byte(k), Value: []byte(v)}
		r.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true})
		return r
	}
	marker := func(off int64, producer int64, epoch int16, commit bool) *kgo.Record {
		typ := byte(0)
		if commit {
			typ = 1
		}
		r := &kgo.Record{Topic: "offs", Offset: off, ProducerID: producer, ProducerEpoch: epoch, Key: []byte{0, 0, 0, typ}}
		r.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Transactional: true, Control: true})
		return r
	}
	var pr positionReader
	pr.key = key
	for _, r := range []*kgo.Record{
		txn(0, pid, 173, key, "p1"), marker(1, pid, 174, true),
		txn(2, pid, 174, key, "p2"), marker(3, pid, 175, true),
		txn(4, 9, 3, key, "other producer, aborted"), marker(5, 9, 4, false),
		txn(6, 9, 4, "other-key", "another capture's, open"),
		txn(7, pid, 175, key, "p3: hanging"),
	} {
		pr.add(r)
	}
	if !pr.found || string(pr.value) != "p2" {
		t.Fatalf("position %q (found %v), want p2: the last one a commit marker ended", pr.value, pr.found)
	}
	open := pr.open()
	if len(open) != 1 || open[0].Offset != 7 {
		t.Fatalf("open positions under the key: %v, want the one at offset 7", offsetsOf(open))
	}
	if h := hangingOf(open, pid, 178); len(h) != 1 || h[0].Offset != 7 {
		t.Fatalf("hanging at epoch 178: %v, want offset 7", offsetsOf(h))
	}
	if h := hangingOf(open, pid, 175); len(h) != 0 {
		t.Fatalf("hanging at the record's own epoch: %v, want none (the transaction is this producer's own)", offsetsOf(h))
	}
	if h := hangingOf(open, 8, 200); len(h) != 0 {
		t.Fatalf("hanging of another producer: %v, want none", offsetsOf(h))
	}
}

func offsetsOf(recs []*kgo.Record) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}
