package mysqltype

import (
	"errors"
	"testing"
)

// TestDecodeCharsets checks byte sequences whose conversions the MySQL
// manual's character-set chapter or the encoding standard gives, for the
// character sets MariaDB 10.11 does not have (gb18030, utf8mb4 with
// MySQL's 0900 collations) and for the traps the manual names (latin1 is
// cp1252; sjis vs cp932). The rest is compared with the server in
// TestCharsetsAgainstServer.
func TestDecodeCharsets(t *testing.T) {
	tests := []struct {
		charset string
		in      string
		want    string
	}{
		{"latin1", "caf\xE9", "café"},
		{"latin1", "\x80\x9F", "€Ÿ"}, // cp1252, not ISO 8859-1
		{"latin1", "\x81\x8D\x8F\x90\x9D", "\u0081\u008D\u008F\u0090\u009D"},
		{"LATIN1", "\xE9", "é"},
		{"latin2", "\xB1\xEA", "ąę"},
		{"cp1250", "\x8A\x9A", "Šš"},
		{"cp1251", "\xCF\xF0\xE8\xE2\xE5\xF2", "Привет"},
		{"koi8r", "\xF0\xD2\xC9\xD7\xC5\xD4", "Привет"},
		{"cp1256", "\xC7\xE1\xDA\xD1\xC8\xED\xC9", "العربية"},
		{"greek", "\xC1\xE8\xDE\xED\xE1", "Αθήνα"},
		{"hebrew", "\xF9\xEC\xE5\xED", "שלום"},
		{"utf8mb4", "\xF0\x9F\x98\x80", "😀"}, // any collation, utf8mb4_0900_ai_ci included
		{"utf8mb3", "\xE2\x82\xAC", "€"},
		{"utf8", "\xC3\xA9", "é"},
		{"", "\xC3\xA9", "é"},
		{"ucs2", "\x00\xE9\x20\xAC", "é€"},
		{"utf16", "\xD8\x3D\xDE\x00", "😀"},
		{"utf16le", "\x3D\xD8\x00\xDE", "😀"},
		{"utf32", "\x00\x01\xF6\x00", "😀"},
		{"utf32", "\x00\x00\xFF\xFD", "\uFFFD"}, // U+FFFD itself is a character
		// GB 18030-2005: two- and four-byte forms, supplementary planes.
		{"gb18030", "\xD6\xD0\xCE\xC4", "中文"},
		{"gb18030", "\xA2\xE3", "€"},
		{"gb18030", "\x81\x30\x81\x30", "\u0080"},
		{"gb18030", "\x84\x31\xA4\x37", "\uFFFD"},
		{"gb18030", "\x90\x30\x81\x30", "\U00010000"},
		{"gb18030", "\xE3\x32\x9A\x35", "\U0010FFFF"},
		{"gbk", "\xD6\xD0\xCE\xC4", "中文"},
		{"gb2312", "\xD6\xD0\xCE\xC4", "中文"},
		{"big5", "\xA4\xA4\xA4\xE5", "中文"},
		{"euckr", "\xC7\xD1\xB1\xB9\xBE\xEE", "한국어"},
		// The manual's cp932 section: 0x815F and 0x8160 differ from sjis.
		{"sjis", "\x93\xFA\x96\x7B", "日本"},
		{"sjis", "\x81\x5F\x81\x60", "\\〜"},
		{"cp932", "\x81\x5F\x81\x60", "＼～"},
		{"cp932", "\x87\x40", "①"}, // NEC row 13, cp932 only
		{"cp932", "\xF0\x40", "\uE000"},
		{"sjis", "\xB6\xC0", "ｶﾀ"}, // half-width katakana, one byte each
		{"ujis", "\xC6\xFC\xCB\xDC", "日本"},
		{"ujis", "\xA1\xC1", "〜"},
		{"eucjpms", "\xA1\xC1", "～"},
		{"ujis", "\x8E\xB6", "ｶ"},
		{"ujis", "\xF5\xA1", "\uE000"},
		{"eucjpms", "\x8F\xF5\xA1", "\uE3AC"},
		{"tis620", "\xA1\xD2", "กา"},
		{"ascii", "plain", "plain"},
		{"binary", "ok", "ok"},
	}
	for _, tt := range tests {
		got, err := DecodeText(tt.charset, []byte(tt.in))
		if err != nil {
			t.Errorf("%s %X: %v", tt.charset, tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s %X = %q (%X), want %q", tt.charset, tt.in, got, got, tt.want)
		}
	}
}

// TestDecodeRejects checks that bytes that are not text of the charset
// fail instead of being replaced or passed through.
func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		charset, in string
		notExact    bool
	}{
		{"utf8mb4", "caf\xE9", false},
		{"utf8mb3", "\xC3", false},
		{"ascii", "caf\xE9", false},
		{"binary", "\xFF", false},
		{"sjis", "\x81", false},              // truncated
		{"gbk", "\xD6", false},               // truncated
		{"gb18030", "\x81\x30\x81", false},   // truncated four-byte form
		{"utf16", "\xD8\x3D", false},         // lone surrogate
		{"utf32", "\x00\x11\x00\x00", false}, // beyond U+10FFFF
		{"big5", "\xC6\xA1", true},
		{"eucjpms", "\x8F\xF3\xF3", true},
	}
	for _, tt := range tests {
		_, err := DecodeText(tt.charset, []byte(tt.in))
		if !errors.Is(err, ErrInvalidValue) {
			t.Errorf("%s %X: err = %v, want ErrInvalidValue", tt.charset, tt.in, err)
		}
		if tt.notExact != errors.Is(err, errNotExact) {
			t.Errorf("%s %X: err = %v, want errNotExact %v", tt.charset, tt.in, err, tt.notExact)
		}
	}
}

