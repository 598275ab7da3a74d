//go:build integration

package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/test/testenv"
)

// syncBuffer is a bytes.Buffer that a running ingest writes its log to
// while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// renameTopics creates, on the stack's Kafka, the schema-change topic of a
// new prefix and one table topic under it, removed when the test ends.
func renameTopics(t *testing.T, brokers []string) (prefix, tableTopic string) {
	t.Helper()
	prefix = testenv.Unique(t, "ren")
	tableTopic = prefix + ".db.t"
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopics(t.Context(), 1, 1, nil, prefix, tableTopic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(t.Context()), prefix, tableTopic) })
	return prefix, tableTopic
}

// TestStartupWarnsRenamesNotFollowed starts ingest (embedded catalog) on
// the stack's Kafka, where the schema-change topic <prefix> and a table
// topic <prefix>.db.t exist. With --topic-regex '<prefix>\..*' it must log
// one warning naming the topic, the loss and the setting; with
// '<prefix>(\..*)?' none, and the info line that renames are followed.
func TestStartupWarnsRenamesNotFollowed(t *testing.T) {
	brokers := testenv.KafkaBrokers(t)
	prefix, _ := renameTopics(t, brokers)
	quoted := strings.ReplaceAll(prefix, ".", `\.`)
	start := func(t *testing.T, regex string, until func(warns, infos []string) bool) (warns, infos []string) {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		var log syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- runArgs(ctx, []string{"--state-dir=" + t.TempDir(), "--kafka-brokers=" + strings.Join(brokers, ","),
				"--topic-regex=" + regex, "--group-id=" + testenv.Unique(t, "ren"), "--metrics-addr=off", "--log-format=json",
				"--startup-timeout=30s"}, env(nil), &log)
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("ingest: %v\n%s", err, log.Bytes())
			}
		}()
		testenv.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
			select {
			case err := <-done:
				done <- err
				t.Fatalf("ingest ended before its rename check: %v\n%s", err, log.Bytes())
			default:
			}
			warns, infos = logMessages(t, log.Bytes(), "WARN"), logMessages(t, log.Bytes(), "INFO")
			if !until(warns, infos) {
				return fmt.Errorf("no rename check logged yet:\n%s", log.Bytes())
			}
			return nil
		})
		return warns, infos
	}
	renameWarns := func(warns []string) (out []string) {
		for _, w := range warns {
			if strings.Contains(w, "renames are NOT followed") {
				out = append(out, w)
			}
		}
		return out
	}

	t.Run("left out", func(t *testing.T) {
		warns, _ := start(t, quoted+`\..*`, func(warns, _ []string) bool { return len(renameWarns(warns)) > 0 })
		got := renameWarns(warns)
		if len(got) != 1 {
			t.Fatalf("%d rename warnings, want 1: %q", len(got), got)
		}
		for _, want := range []string{"the schema-change topic " + prefix + " exists but is not consumed",
			"only the rows written after the rename", "--topic-regex (INGEST_TOPIC_REGEX)", "'" + quoted + `(\..*)?'`} {
			if !strings.Contains(got[0], want) {
				t.Errorf("the warning lacks %q: %s", want, got[0])
			}
		}
	})
	t.Run("included", func(t *testing.T) {
		followed := "table renames are followed: the schema-change topic is consumed"
		warns, _ := start(t, quoted+`(\..*)?`, func(_, infos []string) bool {
			for _, m := range infos {
				if m == followed {
					return true
				}
			}
			return false
		})
		if got := renameWarns(warns); len(got) != 0 {
			t.Errorf("rename warnings with the topic consumed: %q", got)
		}
	})
}

// logMessages are the messages of level in the JSON log lines of out.
func logMessages(t *testing.T, out []byte, level string) []string {
	t.Helper()
	var msgs []string
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == level {
			msgs = append(msgs, rec.Msg)
		}
	}
	return msgs
}
