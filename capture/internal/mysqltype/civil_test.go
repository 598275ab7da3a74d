package mysqltype

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/schemas/debezium"
)

// parseCivilSplit and formatZonedAlloc are parseCivil and formatZoned as
// they were before they stopped allocating: the references the faster
// ones must equal on every input.
func parseCivilSplit(s string) (civil, bool) {
	var c civil
	num := func(p string) (int, bool) {
		if p == "" || !allDigits(p) {
			return 0, false
		}
		n, err := strconv.Atoi(p)
		return n, err == nil
	}
	date, clock, hasClock := strings.Cut(strings.TrimSpace(s), " ")
	if !hasClock {
		date, clock, hasClock = strings.Cut(date, "T")
	}
	parts := strings.Split(date, "-")
	if len(parts) != 3 {
		return c, false
	}
	var ok1, ok2, ok3 bool
	c.y, ok1 = num(parts[0])
	c.mo, ok2 = num(parts[1])
	c.d, ok3 = num(parts[2])
	if !ok1 || !ok2 || !ok3 || c.mo > 12 || c.d > 31 {
		return c, false
	}
	if !hasClock {
		return c, true
	}
	hms, frac, _ := strings.Cut(clock, ".")
	tp := strings.Split(hms, ":")
	if len(tp) != 3 {
		return c, false
	}
	c.h, ok1 = num(tp[0])
	c.mi, ok2 = num(tp[1])
	c.s, ok3 = num(tp[2])
	if !ok1 || !ok2 || !ok3 || c.h > 23 || c.mi > 59 || c.s > 59 {
		return c, false
	}
	if frac != "" {
		if len(frac) > 6 || !allDigits(frac) {
			return c, false
		}
		f, _ := strconv.Atoi(frac)
		for i := len(frac); i < 6; i++ {
			f *= 10
		}
		c.micros = f
	}
	return c, true
}

func formatZonedAlloc(t time.Time, fsp int) string {
	c := civilFromTime(t)
	b := make([]byte, 0, 32)
	b = appendPadded(b, c.y, 4)
	b = append(b, '-')
	b = appendPadded(b, c.mo, 2)
	b = append(b, '-')
	b = appendPadded(b, c.d, 2)
	b = append(b, 'T')
	b = appendPadded(b, c.h, 2)
	b = append(b, ':')
	b = appendPadded(b, c.mi, 2)
	b = append(b, ':')
	b = appendPadded(b, c.s, 2)
	ns := t.Nanosecond()
	switch {
	case fsp > 0:
		frac := appendPadded(nil, ns, 9)
		b = append(b, '.')
		b = append(b, frac[:min(fsp, 9)]...)
	case ns != 0:
		frac := strings.TrimRight(string(appendPadded(nil, ns, 9)), "0")
		b = append(b, '.')
		b = append(b, frac...)
	}
	b = append(b, 'Z')
	return string(b)
}

var civilTexts = []string{
	"2024-05-06 07:08:09.123456", "2024-05-06 07:08:09", "2024-05-06", "2024-05-06T07:08:09.5", " 2024-05-06 07:08:09.1 ",
	"0000-00-00 00:00:00", "0000-00-00 00:00:00.000000", "0000-00-00", "9999-12-31 23:59:59.999999", "0001-01-01 00:00:00",
	"2024-02-30 10:00:00", "12345-01-01", "2024-13-01", "2024-01-32", "2024-01-01 24:00:00", "2024-01-01 23:60:00",
	"2024-01-01 23:59:60", "2024-01-01 10:00:00.1234567", "2024-01-01 10:00:00.", "2024-01-01 10:00:00.12a",
	"2024-01", "2024-01-01-01", "-2024-01-01", "2024--01", "2024-01-", "", " ", "2024-01-01 10:00", "2024-01-01 10:00:00:00",
	"2024-01-01 10::00", "2024-01-01T", "2024-01-01 ", "2024-01-01  10:00:00", "2024-01-01 10:00:00 x", "2024-01-01T10:00:00 x",
	"+2024-01-01", "2024-+1-01", "99999999999999999999-01-01", "2024-01-01 1:2:3", "2024-01-01 01:02:03.000001",
	"2024-01-01 10:00:00.-1", "2024-01-01 10:00:00.1.2", "a-b-c", "2024-01-01\t10:00:00", "2024-01-01T10:00:00T",
	// parseCivilFixed's layouts and their near misses
	"2024-02-19T02:23:44.2", "2024-02-19 02:23:44.", "2024-02-19 02:23:44.1234567", "2024-13-01 00:00:00",
	"2024-02-19 24:00:00", "2024-02-19 23:60:00", "2024-02-19 23:59:60", "2024-02-32", "0000-00-00 00:00:00.000000",
	"2024-02-19 02:23:44 ", " 2024-02-19 02:23:44", "2024-02-19 02:23:4a", "202a-02-19", "2024-02-19x02:23:44",
}

