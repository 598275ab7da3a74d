package main

import (
	"os"
	"strings"
	"testing"
)

// TestKafkaSecurityMatchesCapture keeps the two copies of the Kafka
// security settings one piece of code, and the two copies of the start-up
// retries too. The house layout lets the binaries share only schemas/ and
// test/, so each has its own kafkasec.go and startup.go; ingest's must stay
// capture's with the names changed, so that a fix made in one is made in
// both.
func TestKafkaSecurityMatchesCapture(t *testing.T) {
	for _, name := range []string{"kafkasec.go", "startup.go", "registrysec.go", "pprofsrv.go"} {
		src, err := os.ReadFile("../capture/" + name)
		if err != nil {
			t.Fatal(err)
		}
		own, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.NewReplacer("CAPTURE_", "INGEST_", "capture", "ingest").Replace(string(src))
		if string(own) == want {
			continue
		}
		a, b := strings.Split(want, "\n"), strings.Split(string(own), "\n")
		diff := false
		for i := 0; i < len(a) && i < len(b); i++ {
			if a[i] != b[i] {
				t.Errorf("ingest/%s differs from capture/%s (with capture→ingest) at line %d:\n capture: %s\n ingest:  %s\napply the change to both files", name, name, i+1, a[i], b[i])
				diff = true
				break
			}
		}
		if !diff {
			t.Errorf("ingest/%s and capture/%s (with capture→ingest) differ in length: %d and %d lines", name, name, len(b), len(a))
		}
	}
}
