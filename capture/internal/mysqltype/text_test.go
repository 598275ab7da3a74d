package mysqltype

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSmallDecimalEqualsParseDecimal: where smallDecimal answers, it
// answers what parseDecimal's bytes are, and it answers for every decimal
// of up to 18 significant digits.
func TestSmallDecimalEqualsParseDecimal(t *testing.T) {
	inputs := []string{"0", "0.00", "-0.00", "+0", "1", "-1", "12345.67", "-12345.67", " 42.5 ", "007.10",
		".5", "5.", "-.5", ".", "", "+", "-", "1.2.3", "1e5", "12a", "0.001", "0.010", "1.230",
		"999999999999999999", "-999999999999999999", "9999999999999999.99", "99999999999999999.9",
		"1000000000000000000", "0.000000000000000001", "00000000000000000000001.5",
		"123456789012345678901234567890.12", "-9223372036854775808", "9223372036854775807"}
	for _, s := range inputs {
		for _, scale := range []int{0, 1, 2, 3, 6, 18, 30} {
			n, ok := smallDecimal(s, scale)
			d, err := parseDecimal(s, scale)
			switch {
			case ok && err != nil:
				t.Errorf("smallDecimal(%q, %d) = %d; parseDecimal: %v", s, scale, n, err)
			case ok:
				if got, want := int64Bytes(n), d.bytes(); !cmp.Equal(got, want) {
					t.Errorf("smallDecimal(%q, %d): bytes %x, parseDecimal %x", s, scale, got, want)
				}
			case err == nil && len(d.digits) <= 18:
				t.Errorf("smallDecimal(%q, %d) declined a decimal of %d digits", s, scale, len(d.digits))
			}
		}
	}
}

// TestTextBytesEqualString: the []byte fast paths (snapshot rows) give
// what the same text as a string gives (binlog and the paths before them),
// value and error alike.
func TestTextBytesEqualString(t *testing.T) {
	for _, c := range []struct {
		col    Column
		inputs []string
	}{
		{Column{Name: "i", Type: "int(11)"}, []string{"0", "-7", " 42 ", "2147483647", "2147483648", "x", "", "1.5"}},
		{Column{Name: "tu", Type: "tinyint(3) unsigned"}, []string{"0", "255", "256", "-1", "184"}},
		{Column{Name: "b", Type: "bigint(20)"}, []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808"}},
		{Column{Name: "bu", Type: "bigint(20) unsigned"}, []string{"18446744073709551615", "18446744073709551616", "-1", "12"}},
		{Column{Name: "d", Type: "decimal(12,2)"}, []string{"12345.67", "-0.50", "1.234", "1.230", "abc", "99999999999999999999.99"}},
		{Column{Name: "dt", Type: "datetime(6)"}, []string{"2024-02-19 02:23:44.242424", "0000-00-00 00:00:00", "2021-02-29 00:00:00",
			"2020-02-29 23:59:59.999999", "2021-04-31 00:00:00", "2024-13-01 00:00:00", "junk", "2024-01-01"}},
		{Column{Name: "dn", Type: "datetime", Nullable: true}, []string{"0000-00-00 00:00:00", "2024-01-01 00:00:00"}},
		{Column{Name: "da", Type: "date"}, []string{"2024-02-29", "2023-02-29", "0000-00-00", "1969-12-31"}},
		{Column{Name: "ts", Type: "timestamp(3)"}, []string{"2024-07-20 02:23:44.000", "1970-01-01 00:00:00.500", "0000-00-00 00:00:00.000"}},
		{Column{Name: "e", Type: "enum('new','paid','shipped','cancelled')", Charset: "utf8mb4"}, []string{"paid", "", "other", "new"}},
		{Column{Name: "eu", Type: "enum('né','x')", Charset: "utf8mb4"}, []string{"né", "x"}},
		{Column{Name: "el", Type: "enum('a','b')", Charset: "latin1"}, []string{"a", "b", "\xe9"}},
		{Column{Name: "e16", Type: "enum('ab','c')", Charset: "utf16"}, []string{"\x00a\x00b", "ab"}},
	} {
		conv, err := New(c.col, Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.col.Type, err)
		}
		for _, s := range c.inputs {
			want, werr := conv.Convert(s)
			got, gerr := conv.Convert([]byte(s))
			// Error texts differ (%v of a []byte); the condition must not.
			if errors.Is(gerr, ErrInvalidValue) != errors.Is(werr, ErrInvalidValue) || (gerr == nil) != (werr == nil) || !cmp.Equal(got, want) {
				t.Errorf("%s %q: bytes give %#v, %v; string gives %#v, %v", c.col.Type, s, got, gerr, want, werr)
			}
		}
	}
}
