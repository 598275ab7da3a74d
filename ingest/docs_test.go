package main

import (
	"testing"

	"github.com/binlake/binlake/test/doccheck"
)

// TestConfigurationTable keeps the configuration table of README.md equal
// to the flag set: every setting, its variable, its default and its text
// (regenerate: BINLAKE_UPDATE_DOCS=1 go test ./ingest -run TestConfigurationTable).
func TestConfigurationTable(t *testing.T) {
	ef, _, _ := bindFlags(func(string) string { return "" })
	var secrets []doccheck.Secret
	for _, s := range ef.Secrets() {
		secrets = append(secrets, doccheck.Secret{Env: s.Env, Usage: s.Usage})
	}
	if len(secrets) == 0 || ef.FlagSet().Lookup("check-config") == nil {
		t.Fatalf("the flag set lists %d secrets and check-config %v", len(secrets), ef.FlagSet().Lookup("check-config"))
	}
	doccheck.Section(t, "README.md", "configuration", doccheck.FlagTable(ef.FlagSet(), secrets))
}
