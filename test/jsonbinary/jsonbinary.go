// Package jsonbinary renders MySQL binary JSON documents with the Java
// library Debezium's MySQL connector uses for JSON columns
// (JsonBinary.parseAsString of io.debezium:mysql-binlog-connector-java), so
// tests can hold capture's JSON text against Debezium's byte for byte with
// a reference that shares no code with capture. The Java program lives in
// java/ and is built with Maven on first use; it needs Java 17 and mvn,
// not the local stack.
package jsonbinary

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/binlake/binlake/test/testenv"
)

// LibraryVersion is the mysql-binlog-connector-java release rendering the
// documents: the one Debezium 3.5.0.Final depends on (debezium-build-parent
// 3.5.0.Final, property version.mysql.binlog). Keep in step with java/pom.xml.
const LibraryVersion = "0.40.6"

var (
	buildOnce sync.Once
	buildErr  error
)

func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "java")
}

// Build compiles the Java program (once per process).
func Build() error {
	buildOnce.Do(func() {
		buildErr = testenv.WithMavenLock(func() error {
			cmd := exec.Command("mvn", "-q", "-B", "package", "dependency:copy-dependencies",
				"-DoutputDirectory=target/lib", "-DincludeScope=runtime", "-DskipTests")
			cmd.Dir = dir()
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("building the Java JSON renderer: %v\n%s", err, out)
			}
			return nil
		})
	})
	return buildErr
}

// Result is the Java library's answer for one document: its text, or the
// exception it threw (Err non-empty).
type Result struct {
	Text string
	Err  string
}

// ParseAsString renders each document (binary JSON, without the column's
// length prefix) as JsonBinary.parseAsString does, in one JVM run.
func ParseAsString(docs [][]byte) ([]Result, error) {
	if err := Build(); err != nil {
		return nil, err
	}
	d := dir()
	var in bytes.Buffer
	for _, doc := range docs {
		in.WriteString(hex.EncodeToString(doc))
		in.WriteByte('\n')
	}
	cmd := exec.Command("java", "-Xss16m", "-Dfile.encoding=UTF-8", "-cp",
		filepath.Join(d, "target", "jsonbinary-1.jar")+string(os.PathListSeparator)+filepath.Join(d, "target", "lib", "*"),
		"io.binlake.jsonbinary.ParseAsString")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("running the Java JSON renderer: %v\n%s", err, stderr.String())
	}
	var res []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "ok "):
			b, err := hex.DecodeString(line[3:])
			if err != nil {
				return nil, fmt.Errorf("decoding the Java renderer's line %d: %w", len(res)+1, err)
			}
			res = append(res, Result{Text: string(b)})
		case strings.HasPrefix(line, "error "):
			res = append(res, Result{Err: line[6:]})
		default:
			return nil, fmt.Errorf("unexpected line %d from the Java renderer: %q", len(res)+1, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(res) != len(docs) {
		return nil, fmt.Errorf("the Java renderer answered %d of %d documents\n%s", len(res), len(docs), stderr.String())
	}
	return res, nil
}
