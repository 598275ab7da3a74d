//go:build integration

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/binlake/binlake/test/s3tables"
	"github.com/binlake/binlake/test/testenv"
	"github.com/binlake/binlake/test/validate"
)

// CatalogEnv selects the catalog the ingest processes of the end-to-end
// tests write through. Unset: the stack's REST catalog. "s3tables": an
// in-process S3 Tables stand-in (test/s3tables) in front of it, which
// verifies every request's SigV4 signature, enforces S3 Tables' rules and
// runs managed maintenance (ingest maintain against the stack's catalog,
// compaction and snapshot expiry, on its own schedule and without
// cooperating with ingest), with ingest started as on S3 Tables: --sigv4
// --sigv4-service s3tables, the table bucket ARN as warehouse. The tests'
// readers still read the stack's catalog directly. make test runs
// TestIngestPipeline, TestIngestKill and TestIngestBothProducersTypes so.
const CatalogEnv = "BINLAKE_TEST_CATALOG"

func throughS3Tables() bool { return os.Getenv(CatalogEnv) == "s3tables" }

// parallelThroughS3Tables runs the test in parallel with the others when
// through the stand-in: make test runs the three tests so on their own,
// each with its own stand-in, tables and (the types test only) Debezium
// connector, and they mostly wait.
func parallelThroughS3Tables(t *testing.T) {
	if throughS3Tables() {
		t.Parallel()
	}
}

// e2eCreds are the only SigV4 credentials the stand-in accepts; never
// real. The data files reach MinIO with the stack's keys, given to ingest
// apart (INGEST_S3_ACCESS_KEY_ID), as in ingest's sigv4 test.
var e2eCreds = aws.Credentials{AccessKeyID: "AKIDE2ETEST", SecretAccessKey: "e2e-test-secret", SessionToken: "e2e-test-token"}

const e2eBucketARN = "arn:aws:s3tables:us-east-1:111122223333:bucket/e2e"

// lakeOpts are the managed maintenance settings of a test through the
// stand-in. S3 Tables' defaults are 512 MB files, keep at least 1
// snapshot, expire after 120 h; the tests compact whatever carries a
// delete or is two small files, every maintainEvery.
type lakeOpts struct {
	// expireOlderThan: default 1s.
	expireOlderThan time.Duration
	// retainLast: default 1 (S3 Tables' minimum).
	retainLast int
	// record notes the table's snapshots before each expiry in lake.rec,
	// for validators that walk the whole history (the offset tiling).
	// The expiry then runs in a process of its own, killed after
	// recordBound: with expireOlderThan larger than recordBound plus an
	// ingest commit's build-to-land time, no snapshot that landed after
	// the note can be old enough to expire, so every expired snapshot
	// was noted. A violation fails the history walk; it cannot pass.
	record bool
}

// recordBound is how long an expiry after a note may run (see
// lakeOpts.record).
const recordBound = 10 * time.Second

// maintainEvery is the stand-in's maintenance schedule in the tests.
const maintainEvery = 2 * time.Second

// lake is where the ingest processes of a test write: env reaches it.
type lake struct {
	ice     testenv.Iceberg
	env     []string          // INGEST_* (and AWS_*) settings of ingest processes
	standIn *s3tables.Handler // nil: the stack's catalog directly
	rec     *validate.Recorder
	opts    lakeOpts
	bin     string // the ingest binary maintenance runs

	mu   sync.Mutex
	last string // the last maintenance run's summary line, for failures
}

// keyedLake is the stack's catalog with the object store's keys in
// ingest's own S3 settings: for a test whose AWS_* variables are another
// service's (Glue, MSK IAM), which the default chain would otherwise sign
// the data files with.
func keyedLake(t *testing.T) *lake {
	ice := testenv.IcebergEnv(t)
	return &lake{ice: ice, env: []string{
		"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region,
		"INGEST_S3_ACCESS_KEY_ID=" + ice.AccessKey, "INGEST_S3_SECRET_ACCESS_KEY=" + ice.SecretKey,
	}}
}

