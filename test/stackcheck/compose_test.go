package main

import (
	"os"
	"regexp"
	"testing"
)

// TestComposeVersions keeps docker-compose.yml in step with the stack every
// test runs (deploy/local/stack.sh): the Kafka, Apicurio Registry and
// Iceberg REST catalog images carry the versions the script installs, so
// that the Docker path runs what was tested. (No Docker engine exists on the
// build machines to run the file itself.)
func TestComposeVersions(t *testing.T) {
	script, err := os.ReadFile("../../deploy/local/stack.sh")
	if err != nil {
		t.Fatal(err)
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	version := func(name string) string {
		m := regexp.MustCompile(`(?m)^` + name + `=([0-9][^ \t\n#]*)`).FindSubmatch(script)
		if m == nil {
			t.Fatalf("stack.sh sets no %s", name)
		}
		return string(m[1])
	}
	for _, c := range []struct{ image, variable string }{
		{"apache/kafka", "KAFKA_VERSION"},
		{"apicurio/apicurio-registry", "APICURIO_VERSION"},
		{"apache/iceberg-rest-fixture", "ICEBERG_REST_VERSION"},
	} {
		want := version(c.variable)
		m := regexp.MustCompile(`(?m)^\s+image:\s*` + regexp.QuoteMeta(c.image) + `:(\S+)\s*$`).FindSubmatch(compose)
		switch {
		case m == nil:
			t.Errorf("docker-compose.yml has no %s image", c.image)
		case string(m[1]) != want:
			t.Errorf("docker-compose.yml runs %s:%s; stack.sh installs %s (%s): use the tested version", c.image, m[1], want, c.variable)
		}
	}
	// stack.sh downloads Kafka's jars through this POM.
	pom, err := os.ReadFile("../../deploy/local/maven/kafka/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom); m == nil || string(m[1]) != version("KAFKA_VERSION") {
		t.Errorf("deploy/local/maven/kafka/pom.xml's kafka.version is %q; stack.sh's KAFKA_VERSION is %s", m, version("KAFKA_VERSION"))
	}
}
