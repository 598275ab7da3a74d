package schemahist

import (
	"errors"
	"strings"
	"testing"

	"github.com/binlake/binlake/capture/internal/mysqltype"
	"github.com/binlake/binlake/schemas/debezium"
)

func namesDef(cols ...string) Definition {
	def := Definition{DB: "shop", Table: "order items", PrimaryKey: []string{cols[0]}}
	for _, c := range cols {
		def.Columns = append(def.Columns, mysqltype.Column{Name: c, Type: "int(11)"})
	}
	return def
}

func fieldNames(s *debezium.Schema) []string {
	var out []string
	for _, f := range s.Fields {
		out = append(out, f.Name)
	}
	return out
}

// TestCompileNaming checks that Compile adjusts the record names and the
// key and row field names as the modes say, and stops, naming the table,
// the column and the setting, on a name mode none cannot carry and on
// names that collide after adjustment.
func TestCompileNaming(t *testing.T) {
	avro := Naming{Schema: debezium.AdjustAvro, Field: debezium.AdjustAvro}
	uni := Naming{Schema: debezium.AdjustAvroUnicode, Field: debezium.AdjustAvroUnicode}
	tests := []struct {
		name    string
		naming  Naming
		cols    []string
		fields  []string // row fields; the key is the first column
		value   string   // value schema name
		wantErr error
	}{
		{"none keeps valid names", Naming{}, []string{"id", "Café", "naïve_x"}, []string{"id", "Café", "naïve_x"}, "p.shop.order_items.Value", nil},
		{"avro", avro, []string{"key id", "created at", "Amount€", "9lives", "select"},
			[]string{"key_id", "created_at", "Amount_", "_9lives", "select"}, "p.shop.order_items.Value", nil},
		{"avro_unicode", uni, []string{"key id", "a_b", "Amount€"},
			[]string{"key_u0020id", "a_u005fb", "Amount_u20ac"}, "p.shop.order_u005fitems.Value", nil},
		{"schema avro only", Naming{Schema: debezium.AdjustAvro}, []string{"id", "ok"}, []string{"id", "ok"}, "p.shop.order_items.Value", nil},
		{"none stops on a space", Naming{}, []string{"id", "created at"}, nil, "", ErrInvalidName},
		{"none stops on a leading digit", Naming{}, []string{"id", "1st"}, nil, "", ErrInvalidName},
		{"none stops on a symbol", Naming{}, []string{"id", "Amount€"}, nil, "", ErrInvalidName},
		{"avro fixes a leading-digit table", avro, []string{"id"}, []string{"id"}, "p.shop._2024_sales.Value", nil},
		{"none stops on a leading-digit table", Naming{}, []string{"id"}, nil, "", ErrInvalidName},
		{"avro collision", avro, []string{"id", "a b", "a_b"}, nil, "", ErrNameCollision},
		{"avro collision of two adjusted", avro, []string{"id", "a-b", "a.b"}, nil, "", ErrNameCollision},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def := namesDef(tt.cols...)
			if strings.Contains(tt.name, "leading-digit table") {
				def.Table = "2024-sales"
			}
			tbl, err := Compile(def, "p", debezium.FlavorMariaDB, mysqltype.Options{}, tt.naming, nil, nil)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Compile: %v, want %v", err, tt.wantErr)
				}
				wants := []string{"shop.order items", "CAPTURE_FIELD_NAME_ADJUSTMENT_MODE", "field-name-adjustment-mode"}
				if def.Table == "2024-sales" {
					wants = []string{"shop.2024-sales", "CAPTURE_SCHEMA_NAME_ADJUSTMENT_MODE", "schema-name-adjustment-mode"}
				}
				for _, want := range wants {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not name %q", err, want)
					}
				}
				if errors.Is(err, ErrInvalidName) && !strings.Contains(err.Error(), "avro") {
					t.Errorf("error %q names no mode to set", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fieldNames(tbl.Value); strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("row fields %q, want %q", got, tt.fields)
			}
			if got := fieldNames(tbl.Key); len(got) != 1 || got[0] != tt.fields[0] {
				t.Errorf("key fields %q, want [%q]", got, tt.fields[0])
			}
			if tbl.Value.Name != tt.value {
				t.Errorf("value schema %q, want %q", tbl.Value.Name, tt.value)
			}
			prefix := strings.TrimSuffix(tt.value, ".Value")
			if tbl.Key.Name != prefix+".Key" || tbl.Envelope.Name != prefix+".Envelope" {
				t.Errorf("key %q, envelope %q", tbl.Key.Name, tbl.Envelope.Name)
			}
			if tbl.ID.Topic() != debezium.TopicName("p", "shop", def.Table) {
				t.Errorf("topic %q", tbl.ID.Topic())
			}
			// The converters' own fields keep the column names.
			if tbl.Conv.Fields()[0].Name != tt.cols[0] {
				t.Errorf("converter field renamed to %q", tbl.Conv.Fields()[0].Name)
			}
		})
	}
}
