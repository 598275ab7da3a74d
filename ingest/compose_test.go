package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestComposeEnvIsValid keeps docker-compose.yml's ingest service true: every
// INGEST_* variable it sets is a setting ingest knows (an unknown name would be
// ignored silently), and together they pass --check-config.
func TestComposeEnvIsValid(t *testing.T) {
	compose, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var help bytes.Buffer
	_ = run(t.Context(), []string{"ingest", "--help"}, env(nil), &help, &help)
	vars := map[string]string{}
	re := regexp.MustCompile(`(?m)^\s+(INGEST_[A-Z0-9_]+):\s*(.*)$`)
	for _, m := range re.FindAllStringSubmatch(string(compose), -1) {
		name, value := m[1], strings.Trim(strings.TrimSpace(m[2]), `'"`)
		vars[name] = value
		if !strings.Contains(help.String(), "(env "+name+")") && !strings.HasSuffix(name, "_PASSWORD") {
			t.Errorf("docker-compose.yml sets %s, which is not an ingest setting", name)
		}
	}
	if len(vars) < 5 {
		t.Fatalf("found only %d INGEST_* variables in docker-compose.yml", len(vars))
	}
	var out bytes.Buffer
	if err := run(t.Context(), []string{"ingest", "--check-config"}, env(vars), &out, &out); err != nil {
		t.Fatalf("docker-compose.yml's ingest settings fail --check-config: %v\n%s", err, out.String())
	}
}