// TestUnsupportedCharset: a column in a charset capture cannot decode
// fails when its converter is built, naming the column and the charset.
func TestUnsupportedCharset(t *testing.T) {
	for _, cs := range []string{"swe7", "keybcs2", "armscii8", "geostd8", "dec8", "hp8", "macce"} {
		for _, typ := range []string{"varchar(10)", "char(3)", "text", "enum('a')", "set('a')"} {
			_, err := New(Column{Name: "legacy", Type: typ, Charset: cs}, Options{})
			var ce *CharsetError
			if !errors.As(err, &ce) || ce.Column != "legacy" || ce.Charset != cs || !errors.Is(err, ErrUnsupportedCharset) {
				t.Errorf("%s %s: err = %v, want a CharsetError for column legacy", cs, typ, err)
			}
		}
		if CharsetSupported(cs) {
			t.Errorf("CharsetSupported(%s) = true", cs)
		}
	}
	// Types without a charset ignore it.
	if _, err := New(Column{Name: "n", Type: "int", Charset: "swe7"}, Options{}); err != nil {
		t.Errorf("int column: %v", err)
	}
}

// TestConvertInCharset: string, ENUM and SET values in the column's bytes
// (binlog strings, snapshot []byte) come out as UTF-8; binlog ENUM/SET
// numbers map to the UTF-8 labels; a default (UTF-8 text) is not decoded
// twice.
func TestConvertInCharset(t *testing.T) {
	dflt := "'café'"
	tests := []struct {
		col  Column
		in   any
		want any
	}{
		{Column{Name: "v", Type: "varchar(10)", Charset: "latin1"}, "caf\xE9", "café"},
		{Column{Name: "v", Type: "varchar(10)", Charset: "latin1"}, []byte("caf\xE9"), "café"},
		{Column{Name: "t", Type: "mediumtext", Charset: "cp1251"}, []byte("\xCF\xF0\xE8"), "При"},
		{Column{Name: "e", Type: "enum('café','thé')", Charset: "latin1"}, []byte("th\xE9"), "thé"},
		{Column{Name: "e", Type: "enum('café','thé')", Charset: "latin1"}, int64(1), "café"},
		{Column{Name: "s", Type: "set('café','thé')", Charset: "latin1"}, []byte("caf\xE9,th\xE9"), "café,thé"},
		{Column{Name: "s", Type: "set('café','thé')", Charset: "latin1"}, int64(3), "café,thé"},
		{Column{Name: "b", Type: "varbinary(4)", Charset: ""}, []byte{0xE9}, []byte{0xE9}},
	}
	for _, tt := range tests {
		c, err := New(tt.col, Options{})
		if err != nil {
			t.Fatalf("%+v: %v", tt.col, err)
		}
		got, err := c.Convert(tt.in)
		if err != nil {
			t.Errorf("%+v %q: %v", tt.col, tt.in, err)
			continue
		}
		if s, ok := tt.want.(string); ok && got != s {
			t.Errorf("%+v %q = %q, want %q", tt.col, tt.in, got, s)
		}
	}
	c, err := New(Column{Name: "d", Type: "varchar(10)", Charset: "latin1", Default: &dflt}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Schema().Default != "café" {
		t.Errorf("default = %q, want café", c.Schema().Default)
	}
	c, _ = New(Column{Name: "v", Type: "varchar(10)", Charset: "utf8mb4"}, Options{})
	if _, err := c.Convert("caf\xE9"); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("latin1 bytes in a utf8mb4 column: err = %v, want ErrInvalidValue", err)
	}
}
