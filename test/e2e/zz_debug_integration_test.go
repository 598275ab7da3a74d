//go:build integration

package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/binlake/binlake/test/testenv"
)

func TestZZDebug(t *testing.T) {
	ns, dbName := os.Getenv("DBG_NS"), os.Getenv("DBG_DB")
	ice := testenv.IcebergEnv(t)
	cat, err := rest.NewCatalog(t.Context(), "e2e", ice.URI, rest.WithAdditionalProps(ice.FileIOProps()))
	if err != nil {
		t.Fatal(err)
	}
	db := testenv.MariaDBEnv(t).AdminDB(t, dbName)
	db.SetMaxOpenConns(1)
	db.Exec("SET time_zone = '+00:00'")
	for _, tb := range strings.Split(os.Getenv("DBG_TABLES"), ",") {
		n, diffs := javaEqualsMariaDB(t.Context(), t, cat, db, ns, keyedTable{tb, []string{"id"}})
		t.Logf("%s: %d rows, diffs:\n%s", tb, n, strings.Join(diffs, "\n"))
	}
}
