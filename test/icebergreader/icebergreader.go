// Package icebergreader reads Iceberg tables with readers that share no
// code with iceberg-go, so tests check what ingest writes independently:
// the Java reference implementation (iceberg-data's generic reader, which
// applies equality and position deletes itself; java/, built with Maven on
// first use), and pyiceberg, DuckDB's iceberg extension and Apache Spark
// (readers.py, run with $BINLAKE_PYTHON; Spark's Iceberg jars come from
// spark/pom.xml). Every reader prints rows in the Java reader's canonical
// strings (see [Row]), so one comparison serves them all.
package icebergreader

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlake/binlake/test/testenv"
)

// Readers are the names [ReadWith] takes.
var Readers = []string{"java", "pyiceberg", "duckdb", "spark"}

func pkgDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

func dir() string { return filepath.Join(pkgDir(), "java") }

// mvnOnce runs a Maven build in a directory of this package once per
// process.
type mvnOnce struct {
	once sync.Once
	err  error
}

func (m *mvnOnce) run(what, sub string, args ...string) error {
	m.once.Do(func() {
		m.err = testenv.WithMavenLock(func() error {
			cmd := exec.Command("mvn", append([]string{"-q", "-B"}, args...)...)
			cmd.Dir = filepath.Join(pkgDir(), sub)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("building %s: %v\n%s", what, err, out)
			}
			return nil
		})
	})
	return m.err
}

var javaBuild, sparkJars mvnOnce

func build() error {
	return javaBuild.run("the Java Iceberg reader", "java", "package", "dependency:copy-dependencies",
		"-DoutputDirectory=target/lib", "-DincludeScope=runtime", "-DskipTests")
}

// buildSpark resolves Spark's Iceberg runtime and AWS bundle from Maven
// Central into spark/target/lib, and returns their paths.
func buildSpark() ([]string, error) {
	if err := sparkJars.run("the Spark reader's jars", "spark", "dependency:copy-dependencies",
		"-DoutputDirectory=target/lib", "-DincludeScope=runtime"); err != nil {
		return nil, err
	}
	jars, err := filepath.Glob(filepath.Join(pkgDir(), "spark", "target", "lib", "*.jar"))
	if err == nil && len(jars) != 2 {
		err = fmt.Errorf("spark reader: want the Iceberg Spark runtime and AWS bundle jars, found %v", jars)
	}
	return jars, err
}

//go:embed readers.py
var readersPy string

// Row is one table row: column name → canonical value (nil for NULL), as
// the Java reader renders it (ReadTable.java): decimals plain, timestamps
// UTC "uuuu-MM-dd HH:mm:ss.SSSSSS", dates and times as Java's LocalDate and
// LocalTime print them, binary as lower-case hex, booleans true or false,
// floats as Java's text, structs as {name=value,...} with NULL.
type Row map[string]*string

