package ingest

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/binlake/binlake/ingest/internal/lake"
)

// TestLowerCaseColumnsAuto checks which catalogs get lower-case column
// names by default: S3 Tables and Glue, told by the signing name, the
// catalog URI or the warehouse.
func TestLowerCaseColumnsAuto(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"reference REST catalog", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "http://127.0.0.1:8181"}}, false},
		{"embedded", Config{LowerCaseColumns: "auto"}, false},
		{"sigv4 s3tables", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "http://127.0.0.1:9000", SigV4: true, SigV4Service: "s3tables"}}, true},
		{"sigv4 glue", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "http://127.0.0.1:9000", SigV4: true, SigV4Service: "glue"}}, true},
		{"S3 Tables URI", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "https://s3tables.us-east-1.amazonaws.com/iceberg"}}, true},
		{"Glue URI", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "https://glue.eu-west-1.amazonaws.com/iceberg"}}, true},
		{"S3 Tables warehouse", Config{LowerCaseColumns: "auto", CatalogConfig: lake.CatalogConfig{CatalogURI: "http://proxy:8181", Warehouse: "arn:aws:s3tables:us-east-1:123456789012:bucket/lake"}}, true},
		{"forced off on S3 Tables", Config{LowerCaseColumns: "false", CatalogConfig: lake.CatalogConfig{SigV4: true, SigV4Service: "s3tables"}}, false},
		{"forced on", Config{LowerCaseColumns: "true"}, true},
	} {
		if got := tc.cfg.lowerCaseColumns(); got != tc.want {
			t.Errorf("%s: lowerCaseColumns = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestServeOpsProfiles: Go's profiles are served on the metrics address
// only with --pprof.
func TestServeOpsProfiles(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv, err := serveOps("127.0.0.1:0", prometheus.NewRegistry(), func() bool { return true }, on, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/debug/pprof/", nil))
		_ = srv.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; rec.Code != want {
			t.Errorf("pprof=%v: /debug/pprof/ answered %d, want %d", on, rec.Code, want)
		}
	}
}