// newLake returns the stack's catalog, or with BINLAKE_TEST_CATALOG=s3tables
// a stand-in with managed maintenance in front of it, serving until the
// test ends.
func newLake(t *testing.T, o lakeOpts) *lake {
	t.Helper()
	ice := testenv.IcebergEnv(t)
	l := &lake{ice: ice, opts: o}
	if !throughS3Tables() {
		l.env = []string{"INGEST_CATALOG_URI=" + ice.URI, "INGEST_S3_ENDPOINT=" + ice.S3Endpoint, "INGEST_S3_REGION=" + ice.Region}
		return l
	}
	if l.opts.expireOlderThan == 0 {
		l.opts.expireOlderThan = time.Second
	}
	if l.opts.retainLast == 0 {
		l.opts.retainLast = 1
	}
	if l.opts.record {
		l.rec = &validate.Recorder{}
	}
	l.bin = binary(t, "ingest")
	var uri string
	l.standIn, uri = s3tables.Start(t, s3tables.Config{Backend: ice.URI, Region: "us-east-1", Credentials: e2eCreds,
		Maintain: l.maintain, MaintainEvery: maintainEvery})
	l.env = []string{
		"INGEST_CATALOG_URI=" + uri, "INGEST_SIGV4=true", "INGEST_SIGV4_SERVICE=s3tables", "INGEST_WAREHOUSE=" + e2eBucketARN,
		"INGEST_S3_REGION=us-east-1", "INGEST_S3_ENDPOINT=" + ice.S3Endpoint,
		"INGEST_S3_ACCESS_KEY_ID=" + ice.AccessKey, "INGEST_S3_SECRET_ACCESS_KEY=" + ice.SecretKey,
		"AWS_ACCESS_KEY_ID=" + e2eCreds.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + e2eCreds.SecretAccessKey,
		"AWS_SESSION_TOKEN=" + e2eCreds.SessionToken, "AWS_REGION=us-east-1",
	}
	t.Logf("ingest writes through the S3 Tables stand-in %s (managed maintenance every %s, expire older than %s, retain last %d)",
		uri, maintainEvery, l.opts.expireOlderThan, l.opts.retainLast)
	return l
}

// maintain is the stand-in's managed maintenance of one table: ingest
// maintain against the stack's catalog (unsigned, as AWS's own), with no
// lock shared with the ingest processes.
func (l *lake) maintain(ctx context.Context, ident []string) (s3tables.MaintenanceRun, error) {
	var run s3tables.MaintenanceRun
	steps := "compact,expire-snapshots"
	if l.rec != nil {
		steps = "compact"
	}
	out, err := l.maintainSteps(ctx, ident, steps, 0)
	run.Compactions, run.ExpiredSnapshots = out.compactions, out.expired
	if err != nil || l.rec == nil {
		return run, err
	}
	cat, err := rest.NewCatalog(ctx, "maintain", l.ice.URI, rest.WithAdditionalProps(l.ice.FileIOProps()))
	if err != nil {
		return run, err
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier(ident))
	if err != nil {
		return run, fmt.Errorf("loading %v to note its snapshots: %w", ident, err)
	}
	l.rec.Note(tbl)
	out, err = l.maintainSteps(ctx, ident, "expire-snapshots", recordBound)
	run.ExpiredSnapshots = out.expired
	return run, err
}

type maintained struct{ compactions, expired int }

