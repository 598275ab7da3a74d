//go:build integration

package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3://
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/binlake/binlake/ingest/internal/lake"
	"github.com/binlake/binlake/ingest/internal/schemamap"
	"github.com/binlake/binlake/test/s3tables"
	"github.com/binlake/binlake/test/testenv"
)

// s3tRecord is a Debezium JSON-with-schema create event for row id of
// table t (no schema registry needed).
func s3tRecord(id int64) *kgo.Record {
	key := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Key","fields":[{"type":"int64","optional":false,"field":"id"}]},"payload":{"id":%d}}`, id)
	row := `{"type":"struct","optional":true,"name":"bl.db.t.Value","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"field":"%s"}`
	value := fmt.Sprintf(`{"schema":{"type":"struct","optional":false,"name":"bl.db.t.Envelope","version":2,"fields":[`+row+`,`+row+`,`+
		`{"type":"struct","optional":false,"name":"io.debezium.connector.mysql.Source","field":"source","fields":[{"type":"int64","optional":false,"field":"ts_ms"},{"type":"string","optional":false,"field":"file"},{"type":"int64","optional":false,"field":"pos"},{"type":"int32","optional":false,"field":"row"}]},`+
		`{"type":"string","optional":false,"field":"op"}]},`+
		`"payload":{"before":null,"after":{"id":%d,"name":"n%d"},"source":{"ts_ms":1700000000000,"file":"mysql-bin.000001","pos":%d,"row":0},"op":"c"}}`,
		"before", "after", id, id, 1000+id)
	return &kgo.Record{Key: []byte(key), Value: []byte(value)}
}

// lockedBuffer is a log sink written by ingest's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestIngestThroughS3TablesStandIn runs ingest as in production against S3
// Tables (--sigv4 --sigv4-service s3tables, warehouse = table bucket ARN),
// the catalog being the stand-in that verifies every signature in front of
// the stack's REST catalog: ingest creates the table and its rows land
// (read back from the backing catalog), with no request refused. Then a
// wrong secret, and a clock 10 minutes off, stop ingest at start with an
// error that names the credential source to check.
//
// Two sets of keys, kept apart as they are not in production: SigV4 signs
// with test credentials from AWS_* (the stand-in accepts only those), and
// the data files reach MinIO with the stack's keys through
// INGEST_S3_ACCESS_KEY_ID/INGEST_S3_SECRET_ACCESS_KEY. In production both
// are unset and the AWS default chain serves both.
func TestIngestThroughS3TablesStandIn(t *testing.T) {
	ice := testenv.IcebergEnv(t)
	brokers := testenv.KafkaBrokers(t)
	ctx := t.Context()
	db := testenv.Unique(t, "s3t")
	topic := "bl." + db + ".t"

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating topic: %v", err)
	}
	t.Cleanup(func() { _, _ = adm.DeleteTopics(context.WithoutCancel(ctx), topic) })
	for id := int64(1); id <= 3; id++ {
		if err := cl.ProduceSync(ctx, s3tRecord(id)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	backing, err := rest.NewCatalog(ctx, "backing", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	ident := schemamap.Namer{}.Ident(db, "t")
	t.Cleanup(func() {
		ctx := context.WithoutCancel(ctx)
		_ = backing.DropTable(ctx, ident)
		_ = backing.DropNamespace(ctx, table.Identifier{ident[0]})
	})

	standIn, uri := s3tables.Start(t, s3tables.Config{Backend: ice.URI, Region: "us-east-1", Credentials: s3tables.TestCredentials})
	args := []string{"--sigv4", "--sigv4-service", "s3tables", "--s3-region", "us-east-1",
		"--warehouse", s3tables.TestBucketARN, "--catalog-uri", uri}
	env := map[string]string{
		"INGEST_KAFKA_BROKERS":        strings.Join(brokers, ","),
		"INGEST_GROUP_ID":             testenv.Unique(t, "g"),
		"INGEST_TOPICS":               topic,
		"INGEST_S3_ENDPOINT":          ice.S3Endpoint,
		"INGEST_S3_ACCESS_KEY_ID":     ice.AccessKey,
		"INGEST_S3_SECRET_ACCESS_KEY": ice.SecretKey,
		"INGEST_FLUSH_INTERVAL":       "1s",
		"INGEST_METRICS_ADDR":         "off",
	}
	getenv := func(k string) string { return env[k] }
	s3tables.SetAWSEnv(t, s3tables.TestCredentials)

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runArgs(rctx, args, getenv, logs) }()

	testenv.CheckFor(t, 90*time.Second, 500*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("ingest stopped: %v\n%s", err, logs)
		default:
		}
		tbl, err := backing.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("loading %v from the backing catalog: %w", ident, err)
		}
		if tbl.CurrentSnapshot() == nil {
			return errors.New("no snapshot yet")
		}
		at, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			return fmt.Errorf("scanning: %w", err)
		}
		defer at.Release()
		if at.NumRows() != 3 {
			return fmt.Errorf("%d rows, want 3", at.NumRows())
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ingest stopping: %v\n%s", err, logs)
	}
	if n := standIn.Denied(); n != 0 {
		t.Fatalf("the stand-in refused %d requests of a correctly configured ingest:\n%s", n, logs)
	}
	if n := standIn.Forwarded(); n < 3 {
		t.Fatalf("the stand-in forwarded %d requests: ingest did not go through it", n)
	}
	t.Logf("the stand-in verified and forwarded %d requests", standIn.Forwarded())

	for _, tc := range s3tables.Refusals() {
		t.Run(tc.Name, func(t *testing.T) {
			s3tables.SetAWSEnv(t, tc.Creds)
			standIn.SetClockOffset(tc.Offset)
			defer standIn.SetClockOffset(0)
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			s3tables.CheckRefused(t, runArgs(sctx, args, getenv, &lockedBuffer{}), lake.ErrCatalogRefused, tc)
		})
	}
}
