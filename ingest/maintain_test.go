package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

func TestMaintainCheckConfig(t *testing.T) {
	base := []string{"-catalog-uri=http://c:8181"}
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"tables", append(base, "-maintain-tables=shop.orders, shop.items"), nil, ""},
		{"namespaces from env", nil, map[string]string{"INGEST_CATALOG_URI": "http://c", "INGEST_MAINTAIN_NAMESPACES": "shop,crm"}, ""},
		{"dotted namespace", append(base, "-maintain-tables=a.b.orders"), nil, ""},
		{"no catalog", []string{"-maintain-tables=shop.orders"}, nil, "set catalog-uri (INGEST_CATALOG_URI) to an Iceberg REST catalog, or state-dir (INGEST_STATE_DIR)"},
		{"no tables", base, nil, "set exactly one of maintain-tables and maintain-namespaces"},
		{"both", append(base, "-maintain-tables=shop.orders", "-maintain-namespaces=shop"), nil, "set exactly one of maintain-tables and maintain-namespaces"},
		{"table without namespace", append(base, "-maintain-tables=orders"), nil, `"orders" is not <namespace>.<table>`},
		{"steps", append(base, "-maintain-tables=s.t", "-maintain-steps=expire-snapshots,compact"), nil, ""},
		{"unknown step", append(base, "-maintain-tables=s.t", "-maintain-steps=compact,vacuum"), nil, `unknown step "vacuum"`},
		{"young orphans", append(base, "-maintain-tables=s.t", "-orphan-age=10m"), nil, "orphan-age 10m0s: want at least 1h0m0s"},
		{"orphan age from env", append(base, "-maintain-tables=s.t"), map[string]string{"INGEST_ORPHAN_AGE": "72h"}, ""},
		{"retain none", append(base, "-maintain-tables=s.t", "-expire-retain-last=0"), nil, "expire-retain-last must be at least 1"},
		{"tiny target", append(base, "-maintain-tables=s.t", "-compact-target-file-size=1000"), nil, "compact-target-file-size 1000"},
		{"target", append(base, "-maintain-tables=s.t", "-compact-target-file-size=134217728"), nil, ""},
		{"threshold", append(base, "-maintain-tables=s.t", "-compact-delete-file-threshold=0"), nil, "compact-delete-file-threshold must be at least 1"},
		{"attempts", append(base, "-maintain-tables=s.t", "-maintain-attempts=0"), nil, "maintain-attempts must be at least 1"},
		{"sigv4 without region", append(base, "-maintain-tables=s.t", "-sigv4"), nil, "sigv4 needs s3-region"},
		{"bad env duration", append(base, "-maintain-tables=s.t"), map[string]string{"INGEST_EXPIRE_OLDER_THAN": "5"}, "not a duration"},
		{"argument", append(base, "-maintain-tables=s.t", "shop.orders"), nil, "takes no arguments"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"ingest", "maintain", "-check-config"}, c.args...), env(c.env), &out, &out)
			if c.wantErr == "" {
				if err != nil || !strings.Contains(out.String(), "configuration ok") {
					t.Fatalf("err %v, output %q", err, out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestREADMEDocumentsEveryMaintainFlag keeps README's ingest maintain
// settings true: every flag has its row (the catalog and log flags shared
// with ingest in ingest's table).
func TestREADMEDocumentsEveryMaintainFlag(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_ = run(context.Background(), []string{"ingest", "maintain", "-help"}, env(nil), &out, &out)
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "  -") {
			continue
		}
		name := strings.Fields(line)[0][1:]
		n++
		row := "| `--" + name + "` | "
		if name != "check-config" {
			row += "`INGEST_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "` |"
		}
		if !strings.Contains(string(readme), row) {
			t.Errorf("README has no row %q", row)
		}
	}
	if n < 20 {
		t.Fatalf("found only %d flags in the help text", n)
	}
}
