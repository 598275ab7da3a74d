// Package lakecheck compares an Iceberg table with its source MariaDB
// table row for row and value for value, for the demo and end-to-end tests.
// Both sides are rendered to canonical text guided by the Iceberg column
// types: timestamps as UTC microseconds, decimals at their scale, binary as
// hex, NULL as NULL.
package lakecheck

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Rows are a table's rows: canonical values by column, keyed by the
// canonical primary key.
type Rows struct {
	Columns []string
	ByKey   map[string][]string
}

// Iceberg reads every live row of tbl (iceberg-go applies equality and
// position deletes) and renders it canonically.
func Iceberg(ctx context.Context, tbl *table.Table, key []string) (Rows, map[string]iceberg.Type, error) {
	types := map[string]iceberg.Type{}
	var cols []string
	for _, f := range tbl.Schema().Fields() {
		types[f.Name] = f.Type
		cols = append(cols, f.Name)
	}
	out := Rows{Columns: cols, ByKey: map[string][]string{}}
	if tbl.CurrentSnapshot() == nil {
		return out, types, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return out, types, fmt.Errorf("scanning %v: %w", tbl.Identifier(), err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		idx := make([]int, len(cols))
		for i, c := range cols {
			found := rec.Schema().FieldIndices(c)
			if len(found) == 0 {
				return out, types, fmt.Errorf("column %s missing from the scan", c)
			}
			idx[i] = found[0]
		}
		for r := range int(rec.NumRows()) {
			row := make([]string, len(cols))
			for i, c := range cols {
				row[i] = arrowValue(rec.Column(idx[i]), r, types[c])
			}
			k := keyOf(cols, row, key)
			if _, dup := out.ByKey[k]; dup {
				return out, types, fmt.Errorf("key %s appears twice in %v", k, tbl.Identifier())
			}
			out.ByKey[k] = row
		}
	}
	return out, types, nil
}

func keyOf(cols, row, key []string) string {
	var parts []string
	for _, k := range key {
		for i, c := range cols {
			if c == k {
				parts = append(parts, row[i])
			}
		}
	}
	return strings.Join(parts, "|")
}

func arrowValue(col arrow.Array, i int, t iceberg.Type) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Int32:
		if _, ok := t.(iceberg.DateType); ok {
			return time.Unix(int64(a.Value(i))*86400, 0).UTC().Format("2006-01-02")
		}
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Date32:
		return a.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(a.Value(i))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return hex.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return hex.EncodeToString(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return a.Value(i).ToString(dt.Scale)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return micros(a.Value(i).ToTime(unit).UTC())
	case *array.Time64:
		return fmt.Sprintf("time:%d", a.Value(i))
	default:
		return fmt.Sprintf("%v", col.GetOneForMarshal(i))
	}
}

func micros(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000") }

// MariaDB reads a MariaDB table (its session must use time_zone '+00:00')
// and renders it with the same canonical forms, guided by the Iceberg
// column types.
func MariaDB(ctx context.Context, db *sql.DB, name string, key []string, types map[string]iceberg.Type) (Rows, error) {
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+name+"`")
	if err != nil {
		return Rows{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Rows{}, err
	}
	out := Rows{Columns: cols, ByKey: map[string][]string{}}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return out, err
		}
		row := make([]string, len(cols))
		for i, c := range cols {
			row[i] = sqlValue(vals[i], types[c])
		}
		out.ByKey[keyOf(cols, row, key)] = row
	}
	return out, rows.Err()
}

func sqlValue(v sql.RawBytes, t iceberg.Type) string {
	if v == nil {
		return "NULL"
	}
	s := string(v)
	switch tt := t.(type) {
	case iceberg.TimestampType, iceberg.TimestampTzType:
		for _, layout := range []string{"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05"} {
			if ts, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
				return micros(ts)
			}
		}
	case iceberg.DecimalType:
		if r, ok := new(big.Rat).SetString(s); ok {
			return r.FloatString(tt.Scale())
		}
	case iceberg.BinaryType, iceberg.FixedType:
		return hex.EncodeToString(v)
	case iceberg.Float32Type:
		if f, err := strconv.ParseFloat(s, 32); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 32)
		}
	case iceberg.Float64Type:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case iceberg.BooleanType:
		return strconv.FormatBool(s != "0" && s != "\x00")
	}
	return s
}

// Diff compares two row sets over the columns of want (the source): it
// returns the differences (at most max), or none if every row and value is
// equal.
func Diff(want, got Rows, max int) []string {
	var diffs []string
	add := func(f string, a ...any) {
		if len(diffs) < max {
			diffs = append(diffs, fmt.Sprintf(f, a...))
		}
	}
	gotIdx := map[string]int{}
	for i, c := range got.Columns {
		gotIdx[c] = i
	}
	keys := make([]string, 0, len(want.ByKey))
	for k := range want.ByKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		w := want.ByKey[k]
		g, ok := got.ByKey[k]
		if !ok {
			add("key %s: missing from Iceberg", k)
			n++
			continue
		}
		for i, c := range want.Columns {
			j, ok := gotIdx[c]
			if !ok {
				add("column %s missing from Iceberg", c)
				continue
			}
			if w[i] != g[j] {
				add("key %s column %s: mariadb=%q iceberg=%q", k, c, w[i], g[j])
				n++
			}
		}
	}
	for k := range got.ByKey {
		if _, ok := want.ByKey[k]; !ok {
			add("key %s: in Iceberg, not in MariaDB", k)
			n++
		}
	}
	if n > len(diffs) && len(diffs) == max {
		diffs = append(diffs, fmt.Sprintf("... %d differences in all", n))
	}
	return diffs
}

// FromJava renders rows read by the Java reference reader (package
// test/icebergreader: column → canonical text or nil) in the same canonical
// forms, so Diff can compare them with MariaDB's.
func FromJava(rows []map[string]*string, cols []string, key []string, types map[string]iceberg.Type) (Rows, error) {
	out := Rows{Columns: cols, ByKey: map[string][]string{}}
	for _, r := range rows {
		row := make([]string, len(cols))
		for i, c := range cols {
			v := r[c]
			if v == nil {
				row[i] = "NULL"
				continue
			}
			row[i] = *v
			switch types[c].(type) {
			case iceberg.Float32Type:
				if f, err := strconv.ParseFloat(*v, 32); err == nil {
					row[i] = strconv.FormatFloat(f, 'g', -1, 32)
				}
			case iceberg.Float64Type:
				if f, err := strconv.ParseFloat(*v, 64); err == nil {
					row[i] = strconv.FormatFloat(f, 'g', -1, 64)
				}
			}
		}
		k := keyOf(cols, row, key)
		if _, dup := out.ByKey[k]; dup {
			return out, fmt.Errorf("key %s appears twice in the Java reader's output", k)
		}
		out.ByKey[k] = row
	}
	return out, nil
}
