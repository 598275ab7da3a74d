package main

import (
	"os"
	"strings"
	"testing"
)

// TestKafkaSecurityMatchesCapture keeps the two copies of the Kafka
// security settings one piece of code. The house layout lets the binaries
// share only schemas/ and test/, so each has its own kafkasec.go; ingest's
// must stay capture's with the names changed, so that a fix made in one is
// made in both.
func TestKafkaSecurityMatchesCapture(t *testing.T) {
	src, err := os.ReadFile("../capture/kafkasec.go")
	if err != nil {
		t.Fatal(err)
	}
	own, err := os.ReadFile("kafkasec.go")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer("CAPTURE_", "INGEST_", "capture", "ingest").Replace(string(src))
	if string(own) == want {
		return
	}
	a, b := strings.Split(want, "\n"), strings.Split(string(own), "\n")
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			t.Fatalf("ingest/kafkasec.go differs from capture/kafkasec.go (with capture→ingest) at line %d:\n capture: %s\n ingest:  %s\napply the change to both files", i+1, a[i], b[i])
		}
	}
	t.Fatalf("ingest/kafkasec.go and capture/kafkasec.go (with capture→ingest) differ in length: %d and %d lines", len(b), len(a))
}
