package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmbeddedCatalogConfig: without catalog-uri every command (ingest,
// status, maintain, replay) wants a kept state-dir for the embedded
// catalog and says which settings to set; its warehouse must be local, and
// the REST catalog's settings are refused rather than ignored.
func TestEmbeddedCatalogConfig(t *testing.T) {
	dir := t.TempDir()
	const noCatalog = "set catalog-uri (INGEST_CATALOG_URI) to an Iceberg REST catalog, or state-dir (INGEST_STATE_DIR) to a kept directory for the embedded catalog"
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"ingest without state dir", []string{"ingest", "-check-config", "-topics=a"}, nil, noCatalog},
		{"ingest state dir blank", []string{"ingest", "-check-config", "-topics=a", "-state-dir= "}, nil, noCatalog},
		{"status without state dir", []string{"ingest", "status"}, nil, noCatalog},
		{"maintain without state dir", []string{"ingest", "maintain", "-check-config", "-maintain-tables=s.t"}, nil, noCatalog},
		{"replay without state dir", []string{"ingest", "replay", "-tables=s\\.t"}, nil, noCatalog},
		{"ingest embedded", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir}, nil, ""},
		{"ingest embedded from env", []string{"ingest", "-check-config"}, map[string]string{"INGEST_TOPICS": "a", "INGEST_STATE_DIR": dir}, ""},
		{"maintain embedded", []string{"ingest", "maintain", "-check-config", "-maintain-tables=s.t", "-state-dir=" + dir}, nil, ""},
		{"local warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=" + filepath.Join(dir, "elsewhere")}, nil, ""},
		{"file warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=file://" + dir}, nil, ""},
		{"relative warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=wh"}, nil, ""},
		{"s3 warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=s3://bucket/lake"}, nil, `warehouse: "s3://bucket/lake" is not a local directory`},
		{"table bucket warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=arn:aws:s3tables:us-east-1:123456789012:bucket/lake"}, nil, "is not a local directory"},
		{"remote file warehouse", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-warehouse=file://host/lake"}, nil, "is not a local directory"},
		{"sigv4", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir, "-sigv4", "-s3-region=eu-west-1"}, nil, "sigv4 signs the requests of a REST catalog: set catalog-uri"},
		{"credential", []string{"ingest", "-check-config", "-topics=a", "-state-dir=" + dir}, map[string]string{"INGEST_CATALOG_CREDENTIAL": "id:secret"}, "are for a REST catalog: set catalog-uri"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), c.args, env(c.env), &out, &out)
			if c.wantErr == "" {
				if err != nil || !strings.Contains(out.String(), "configuration ok") {
					t.Fatalf("err %v, output %q", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows the secret: %v", err)
			}
		})
	}
}
