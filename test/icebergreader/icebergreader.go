// Package icebergreader reads Iceberg tables with the Java reference
// implementation (iceberg-data's generic reader, which applies equality and
// position deletes itself), so tests check what ingest writes with a reader
// that shares no code with iceberg-go. The Java program lives in java/ and
// is built with Maven on first use.
package icebergreader

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildErr  error
)

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "java")
}

func build() error {
	buildOnce.Do(func() {
		d := dir()
		cmd := exec.Command("mvn", "-q", "-B", "package", "dependency:copy-dependencies",
			"-DoutputDirectory=target/lib", "-DincludeScope=runtime", "-DskipTests")
		cmd.Dir = d
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building the Java Iceberg reader: %v\n%s", err, out)
		}
	})
	return buildErr
}

// Row is one table row: column name → canonical value (nil for NULL).
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
	if err := build(); err != nil {
		return nil, err
	}
	if strings.ContainsAny(ident, "\r\n") {
		return nil, fmt.Errorf("java reader: table name %q has a line break", ident)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	rows, err := srv.read(ident)
	if err != nil {
		srv.stop()
	}
	return rows, err
}

// CountErr reads every live row of namespace.table with the Java reader
// as ReadErr does (every column decoded, deletes applied) and returns
// their number: the rows are neither rendered nor sent, so that timing it
// times the reader (the benchmarks), not JSON. A reader still reading
// after timeout is killed.
func CountErr(ident string, timeout time.Duration) (int64, error) {
	if err := build(); err != nil {
		return 0, err
	}
	if strings.ContainsAny(ident, "\r\n") {
		return 0, fmt.Errorf("java reader: table name %q has a line break", ident)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var n int64 = -1
	err := srv.request("COUNT "+ident, ident, timeout, func(line []byte) error {
		rest, ok := bytes.CutPrefix(line, []byte("ROWS "))
		if !ok {
			return fmt.Errorf("java reader on %s: want ROWS <n>, got %q", ident, line)
		}
		v, err := strconv.ParseInt(string(rest), 10, 64)
		n = v
		return err
	})
	if err != nil {
		srv.stop()
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("java reader on %s: no row count", ident)
	}
	return n, nil
}

// readTimeout bounds one table read; a reader stuck past it is killed.
const readTimeout = 5 * time.Minute

// server is the Java reader in serve mode: table names on its stdin, each
// answered by its rows (JSON lines) and a line END, or a line ERROR <json>.
type server struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	done   chan struct{} // closed when cmd has exited
}

var srv server

// start starts the JVM with the heap BINLAKE_JAVA_READER_HEAP (a -Xmx
// value), 512m unless set: the generic reader holds a data file's
// equality deletes in memory, which for the benchmarks' tables takes more.
func (s *server) start() error {
	d := dir()
	heap := os.Getenv("BINLAKE_JAVA_READER_HEAP")
	if heap == "" {
		heap = "512m"
	}
	cmd := exec.Command("java", "-Xmx"+heap, "-cp", filepath.Join(d, "target", "iceberg-reader-1.jar")+string(os.PathListSeparator)+filepath.Join(d, "target", "lib", "*"),
		"io.binlake.reader.ReadTable", "--serve")
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
		return fmt.Errorf("starting the java reader: %w", err)
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

func (s *server) read(ident string) ([]Row, error) {
	var rows []Row
	err := s.request(ident, ident, readTimeout, func(line []byte) error {
		var r Row
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("java reader output %q: %w", line, err)
		}
		rows = append(rows, r)
		return nil
	})
	return rows, err
}

// request sends the request line req (about table ident) and passes each
// line of the answer before END to onLine; a reader still answering after
// timeout is killed.
func (s *server) request(req, ident string, timeout time.Duration, onLine func([]byte) error) error {
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return err
		}
	}
	cmd := s.cmd
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if _, err := io.WriteString(s.in, req+"\n"); err != nil {
		return fmt.Errorf("java reader on %s: %v\n%s", ident, err, s.stderr)
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("java reader on %s stopped (killed after %s, or failed): %v\n%s", ident, timeout, err, s.stderr)
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case string(line) == "END":
			return nil
		case bytes.HasPrefix(line, []byte("ERROR ")):
			var msg string
			if err := json.Unmarshal(line[len("ERROR "):], &msg); err != nil {
				msg = string(line)
			}
			s.stderr.Reset() // the JVM is fine: the table was not readable
			return fmt.Errorf("java reader on %s: %s", ident, msg)
		}
		if err := onLine(line); err != nil {
			return err
		}
	}
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
