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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
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

// ReadErr is Read without a testing.TB (for the demo).
func ReadErr(ident string) ([]Row, error) {
	if err := build(); err != nil {
		return nil, err
	}
	d := dir()
	cmd := exec.Command("java", "-Xmx512m", "-cp", filepath.Join(d, "target", "iceberg-reader-1.jar")+string(os.PathListSeparator)+filepath.Join(d, "target", "lib", "*"),
		"io.binlake.reader.ReadTable", ident)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("java reader on %s: %v\n%s", ident, err, stderr.String())
	}
	var rows []Row
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("java reader output %q: %w", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows, sc.Err()
}
