package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestCheckConfig(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"ok from env", nil, map[string]string{"INGEST_CATALOG_URI": "http://c:8181", "INGEST_TOPICS": "p.db.t"}, ""},
		{"flag beats env", []string{"-catalog-uri=http://flag:1"}, map[string]string{"INGEST_CATALOG_URI": "bad", "INGEST_TOPICS": "p.db.t"}, ""},
		{"no catalog", []string{"-topics=p.db.t"}, nil, "set catalog-uri (INGEST_CATALOG_URI) to an Iceberg REST catalog, or state-dir (INGEST_STATE_DIR)"},
		{"topics and regex", []string{"-catalog-uri=http://c", "-topics=a", "-topic-regex=b"}, nil, "exactly one of topics and topic-regex"},
		{"bad regex", []string{"-catalog-uri=http://c", "-topic-regex=("}, nil, "topic-regex"},
		{"sigv4 without region", []string{"-catalog-uri=http://c", "-topics=a", "-sigv4"}, nil, "sigv4 needs s3-region"},
		{"sigv4 region from AWS_REGION", []string{"-catalog-uri=http://c", "-topics=a", "-sigv4"}, map[string]string{"AWS_REGION": "eu-west-1"}, ""},
		{"partition spec", []string{"-catalog-uri=http://c", "-topics=a", "-partition-spec=*=bucket(16); db.t=bucket(4, id); db.u=none"}, nil, ""},
		{"partition spec not bucket", []string{"-catalog-uri=http://c", "-topics=a", "-partition-spec=db.t=day(ts)"}, nil, "only key columns"},
		{"partition spec bad target", []string{"-catalog-uri=http://c", "-topics=a", "-partition-spec=t=bucket(4)"}, nil, "target must be"},
		{"keyless", []string{"-catalog-uri=http://c", "-topics=a", "-keyless-tables=drop"}, nil, "want append or reject"},
		{"lower-case columns", []string{"-catalog-uri=http://c", "-topics=a", "-lower-case-columns=true"}, nil, ""},
		{"lower-case columns bad", []string{"-catalog-uri=http://c", "-topics=a", "-lower-case-columns=yes"}, nil, `lower-case-columns "yes": want auto, true or false`},
		{"table name map", []string{"-catalog-uri=http://c", "-topics=a", "-table-name-map=shop.Orders=sales.orders", "-table-name-map=shop.`a.b`=sales.ab; shop.c=sales.c"}, nil, ""},
		{"table name map from env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_TABLE_NAME_MAP": "shop.Orders=sales.orders;shop.x=sales.x"}, ""},
		{"table name map flag beats env", []string{"-catalog-uri=http://c", "-topics=a", "-table-name-map=shop.Orders=sales.orders"}, map[string]string{"INGEST_TABLE_NAME_MAP": "bad"}, ""},
		{"table name map bad env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_TABLE_NAME_MAP": "shop.Orders=sales.Orders"}, "table-name-map: \"shop.Orders=sales.Orders\": target"},
		{"table name map bad target", []string{"-catalog-uri=http://c", "-topics=a", "-table-name-map=shop.Orders=aws_sales.orders"}, nil, "table-name-map"},
		{"table name map two to one", []string{"-catalog-uri=http://c", "-topics=a", "-table-name-map=a.t=s.t", "-table-name-map=b.t=s.t"}, nil, "both mapped to s.t"},
		{"session timeout from env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_GROUP_SESSION_TIMEOUT": "10s"}, ""},
		{"session timeout too short", []string{"-catalog-uri=http://c", "-topics=a", "-group-session-timeout=500ms"}, nil, "group-session-timeout 500ms: want 1s to 30m"},
		{"delete mode position", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position", "-state-dir=/tmp/x"}, nil, ""},
		{"delete mode from env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_DELETE_MODE": "position", "INGEST_STATE_DIR": "/tmp/x"}, ""},
		{"position without state dir", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position"}, nil, ""},
		{"auto", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=auto", "-table-format-version=3"}, nil, ""},
		{"mode missing", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=auto; shop.t="}, nil, "no mode"},
		{"position needs v2", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position", "-state-dir=/tmp/x", "-table-format-version=3"}, nil, "set table-format-version=2"},
		{"position cache too small", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position", "-state-dir=/tmp/x", "-index-cache-bytes=1000"}, nil, "index-cache-bytes must be at least"},
		{"dv", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=dv", "-state-dir=/tmp/x", "-table-format-version=3"}, nil, ""},
		{"dv needs v3", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=dv", "-state-dir=/tmp/x"}, nil, "set table-format-version=3"},
		{"per-table delete modes", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position; shop.audit=equality; shop.big=dv", "-state-dir=/tmp/x"}, nil, ""},
		{"auto cache too small", []string{"-catalog-uri=http://c", "-topics=a", "-index-cache-bytes=1000"}, nil, "index-cache-bytes must be at least"},
		{"equality needs no index", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=equality", "-index-cache-bytes=1000"}, nil, ""},
		{"override without table", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=position; equality", "-state-dir=/tmp/x"}, nil, "only the first entry may omit the table"},
		{"rewrite set", []string{"-catalog-uri=http://c", "-topics=a", "-rewrite-dead-fraction=0.3", "-rewrite-delete-files=16", "-rewrite-manifests=16"}, nil, ""},
		{"rewrite from env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_REWRITE_DEAD_FRACTION": "0.3"}, ""},
		{"rewrite bad fraction", []string{"-catalog-uri=http://c", "-topics=a", "-rewrite-dead-fraction=30%"}, nil, `rewrite-dead-fraction "30%": want auto, or a fraction from 0 (off) to 1`},
		{"rewrite bad bytes", []string{"-catalog-uri=http://c", "-topics=a", "-rewrite-max-bytes=0"}, nil, "rewrite-max-bytes must be at least 1"},
		{"bad delete mode", []string{"-catalog-uri=http://c", "-topics=a", "-delete-mode=cow"}, nil, `delete-mode "cow"`},
		{"bad env duration", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_FLUSH_INTERVAL": "30"}, "not a duration"},
		{"maintain interval", []string{"-catalog-uri=http://c", "-topics=a", "-maintain-interval=6h", "-maintain-namespaces=shop"}, nil, ""},
		{"maintain interval without tables", []string{"-catalog-uri=http://c", "-topics=a", "-maintain-interval=6h"}, nil, "maintain-interval is set: set exactly one of maintain-tables and maintain-namespaces"},
		{"maintain interval too short", []string{"-catalog-uri=http://c", "-topics=a", "-maintain-interval=10s", "-maintain-namespaces=shop"}, nil, "maintain-interval 10s: want 0 (off) or at least 1m"},
		{"maintain settings unchecked when off", []string{"-catalog-uri=http://c", "-topics=a", "-orphan-age=1m"}, nil, ""},
		{"errors tolerance dlq", []string{"-catalog-uri=http://c", "-topics=a", "-errors-tolerance=dlq", "-dlq-topic=a.dlq"}, nil, ""},
		{"errors tolerance from env", []string{"-catalog-uri=http://c", "-topics=a"}, map[string]string{"INGEST_ERRORS_TOLERANCE": "dlq", "INGEST_DLQ_TOPIC": "a.dlq"}, ""},
		{"dlq without topic", []string{"-catalog-uri=http://c", "-topics=a", "-errors-tolerance=dlq"}, nil, "errors-tolerance=dlq needs dlq-topic (INGEST_DLQ_TOPIC)"},
		{"dlq topic without dlq", []string{"-catalog-uri=http://c", "-topics=a", "-dlq-topic=a.dlq"}, nil, "dlq-topic \"a.dlq\" is set but errors-tolerance is none"},
		{"dlq topic consumed", []string{"-catalog-uri=http://c", "-topic-regex=bl\\..*", "-errors-tolerance=dlq", "-dlq-topic=bl.dlq"}, nil, "dlq-topic \"bl.dlq\" is one of the topics ingest consumes"},
		{"bad errors tolerance", []string{"-catalog-uri=http://c", "-topics=a", "-errors-tolerance=all"}, nil, `errors-tolerance "all": want none or dlq`},
		{"maintain settings checked when on", []string{"-catalog-uri=http://c", "-topics=a", "-maintain-interval=1h", "-maintain-tables=s.t", "-orphan-age=1m"}, nil, "orphan-age 1m0s: want at least 1h0m0s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), append([]string{"ingest", "-check-config"}, c.args...), env(c.env), &out, &out)
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

func TestSecretsHaveNoFlag(t *testing.T) {
	var out bytes.Buffer
	_ = run(context.Background(), []string{"ingest", "-help"}, env(nil), &out, &out)
	for _, s := range []string{"-catalog-credential", "-catalog-token", "secret-access-key"} {
		if strings.Contains(out.String(), s+" ") {
			t.Errorf("secret %s has a flag", s)
		}
	}
}

// TestPositionalArgumentRefused: a word that is no flag (a mistyped
// setting, a subcommand ingest does not have) stops ingest instead of being
// ignored.
func TestPositionalArgumentRefused(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"ingest", "-catalog-uri=http://c", "-topics=a", "replay"}, env(nil), &out, &out)
	if err == nil || !strings.Contains(err.Error(), `takes no arguments, got ["replay"]`) {
		t.Fatalf("err %v, want one refusing the argument", err)
	}
}