func TestParseCivilEqualsSplit(t *testing.T) {
	for _, s := range civilTexts {
		c, ok := parseCivil(s)
		wc, wok := parseCivilSplit(s)
		if c != wc || ok != wok {
			t.Errorf("parseCivil(%q) = %+v, %v; want %+v, %v", s, c, ok, wc, wok)
		}
	}
}

func FuzzParseCivilEqualsSplit(f *testing.F) {
	for _, s := range civilTexts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := parseCivil(s)
		wc, wok := parseCivilSplit(s)
		if c != wc || ok != wok {
			t.Errorf("parseCivil(%q) = %+v, %v; want %+v, %v", s, c, ok, wc, wok)
		}
	})
}

func TestFormatZonedEqualsAlloc(t *testing.T) {
	times := []time.Time{
		time.Unix(0, 0), time.Unix(0, 999_999_000), time.Unix(1_700_000_000, 120_000_000), time.Unix(1_700_000_000, 100),
		time.Unix(1_700_000_000, 123_456_789), time.Date(9999, 12, 31, 23, 59, 59, 999_999_000, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(12345, 1, 1, 0, 0, 0, 5, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for _, tm := range times {
		for fsp := range 10 {
			if got, want := formatZoned(tm.UTC(), fsp), formatZonedAlloc(tm.UTC(), fsp); got != want {
				t.Errorf("formatZoned(%v, %d) = %q, want %q", tm, fsp, got, want)
			}
		}
	}
}

func BenchmarkParseCivil(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		parseCivil("2024-05-06 07:08:09.123456")
	}
}

func BenchmarkFormatZoned(b *testing.B) {
	tm := time.Unix(1_700_000_000, 123_000_000).UTC()
	b.ReportAllocs()
	for b.Loop() {
		formatZoned(tm, 3)
	}
}

// TestTimestampUTCFastPath checks that TIMESTAMP text in UTC converts as
// through time.Date: a zone equal to UTC but not time.UTC takes that path.
func TestTimestampUTCFastPath(t *testing.T) {
	texts := append([]string{"2024-02-29 23:59:59.999999", "1970-01-01 00:00:00", "2038-01-19 03:14:07.5", "0000-00-00 00:00:00.123"}, civilTexts...)
	for fsp := range 7 {
		fast := timestampConv(true, fsp, time.UTC)
		slow := timestampConv(true, fsp, time.FixedZone("UTC+0", 0))
		for _, s := range texts {
			gf, ef := fast(s)
			gs, es := slow(s)
			if gf != gs || (ef == nil) != (es == nil) {
				t.Errorf("fsp %d %q: %#v, %v; through time.Date %#v, %v", fsp, s, gf, ef, gs, es)
			}
		}
	}
}

// TestConvertersReturnInputAsIs checks that values already in their
// Debezium form come back as the very interface value (no new boxing).
func TestConvertersReturnInputAsIs(t *testing.T) {
	for _, c := range []struct {
		col Column
		in  any
	}{
		{Column{Name: "s", Type: "varchar(10)"}, "héllo"},
		{Column{Name: "j", Type: "json"}, `{"a":1}`},
	} {
		conv, err := New(c.col, Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := conv.Convert(c.in)
		if err != nil || out != c.in {
			t.Errorf("%s: %#v -> %#v, %v", c.col.Type, c.in, out, err)
		}
	}
}

// BenchmarkConvertRowBinlog is BenchmarkConvertRow with the values as
// capture's MariaDB binlog decoding gives them: integers signed, DATETIME
// and TIMESTAMP as text (UTC), JSON as text.
func BenchmarkConvertRowBinlog(b *testing.B) {
	tbl, _ := realisticTable(b)
	row := []any{
		int64(123456789), int32(4242), "SKU-000123-BLUE-XL", int16(3), "1299.99", int64(2), nil,
		"2024-05-06 07:08:09.123456", "2024-05-06 07:08:09.123",
		`{"gift":true,"channel":"web","tags":["a","b"]}`,
	}
	var after debezium.Struct
	if _, err := tbl.ConvertRow(nil, row); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		after, _ = tbl.ConvertRow(after, row)
	}
}
