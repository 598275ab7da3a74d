package main

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// syncedCopies are the files ingest keeps equal to capture's, with the
// names changed: each ingest file and the path of capture's copy, with the
// path capture's copy had while it lived in capture's package main.
var syncedCopies = []struct{ own, capture, capturePackageMain string }{
	{"internal/kafkasec/kafkasec.go", "../capture/internal/kafkasec/kafkasec.go", "../capture/kafkasec.go"},
	{"internal/startup/startup.go", "../capture/internal/startup/startup.go", "../capture/startup.go"},
	{"internal/registrysec/registrysec.go", "../capture/internal/registrysec/registrysec.go", "../capture/registrysec.go"},
	{"internal/pprofsrv/pprofsrv.go", "../capture/internal/pprofsrv/pprofsrv.go", "../capture/pprofsrv.go"},
	{"internal/envflag/envflag.go", "../capture/internal/envflag/envflag.go", "../capture/envflag.go"},
}

// TestKafkaSecurityMatchesCapture keeps the two copies of the Kafka
// security settings one piece of code, and the two copies of the start-up
// retries, the registry security and the profile server too. The house
// layout lets the binaries share only schemas/ and test/, so each has its
// own package of each; ingest's must stay capture's with the names changed,
// so that a fix made in one is made in both. While capture's copy is still
// in capture's package main (the path before its move), the comparison is
// skipped: the two cannot be equal until both are packages.
func TestKafkaSecurityMatchesCapture(t *testing.T) {
	for _, c := range syncedCopies {
		src, err := os.ReadFile(c.capture)
		if errors.Is(err, fs.ErrNotExist) {
			if _, err := os.Stat(c.capturePackageMain); err == nil {
				t.Logf("capture's copy of %s is still %s (package main); compare again once it is %s", c.own, c.capturePackageMain, c.capture)
				continue
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		own, err := os.ReadFile(c.own)
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
				t.Errorf("ingest/%s differs from %s (with capture→ingest) at line %d:\n capture: %s\n ingest:  %s\napply the change to both files", c.own, c.capture, i+1, a[i], b[i])
				diff = true
				break
			}
		}
		if !diff {
			t.Errorf("ingest/%s and %s (with capture→ingest) differ in length: %d and %d lines", c.own, c.capture, len(b), len(a))
		}
	}
}
