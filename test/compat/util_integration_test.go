//go:build integration

package compat

import (
	"testing"

	"github.com/binlake/binlake/test/workload"
)

// statements returns the statements of a SQL script in the workload
// format (test/workload), failing the test on a malformed one.
func statements(t *testing.T, script string) []string {
	t.Helper()
	w, err := workload.Parse(script)
	if err != nil {
		t.Fatal(err)
	}
	return append(w.Before, w.Stmts...)
}