// maintainSteps runs one ingest maintain of ident and reads what landed
// from its JSON log; timeout 0: no bound but ctx.
func (l *lake) maintainSteps(ctx context.Context, ident []string, steps string, timeout time.Duration) (maintained, error) {
	var m maintained
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, l.bin, "maintain")
	cmd.Env = append(os.Environ(),
		"INGEST_CATALOG_URI="+l.ice.URI, "INGEST_S3_ENDPOINT="+l.ice.S3Endpoint, "INGEST_S3_REGION="+l.ice.Region,
		"INGEST_MAINTAIN_TABLES="+strings.Join(ident, "."), "INGEST_MAINTAIN_STEPS="+steps,
		"INGEST_COMPACT_MIN_INPUT_FILES=2", "INGEST_MAINTAIN_ATTEMPTS=3",
		fmt.Sprintf("INGEST_EXPIRE_OLDER_THAN=%s", l.opts.expireOlderThan), fmt.Sprintf("INGEST_EXPIRE_RETAIN_LAST=%d", l.opts.retainLast),
		"INGEST_LOG_FORMAT=json")
	var outb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outb, &outb
	runErr := cmd.Run()
	sc := bufio.NewScanner(bytes.NewReader(outb.Bytes())) // outb stays whole for the error
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`"msg":"maintenance done"`)) {
			l.mu.Lock()
			l.last = steps + ": " + sc.Text()
			l.mu.Unlock()
		}
		var line struct {
			Msg        string `json:"msg"`
			Step       string `json:"step"`
			SnapshotID int64  `json:"snapshot_id"`
			Expired    int    `json:"snapshots_expired"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Msg != "step done" {
			continue
		}
		switch {
		case line.Step == "compact" && line.SnapshotID != 0:
			m.compactions++
		case line.Step == "expire-snapshots":
			m.expired += line.Expired
		}
	}
	if runErr != nil {
		tail := outb.String()
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return m, fmt.Errorf("ingest maintain %v (%s): %w\n%s", ident, steps, runErr, tail)
	}
	return m, nil
}

// requireManaged waits until the stand-in's maintenance landed at least
// one compaction and one expiry over the test's tables, and fails if it
// refused any request of the test's ingest processes. Without the
// stand-in it does nothing.
func (l *lake) requireManaged(t *testing.T, timeout time.Duration) {
	t.Helper()
	if l.standIn == nil {
		return
	}
	testenv.CheckFor(t, timeout, time.Second, func() error {
		s := l.standIn.Maintenance()
		if s.Compactions == 0 || s.Expiries == 0 {
			l.mu.Lock()
			defer l.mu.Unlock()
			return fmt.Errorf("managed maintenance of %v: %d runs, %d compactions, %d expiries, %d errors (last: %v); last run: %s",
				l.standIn.Tables(), s.Runs, s.Compactions, s.Expiries, s.Errors, s.LastError, l.last)
		}
		return nil
	})
	l.requireVerified(t)
}

// requireVerified fails if the stand-in refused a request: every request
// of ingest's must carry a valid signature.
func (l *lake) requireVerified(t *testing.T) {
	t.Helper()
	if l.standIn == nil {
		return
	}
	if n := l.standIn.Denied(); n != 0 {
		t.Fatalf("the S3 Tables stand-in refused %d requests of ingest signed with the right credentials", n)
	}
	if l.standIn.Forwarded() == 0 {
		t.Fatal("no request went through the S3 Tables stand-in")
	}
}

// report logs what went through the stand-in and what its maintenance
// landed, in one line a test's output can be searched for (S3TABLES ...).
func (l *lake) report(t *testing.T) {
	t.Helper()
	if l.standIn == nil {
		return
	}
	s := l.standIn.Maintenance()
	t.Logf("S3TABLES tables=%d requests=%d denied=%d maintenance_runs=%d compactions=%d expiries=%d expired_snapshots=%d errors=%d ingest_commits=%d ingest_commits_after_compaction=%d noted_snapshots=%d last_error=%v",
		len(l.standIn.Tables()), l.standIn.Forwarded(), l.standIn.Denied(), s.Runs, s.Compactions, s.Expiries, s.ExpiredSnapshots,
		s.Errors, s.Commits, s.CommitsAfterCompaction, l.noted(), s.LastError)
}

func (l *lake) noted() int {
	if l.rec == nil {
		return 0
	}
	return l.rec.Noted()
}

// ingestCommits is the commits of ident the backend accepted from ingest
// through the stand-in; -1 without it.
func (l *lake) ingestCommits(ident table.Identifier) int {
	if l.standIn == nil {
		return -1
	}
	return l.standIn.Maintenance(ident...).Commits
}

// requireCommitsAfterCompaction fails unless ingest committed on top of
// a compaction the stand-in's maintenance landed.
func (l *lake) requireCommitsAfterCompaction(t *testing.T) {
	t.Helper()
	if l.standIn == nil {
		return
	}
	if s := l.standIn.Maintenance(); s.CommitsAfterCompaction == 0 {
		t.Fatalf("ingest committed nothing after the managed compaction (%d compactions, %d ingest commits)", s.Compactions, s.Commits)
	}
}

var errNoIngestSnapshot = errors.New("no snapshot of ingest's")

// ingestSnapshotID is the newest snapshot of tbl that maintenance did not
// commit (no binlake.maintenance in its summary): what ingest wrote last.
func ingestSnapshotID(tbl *table.Table) (int64, error) {
	var id, seq int64 = 0, -1
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties["binlake.maintenance"] != "" {
			continue
		}
		if s.SequenceNumber > seq {
			id, seq = s.SnapshotID, s.SequenceNumber
		}
	}
	if seq < 0 {
		return 0, errNoIngestSnapshot
	}
	return id, nil
}