// Read returns every live row of namespace.table as the Java reader sees it.
// The catalog and S3 endpoints come from the BINLAKE_* and AWS_* variables.
func Read(t testing.TB, ident string) []Row {
	t.Helper()
	rows, err := ReadErr(ident)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// ReadErr is Read without a testing.TB (for the demo). One JVM serves
// every read of the process (a JVM and catalog start cost seconds, and the
// lake tests read hundreds of tables); it loads the table from the catalog
// again for each read, and is started again after a failure.
func ReadErr(ident string) ([]Row, error) {
	return ReadWith("java", ident)
}

// ReadWith returns every live row of namespace.table as reader (one of
// [Readers]) reads it through its own engine: Iceberg's Java generic
// reader; pyiceberg's scan().to_arrow(); DuckDB's iceberg extension,
// SELECT * from the REST catalog attached; Spark's spark.table in local
// mode. One process per reader serves every read of the test process (a
// JVM or Spark session starts in seconds); it loads the table from the
// catalog again for each read, and is started again after a failure. An
// error of a reader that refused the table holds the engine's message.
func ReadWith(reader, ident string) ([]Row, error) {
	s, err := serverFor(reader)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(ident, "\r\n") {
		return nil, fmt.Errorf("%s reader: table name %q has a line break", reader, ident)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.read(ident)
	if err != nil && s.crashed {
		s.stop()
	}
	return rows, err
}

// ReadMetadataWith returns every live row of the table whose metadata file
// is at location (a metadata.json, e.g. file:///…/metadata/00003-….json),
// read by reader without any catalog: the Java reader through Iceberg's
// StaticTableOperations, pyiceberg through StaticTable.from_metadata,
// DuckDB through iceberg_scan. Spark reads only through the catalog.
func ReadMetadataWith(reader, location string) ([]Row, error) {
	s, err := serverFor(reader)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(location, "\r\n") {
		return nil, fmt.Errorf("%s reader: metadata location %q has a line break", reader, location)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rows, err := s.readRequest("METADATA "+location, location)
	if err != nil && s.crashed {
		s.stop()
	}
	return rows, err
}

// Start builds reader and starts its process in the background, if not
// yet running, without waiting: a test starts the slow ones (a Maven
// build, a JVM, a Spark session) early so that they come up while it
// writes its tables. A failure shows in the first ReadWith.
func Start(reader string) {
	go func() {
		s, err := serverFor(reader)
		if err != nil {
			return // ReadWith builds again, and fails the same way
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.cmd == nil {
			_ = s.start()
		}
	}()
}

var servers = map[string]*server{}
var serversMu sync.Mutex

// serverFor builds reader's program (once) and returns its server.
func serverFor(reader string) (*server, error) {
	if !slices.Contains(Readers, reader) {
		return nil, fmt.Errorf("no Iceberg reader %q (readers: %s)", reader, strings.Join(Readers, ", "))
	}
	var newCmd func() *exec.Cmd
	switch reader {
	case "java":
		if err := build(); err != nil {
			return nil, err
		}
		// The heap is BINLAKE_JAVA_READER_HEAP (a -Xmx value), 512m unless
		// set: the generic reader holds a data file's equality deletes in
		// memory, which for the benchmarks' tables takes more.
		heap := os.Getenv("BINLAKE_JAVA_READER_HEAP")
		if heap == "" {
			heap = "512m"
		}
		newCmd = func() *exec.Cmd {
			d := dir()
			return exec.Command("java", "-Xmx"+heap, "-cp", filepath.Join(d, "target", "iceberg-reader-1.jar")+string(os.PathListSeparator)+filepath.Join(d, "target", "lib", "*"),
				"io.binlake.reader.ReadTable", "--serve")
		}
	default:
		var env []string
		if reader == "spark" {
			jars, err := buildSpark()
			if err != nil {
				return nil, err
			}
			env = append(env, "BINLAKE_SPARK_JARS="+strings.Join(jars, ","))
		}
		// stack.sh installs the readers in a venv and names its
		// interpreter BINLAKE_PYTHON; without it, python3 must have them.
		python := os.Getenv("BINLAKE_PYTHON")
		if python == "" {
			python = "python3"
		}
		newCmd = func() *exec.Cmd {
			cmd := exec.Command(python, "-c", readersPy, reader)
			cmd.Env = append(os.Environ(), env...)
			return cmd
		}
	}
	serversMu.Lock()
	defer serversMu.Unlock()
	s := servers[reader]
	if s == nil {
		s = &server{name: reader + " reader", newCmd: newCmd}
		servers[reader] = s
	}
	return s, nil
}

// readTimeout bounds one table read; a reader stuck past it is killed.
const readTimeout = 5 * time.Minute

// server is a reader in serve mode (the Java reader's --serve, or
// readers.py): table names on its stdin, each answered by its rows (JSON
// lines) and a line END, or a line ERROR <json>.
type server struct {
	name    string
	newCmd  func() *exec.Cmd
	mu      sync.Mutex
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  *tailBuffer
	done    chan struct{} // closed when cmd has exited
	crashed bool          // the last read failed other than by an ERROR line
}

func (s *server) start() error {
	cmd := s.newCmd()
	s.stderr = &tailBuffer{max: 64 << 10}
	cmd.Stderr = s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the %s: %w", s.name, err)
	}
	s.cmd, s.in, s.out, s.done = cmd, in, bufio.NewReaderSize(out, 1<<20), make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	return nil
}

// stop kills the reader (after a failure; the next read starts another).
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func (s *server) read(ident string) ([]Row, error) { return s.readRequest(ident, ident) }

// readRequest sends req (a table name, or METADATA and a location) and
// returns the rows of the answer.
func (s *server) readRequest(req, ident string) ([]Row, error) {
	var rows []Row
	err := s.request(req, ident, readTimeout, func(line []byte) error {
		var r Row
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%s output %q: %w", s.name, line, err)
		}
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// request sends the request line req (about table ident) and passes each
// line of the answer before END to onLine; a reader still answering after
// timeout is killed. An ERROR answer is the table's error, not the
// reader's; any other failure marks the reader crashed.
func (s *server) request(req, ident string, timeout time.Duration, onLine func([]byte) error) error {
	s.crashed = true
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return err
		}
	}
	cmd := s.cmd
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if _, err := io.WriteString(s.in, req+"\n"); err != nil {
		return fmt.Errorf("%s on %s: %v\n%s", s.name, ident, err, s.stderr)
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("%s on %s stopped (killed after %s, or failed): %v\n%s", s.name, ident, timeout, err, s.stderr)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case string(line) == "END":
			s.crashed = false
			return nil
		case bytes.HasPrefix(line, []byte("ERROR ")):
			var msg string
			if err := json.Unmarshal(line[len("ERROR "):], &msg); err != nil {
				msg = string(line)
			}
			s.stderr.Reset() // the reader is fine: the table was not readable
			s.crashed = false
			return fmt.Errorf("%s on %s: %s", s.name, ident, msg)
		}
		if err := onLine(line); err != nil {
			return err
		}
	}
}

// CountErr reads every live row of namespace.table with the Java reader
// as ReadErr does (every column decoded, deletes applied) and returns
// their number: the rows are neither rendered nor sent, so that timing it
// times the reader (the benchmarks), not JSON. A reader still reading
// after timeout is killed.
func CountErr(ident string, timeout time.Duration) (int64, error) {
	s, err := serverFor("java")
	if err != nil {
		return 0, err
	}
	if strings.ContainsAny(ident, "\r\n") {
		return 0, fmt.Errorf("java reader: table name %q has a line break", ident)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64 = -1
	err = s.request("COUNT "+ident, ident, timeout, func(line []byte) error {
		rest, ok := bytes.CutPrefix(line, []byte("ROWS "))
		if !ok {
			return fmt.Errorf("java reader on %s: want ROWS <n>, got %q", ident, line)
		}
		v, err := strconv.ParseInt(string(rest), 10, 64)
		n = v
		return err
	})
	if err != nil {
		if s.crashed {
			s.stop()
		}
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("java reader on %s: no row count", ident)
	}
	return n, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = w.b[:0]
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
