package pipeline

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/batch"
	"github.com/binlake/binlake/ingest/internal/decode"
)

// syncBuffer is a log sink the pipeline's goroutines may write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNonTableTopicResumesFromGroup checks that a topic that names no
// table (Debezium's <prefix>.transaction) is not re-read from its start
// after a restart: its skipped records' offsets go to the consumer group,
// a restart resumes there, and a change record on it stops ingest without
// its offset being committed. (kfake: a unit test of the pipeline's
// offset handling; the catalog is never touched by such a topic.)
func TestNonTableTopicResumesFromGroup(t *testing.T) {
	const topic, group = "p.transaction", "g"
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	prod, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	adm := kadm.NewClient(prod)
	txn := `{"schema":{"type":"struct","name":"io.debezium.connector.common.TransactionMetadataValue","optional":false,` +
		`"fields":[{"type":"string","optional":false,"field":"id"}]},"payload":{"id":"x"}}`
	produce := func(n int, value string) {
		t.Helper()
		for range n {
			if err := prod.ProduceSync(t.Context(), &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	committed := func() int64 {
		offs, err := adm.FetchOffsets(t.Context(), group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		o, ok := offs.Lookup(topic, 0)
		if !ok {
			return -1
		}
		return o.At
	}
	// run runs a pipeline until the group holds offset want (or, with
	// want < 0, until the pipeline fails) and returns its log and error.
	run := func(want int64) (string, error) {
		t.Helper()
		var log syncBuffer
		p, err := New(Config{Brokers: fake.ListenAddrs(), Group: group, Topics: []string{topic},
			Logger: slog.New(slog.NewTextHandler(&log, nil))}, nil, decode.New(nil))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		deadline := time.Now().Add(20 * time.Second)
		for want >= 0 && committed() != want {
			if time.Now().After(deadline) {
				cancel()
				<-done
				t.Fatalf("group offset %d, want %d; log:\n%s", committed(), want, log.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		if want >= 0 {
			cancel()
		}
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("pipeline did not stop; log:\n%s", log.String())
		}
		return log.String(), err
	}
	firstSkip := regexp.MustCompile(`msg="skipping records that are not row changes".* offset=(\d+)`)

	produce(5, txn)
	if log, err := run(5); err != nil {
		t.Fatalf("first run: %v\n%s", err, log)
	}
	produce(2, txn)
	log, err := run(7)
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, log)
	}
	if m := firstSkip.FindStringSubmatch(log); m == nil || m[1] != "5" {
		t.Errorf("second run: first skipped record %v, want offset 5 (resumed from the group); log:\n%s", m, log)
	}

	// A row change on a topic that names no table stops ingest, and the
	// group offset never passes it: the next run stops on it again.
	produce(1, txn)
	change := `{"schema":{"type":"struct","name":"p.transaction.Envelope","optional":false,"fields":[` +
		`{"type":"struct","name":"p.transaction.Value","optional":true,"field":"after","fields":[{"type":"int32","optional":false,"field":"id"}]},` +
		`{"type":"string","optional":false,"field":"op"}]},"payload":{"after":{"id":1},"op":"c"}}`
	prod.ProduceSync(t.Context(), &kgo.Record{Key: []byte(`{"schema":{"type":"struct","optional":false,"fields":[{"type":"int32","optional":false,"field":"id"}]},"payload":{"id":1}}`), Value: []byte(change)})
	for i := range 2 {
		log, err := run(-1)
		if err == nil || !strings.Contains(err.Error(), "is not <prefix>.<db>.<table>") {
			t.Fatalf("run %d with a change at offset 8: err %v; log:\n%s", i, err, log)
		}
		// The group offset past the record skipped at 7 may or may not
		// have been committed before the failure; the one past the change
		// (9) never is.
		if got := committed(); got != 7 && got != 8 {
			t.Fatalf("run %d: group offset %d, want 7 or 8", i, got)
		}
	}
}

// TestAdvisoryCommitsOwnedOnly is finding 5a of issue 9: a table's offsets
// cover every partition of its topic, but a member commits group offsets
// only for the partitions it owns; the others are another member's to
// commit (lag tools read them). Two members share a two-partition topic
// (one that names no table, so that no catalog is needed: commitGroup is
// the same for both).
func TestAdvisoryCommitsOwnedOnly(t *testing.T) {
	const topic, group = "p.transaction", "g2"
	fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	var log syncBuffer
	p, err := New(Config{Brokers: fake.ListenAddrs(), Group: group, Topics: []string{topic},
		Logger: slog.New(slog.NewTextHandler(&log, nil))}, nil, decode.New(nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	other, err := kgo.NewClient(kgo.SeedBrokers(fake.ListenAddrs()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	go func() {
		for ctx.Err() == nil {
			other.PollFetches(ctx)
		}
	}()
	owned := func() []int32 {
		p.ownMu.Lock()
		defer p.ownMu.Unlock()
		var out []int32
		for part, ok := range p.owned[topic] {
			if ok {
				out = append(out, part)
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(owned()) != 1 || len(other.GetConsumeTopics()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the two members did not share the partitions: pipeline owns %v; log:\n%s", owned(), log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	mine := owned()[0]
	w, err := p.worker(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	// What a commit to the table returns: offsets of both partitions.
	w.commitGroup(ctx, map[int32]int64{0: 5, 1: 7})
	adm := kadm.NewClient(other)
	var offs kadm.OffsetResponses
	for {
		if offs, err = adm.FetchOffsets(ctx, group); err == nil {
			if _, ok := offs.Lookup(topic, mine); ok {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the owned partition %d was not committed: %v %v", mine, offs, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if o, ok := offs.Lookup(topic, 1-mine); ok && o.At >= 0 {
		t.Errorf("member committed partition %d it does not own (offset %d)", 1-mine, o.At)
	}
	if o, _ := offs.Lookup(topic, mine); o.At != map[int32]int64{0: 5, 1: 7}[mine] {
		t.Errorf("owned partition %d committed at %d", mine, o.At)
	}
}

// TestSessionTimeout: the group session timeout reaches the Kafka client
// (franz-go's 45s by default), with heartbeats every third of it, at most
// every 3s.
func TestSessionTimeout(t *testing.T) {
	for _, c := range []struct {
		set, session, heartbeat time.Duration
	}{
		{0, 45 * time.Second, 3 * time.Second},
		{6 * time.Second, 6 * time.Second, 2 * time.Second},
		{2 * time.Minute, 2 * time.Minute, 3 * time.Second},
	} {
		p, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Group: "g", Topics: []string{"p.db.t"}, SessionTimeout: c.set}, nil, decode.New(nil))
		if err != nil {
			t.Fatal(err)
		}
		session, _ := p.cl.OptValue(kgo.SessionTimeout).(time.Duration)
		heartbeat, _ := p.cl.OptValue(kgo.HeartbeatInterval).(time.Duration)
		p.cl.Close()
		if session != c.session || heartbeat != c.heartbeat {
			t.Errorf("SessionTimeout %s: client session timeout %s, heartbeat %s; want %s, %s", c.set, session, heartbeat, c.session, c.heartbeat)
		}
	}
}

// TestSettledEmptyPartition: a schema topic of several partitions (capture
// with a broker's num.partitions of 3) has partitions that hold no record.
// No record of theirs ever reaches the worker, so waiting for the worker
// to handle them waited forever: every table worker of a lone ingest
// stopped at its first change (the chaos workload). A partition whose log
// starts at its last stable offset is handled; one with records is not
// until the worker has handled them.
func TestSettledEmptyPartition(t *testing.T) {
	const st = "p"
	q := decode.SourcePos{File: "mysql-bin.000001", Pos: 4000}
	r := newRenamer()
	for part := range int32(4) {
		r.setStart(st, part, -2) // a new group: from the start
	}
	r.handled(st, 0, 12) // records 0..10 and the transaction marker at 11
	r.handled(st, 2, 2)
	lso := lsoRead{
		offsets:  map[int32]int64{0: 12, 1: 0, 2: 2, 3: 5},
		logStart: map[int32]int64{0: 0, 1: 0, 2: 0, 3: 5}, // 3: its records deleted
	}
	if !r.settled(st, q, lso) {
		t.Errorf("not settled with every record handled and partitions 1 and 3 empty")
	}
	lso.logStart[3] = 4
	if r.settled(st, q, lso) {
		t.Errorf("settled with partition 3's record at offset 4 not handled")
	}
	r.handled(st, 3, 5)
	if !r.settled(st, q, lso) {
		t.Errorf("not settled once partition 3's record is handled")
	}
}

// TestStaleDropWhileWaiting: a drop request that reaches a worker waiting
// for the schema topic after its callback gave up (its context ended) is
// stale, as it is in handle: the records held meanwhile and the open
// batch are kept. Dropping them lost the held records of partitions the
// batch had none of, which no rewind covers.
func TestStaleDropWhileWaiting(t *testing.T) {
	p := &Pipeline{log: slog.New(slog.DiscardHandler), ren: newRenamer()}
	w := &worker{p: p, topic: "p.db.t", in: make(chan msg, 4), log: p.log}
	w.buf = batch.NewAppend([]string{"v"}, batch.Limits{})
	if err := w.buf.Add(batch.Event{Op: batch.OpCreate, Row: []any{1}, Partition: 0, Offset: 7}, time.Now()); err != nil {
		t.Fatal(err)
	}
	held := &kgo.Record{Topic: w.topic, Partition: 1, Offset: 3}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	done := make(chan error, 1)
	w.in <- msg{rec: held}
	w.in <- msg{ctl: ctlDrop, ctx: gone, done: done}
	calls := 0
	err := w.waitFor(t.Context(), func() (bool, error) {
		calls++
		return len(done) > 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.held) != 1 || w.held[0].rec != held {
		t.Errorf("held %d messages after a stale drop, want the record of partition 1 kept", len(w.held))
	}
	if w.buf.Len() != 1 {
		t.Errorf("the batch holds %d events after a stale drop, want 1", w.buf.Len())
	}
}

// TestDropWhileWaitingLetsGoOfTheRecordInHand: a drop (a revoke) that
// reaches a worker while it waits for the schema topic before buffering a
// record (add's awaitSchema) rewinds the partitions it keeps to the
// abandoned batch's first records. The record in hand comes again from
// there (or, its partition revoked, to the next owner), so it must not be
// buffered: buffered, it marked the records of its partition from the
// rewound offset up to it as held, and they were skipped when fetched
// again. make test's TestScaleOutRenames lost an update that way (a
// column-rename table's row kept its value before the last update). A
// record of a kept partition the batch held nothing of is not fetched
// again and stays in hand.
func TestDropWhileWaitingLetsGoOfTheRecordInHand(t *testing.T) {
	const topic = "p.db.t"
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	for _, c := range []struct {
		name string
		rec  *kgo.Record
		gone bool
	}{
		{"rewound partition, after the batch's first record", &kgo.Record{Topic: topic, Partition: 0, Offset: 9}, true},
		{"revoked partition", &kgo.Record{Topic: topic, Partition: 2, Offset: 5}, true},
		{"kept partition the batch held nothing of", &kgo.Record{Topic: topic, Partition: 1, Offset: 4}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Pipeline{log: slog.New(slog.DiscardHandler), ren: newRenamer(), cl: cl}
			p.own(map[string][]int32{topic: {0, 1}}, true) // partition 2 was revoked
			w := &worker{p: p, topic: topic, in: make(chan msg, 4), log: p.log}
			w.buf = batch.NewAppend([]string{"v"}, batch.Limits{})
			for _, off := range []int64{7, 8} {
				if err := w.buf.Add(batch.Event{Op: batch.OpCreate, Row: []any{1}, Partition: 0, Offset: off}, time.Now()); err != nil {
					t.Fatal(err)
				}
			}
			w.inHand = c.rec
			done := make(chan error, 1)
			w.in <- msg{ctl: ctlDrop, ctx: t.Context(), done: done}
			err := w.waitFor(t.Context(), func() (bool, error) { return len(done) > 0, nil })
			if err != nil {
				t.Fatal(err)
			}
			if w.buf.Len() != 0 {
				t.Fatalf("the batch holds %d events after the drop, want none", w.buf.Len())
			}
			if w.inHandGone != c.gone {
				t.Errorf("record in hand %d/%d: let go %v, want %v", c.rec.Partition, c.rec.Offset, w.inHandGone, c.gone)
			}
		})
	}
}
