package mysqltype

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"
)

// ErrUnsupportedCharset reports a column whose character set capture
// cannot decode to UTF-8. It is wrapped in a [*CharsetError].
var ErrUnsupportedCharset = errors.New("mysqltype: unsupported character set")

// CharsetError reports a string, ENUM or SET column in a character set
// capture cannot decode. Capture stops rather than pass the column's bytes
// through as a string.
type CharsetError struct {
	Column  string
	Charset string
}

func (e *CharsetError) Error() string {
	return fmt.Sprintf("%v: column %s is in character set %s, which capture cannot decode to UTF-8; "+
		"convert the column (ALTER TABLE ... MODIFY %s ... CHARACTER SET utf8mb4) or leave it out with -column-exclude-list",
		ErrUnsupportedCharset, e.Column, e.Charset, e.Column)
}

// Unwrap returns [ErrUnsupportedCharset].
func (e *CharsetError) Unwrap() error { return ErrUnsupportedCharset }

// charset decodes the bytes of one MySQL/MariaDB character set to UTF-8
// exactly as the server's CONVERT(... USING utf8mb4) does. The mappings are
// golang.org/x/text's; where the server's tables differ (found by
// TestCharsetsAgainstServer, which compares every one- and two-byte
// sequence with the server), the differences are rules below, each with
// its reason.
type charset struct {
	name string
	// enc is the x/text encoding; nil for ascii and the UTF-8 family.
	enc encoding.Encoding
	// asciiSafe: every byte below 0x80 stands for itself, so an all-ASCII
	// value needs no decoding.
	asciiSafe bool
	// holdsReplacement: U+FFFD is a character of the set, so its presence in
	// the output does not by itself mean an undecodable input.
	holdsReplacement bool
	// table is the decoding of a single-byte set (0: not a character).
	table *[256]rune
	// width returns the length of the multi-byte character b starts with
	// (multi-byte sets decoded character by character; nil otherwise).
	width func(b []byte) int
	// special decodes the characters where the server differs from x/text;
	// ok false leaves the character to x/text, err stops decoding.
	special func(c []byte) (r rune, ok bool, err error)
}

// singleByte builds the table of a single-byte set from x/text. Bytes
// 0x80–0x9F that the standard leaves undefined are the C1 controls of the
// same value on the server (ISO 8859 puts the C1 controls there; MySQL's
// latin1 does the same for the five bytes cp1252 leaves undefined, as its
// manual says). fix overrides single bytes where the server's table is an
// older revision of the standard.
func singleByte(name string, cm *charmap.Charmap, c1 bool, fix map[byte]rune) *charset {
	var t [256]rune
	for i := range 256 {
		r := cm.DecodeByte(byte(i))
		if r == utf8.RuneError {
			r = 0
			if c1 && i >= 0x80 && i <= 0x9F {
				r = rune(i)
			}
		}
		t[i] = r
	}
	for b, r := range fix {
		t[b] = r
	}
	return &charset{name: name, enc: cm, asciiSafe: true, table: &t}
}

// Multi-byte character widths.
func dbcsWidth(lo byte) func([]byte) int { // lead 0x81–0xFE (or lo–0xFE) + one byte
	return func(b []byte) int {
		if b[0] >= lo && b[0] <= 0xFE {
			return 2
		}
		return 1
	}
}

func sjisWidth(b []byte) int {
	if (b[0] >= 0x81 && b[0] <= 0x9F) || (b[0] >= 0xE0 && b[0] <= 0xFC) {
		return 2
	}
	return 1 // ASCII and half-width katakana 0xA1–0xDF
}

func eucjpWidth(b []byte) int {
	switch {
	case b[0] == 0x8F:
		return 3
	case b[0] == 0x8E || (b[0] >= 0xA1 && b[0] <= 0xFE):
		return 2
	}
	return 1
}

func gb18030Width(b []byte) int {
	if b[0] < 0x81 || b[0] > 0xFE {
		return 1
	}
	if len(b) >= 2 && b[1] >= 0x30 && b[1] <= 0x39 {
		return 4
	}
	return 2
}

// eucjpUserDefined: rows 0xF5–0xFE of JIS X 0208 and JIS X 0212 (0x8F
// prefix) are the user-defined area; the server maps them, row by row, to
// the Private Use Area from U+E000 (JIS X 0208) and U+E3AC (JIS X 0212),
// as Microsoft's eucJP-ms and the server's ujis do. x/text decodes rows
// 0xF9–0xFC as IBM extensions instead.
func eucjpUserDefined(c []byte) (rune, bool, error) {
	base, lead, trail := rune(0xE000), c[0], byte(0)
	if len(c) == 3 && c[0] == 0x8F {
		base, lead = 0xE3AC, c[1]
		trail = c[2]
	} else if len(c) == 2 {
		trail = c[1]
	} else {
		return 0, false, nil
	}
	if lead < 0xF5 || lead > 0xFE || trail < 0xA1 || trail > 0xFE {
		return 0, false, nil
	}
	return base + rune(lead-0xF5)*94 + rune(trail-0xA1), true, nil
}

// cp932UserDefined: Windows-31J's user-defined area, lead bytes 0xF0–0xF9,
// maps to U+E000 onwards, 188 characters a lead byte.
func cp932UserDefined(c []byte) (rune, bool, error) {
	if len(c) != 2 || c[0] < 0xF0 || c[0] > 0xF9 || c[1] < 0x40 || c[1] > 0xFC || c[1] == 0x7F {
		return 0, false, nil
	}
	t := rune(c[1]) - 0x40
	if c[1] > 0x7F {
		t--
	}
	return 0xE000 + rune(c[0]-0xF0)*188 + t, true, nil
}

// jisFix: the server's sjis and ujis follow JIS X 0208 for these
// characters, x/text (WHATWG) follows Microsoft's mapping; the server's
// cp932 and eucjpms follow Microsoft's, as the MySQL manual's cp932
// section describes.
var jisFix = map[rune]rune{
	'\uFF3C': '\\',     // FULLWIDTH REVERSE SOLIDUS → REVERSE SOLIDUS
	'\uFF5E': '\u301C', // FULLWIDTH TILDE → WAVE DASH
	'\u2225': '\u2016', // PARALLEL TO → DOUBLE VERTICAL LINE
	'\uFF0D': '\u2212', // FULLWIDTH HYPHEN-MINUS → MINUS SIGN
	'\uFFE0': '\u00A2', // FULLWIDTH CENT SIGN → CENT SIGN
	'\uFFE1': '\u00A3', // FULLWIDTH POUND SIGN → POUND SIGN
	'\uFFE2': '\u00AC', // FULLWIDTH NOT SIGN → NOT SIGN
}

// jis returns a special for sjis/ujis: the JIS X 0208 mapping of jisFix's
// characters, and for ujis the user-defined area.
func jis(enc encoding.Encoding, userDefined func([]byte) (rune, bool, error)) func([]byte) (rune, bool, error) {
	return func(c []byte) (rune, bool, error) {
		if userDefined != nil {
			if r, ok, err := userDefined(c); ok || err != nil {
				return r, ok, err
			}
		}
		if len(c) != 2 {
			return 0, false, nil
		}
		out, err := enc.NewDecoder().Bytes(c)
		if err != nil {
			return 0, false, nil
		}
		r, _ := utf8.DecodeRune(out)
		if f, ok := jisFix[r]; ok && utf8.RuneLen(r) == len(out) {
			return f, true, nil
		}
		return 0, false, nil
	}
}

// errBig5Eten reports Big5 codes in rows 0xC6A1–0xC8FE: the server maps
// its ETEN extension (kana, Cyrillic, circled numbers) there, x/text the
// HKSCS characters; capture stops rather than guess.
var errBig5Eten = fmt.Errorf("%w: Big5 rows 0xC6A1-0xC8FE (ETEN extension)", errNotExact)

// errNotExact reports a character of the set that capture's decoder would
// convert differently from the server; capture stops rather than emit it.
var errNotExact = errors.New("a character capture cannot convert as the server does")

// errEucjpmsIBM reports eucJP-ms's IBM extensions in JIS X 0212 rows
// 0xF3–0xF4 (0x8FF3F3–0x8FF4FE), which x/text does not decode.
var errEucjpmsIBM = fmt.Errorf("%w: eucJP-ms IBM extension 0x8FF3F3-0x8FF4FE", errNotExact)

// code is a character's bytes as one number (0x8FA2B7).
func code(c []byte) uint32 {
	var n uint32
	for _, b := range c {
		n = n<<8 | uint32(b)
	}
	return n
}

// withFix returns special preceded by per-code fixes.
func withFix(fix map[uint32]rune, special func([]byte) (rune, bool, error)) func([]byte) (rune, bool, error) {
	return func(c []byte) (rune, bool, error) {
		if r, ok := fix[code(c)]; ok {
			return r, true, nil
		}
		if special == nil {
			return 0, false, nil
		}
		return special(c)
	}
}

func eucjpmsSpecial(c []byte) (rune, bool, error) {
	if n := code(c); n >= 0x8FF3F3 && n <= 0x8FF4FE {
		return 0, false, errEucjpmsIBM
	}
	return eucjpUserDefined(c)
}

// big5Fix: the codes of Big5's symbol rows 0xA1–0xA2 where the server's
// table (cp950-like) differs from x/text's (WHATWG/HKSCS); U+FFFD is the
// server's own conversion of codes its table leaves empty.
var big5Fix = map[uint16]rune{
	0xA145: '\u2022', 0xA14E: '\uFF64', 0xA15A: '\uFFFD', 0xA1C2: '\u203E', 0xA1C3: '\uFFFD',
	0xA1C5: '\uFFFD', 0xA1E3: '\u223C', 0xA1F2: '\u2641', 0xA1F3: '\u2609', 0xA1FE: '\uFFFD',
	0xA240: '\uFFFD', 0xA241: '\uFF0F', 0xA242: '\uFF3C', 0xA244: '\u00A5', 0xA246: '\u00A2',
	0xA247: '\u00A3', 0xA2CC: '\uFFFD', 0xA2CE: '\uFFFD',
}

func big5Special(c []byte) (rune, bool, error) {
	if len(c) != 2 {
		return 0, false, nil
	}
	code := uint16(c[0])<<8 | uint16(c[1])
	if r, ok := big5Fix[code]; ok {
		return r, true, nil
	}
	if code >= 0xC6A1 && code <= 0xC8FE {
		return 0, false, errBig5Eten
	}
	return 0, false, nil
}

// gb2312Fix: two punctuation marks of GB 2312 row 1 that the server maps
// as GB 2312 does, and x/text (GBK/WHATWG) otherwise.
var gb2312Fix = map[uint16]rune{0xA1A4: '\u30FB', 0xA1AA: '\u2015'}

func gb2312Special(c []byte) (rune, bool, error) {
	if len(c) == 2 {
		if r, ok := gb2312Fix[uint16(c[0])<<8|uint16(c[1])]; ok {
			return r, true, nil
		}
	}
	return 0, false, nil
}

// charsets holds every character set of MySQL 8.4 and MariaDB 10.11 that
// capture decodes. The ones missing (dec8, hp8, swe7, armscii8, keybcs2,
// macce, geostd8) have no implementation in golang.org/x/text and fail with
// [ErrUnsupportedCharset].
var charsets = func() map[string]*charset {
	multi := func(name string, enc encoding.Encoding, width func([]byte) int, special func([]byte) (rune, bool, error)) *charset {
		return &charset{name: name, enc: enc, asciiSafe: true, width: width, special: special}
	}
	m := map[string]*charset{
		"ascii":   {name: "ascii"},
		"utf8mb3": {name: "utf8mb3", asciiSafe: true, holdsReplacement: true},
		"utf8mb4": {name: "utf8mb4", asciiSafe: true, holdsReplacement: true},
		// A string column in the binary character set is reported as a
		// BINARY/VARBINARY/BLOB type; what reaches here are ENUM and SET
		// labels declared CHARACTER SET binary, which must be UTF-8.
		"binary": {name: "binary", asciiSafe: true, holdsReplacement: true},
		// MySQL's latin1 is Windows-1252 (MySQL manual, "West European
		// Character Sets").
		"latin1": singleByte("latin1", charmap.Windows1252, true, nil),
		"latin2": singleByte("latin2", charmap.ISO8859_2, true, nil),
		"latin5": singleByte("latin5", charmap.ISO8859_9, true, nil),
		"latin7": singleByte("latin7", charmap.ISO8859_13, true, nil),
		"cp1250": singleByte("cp1250", charmap.Windows1250, true, nil),
		"cp1251": singleByte("cp1251", charmap.Windows1251, true, nil),
		"cp1256": singleByte("cp1256", charmap.Windows1256, true, nil),
		"cp1257": singleByte("cp1257", charmap.Windows1257, true, nil),
		"cp850":  singleByte("cp850", charmap.CodePage850, false, nil),
		"cp852":  singleByte("cp852", charmap.CodePage852, false, nil),
		// The server's cp866 is IBM's original, with ⁿ and ² where the later
		// revision has № and ¤.
		"cp866": singleByte("cp866", charmap.CodePage866, false, map[byte]rune{0xFC: '\u207F', 0xFD: '\u00B2'}),
		// ISO 8859-7:1987: ʽ and ʼ where the 2003 revision has ‘ and ’.
		"greek": singleByte("greek", charmap.ISO8859_7, true, map[byte]rune{0xA1: '\u02BD', 0xA2: '\u02BC'}),
		// ISO 8859-8:1988: OVERLINE where the 1999 revision has MACRON.
		"hebrew": singleByte("hebrew", charmap.ISO8859_8, true, map[byte]rune{0xAF: '\u203E'}),
		"koi8r":  singleByte("koi8r", charmap.KOI8R, true, nil),
		// The server's koi8u predates RFC 2319 in three cells.
		"koi8u":    singleByte("koi8u", charmap.KOI8U, true, map[byte]rune{0x95: '\u2022', 0xAE: '\u255D', 0xBE: '\u256C'}),
		"macroman": singleByte("macroman", charmap.Macintosh, false, nil),
		// TIS-620 has no characters in 0x80–0x9F (Windows-874 does), and
		// the server converts its unassigned bytes (and NBSP) to U+FFFD.
		"tis620": singleByte("tis620", charmap.Windows874, true, tis620Fix()),
		"big5":   multi("big5", traditionalchinese.Big5, dbcsWidth(0x81), big5Special),
		"gbk":    multi("gbk", simplifiedchinese.GBK, dbcsWidth(0x81), nil),
		"gb2312": multi("gb2312", simplifiedchinese.GBK, dbcsWidth(0x81), gb2312Special),
		"euckr":  multi("euckr", korean.EUCKR, dbcsWidth(0x81), nil),
		"sjis":   multi("sjis", japanese.ShiftJIS, sjisWidth, jis(japanese.ShiftJIS, nil)),
		"cp932":  multi("cp932", japanese.ShiftJIS, sjisWidth, cp932UserDefined),
		// JIS X 0212 0x2237 is TILDE on the server's ujis, FULLWIDTH TILDE
		// in x/text; 0x2243 is FULLWIDTH BROKEN BAR on the server's eucjpms.
		"ujis":    multi("ujis", japanese.EUCJP, eucjpWidth, withFix(map[uint32]rune{0x8FA2B7: '~'}, jis(japanese.EUCJP, eucjpUserDefined))),
		"eucjpms": multi("eucjpms", japanese.EUCJP, eucjpWidth, withFix(map[uint32]rune{0x8FA2C3: '\uFFE4'}, eucjpmsSpecial)),
		"gb18030": {name: "gb18030", enc: simplifiedchinese.GB18030, asciiSafe: true, holdsReplacement: true},
		"ucs2":    {name: "ucs2", enc: unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), holdsReplacement: true},
		"utf16":   {name: "utf16", enc: unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), holdsReplacement: true},
		"utf16le": {name: "utf16le", enc: unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), holdsReplacement: true},
		"utf32":   {name: "utf32", enc: utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), holdsReplacement: true},
	}
	m["utf8"] = m["utf8mb3"] // MariaDB's and MySQL 5.7's name for utf8mb3
	return m
}()

func tis620Fix() map[byte]rune {
	m := map[byte]rune{0xA0: utf8.RuneError}
	for b := 0x80; b <= 0x9F; b++ {
		m[byte(b)] = rune(b)
	}
	for _, b := range []byte{0xDB, 0xDC, 0xDD, 0xDE, 0xFC, 0xFD, 0xFE, 0xFF} {
		m[b] = utf8.RuneError
	}
	return m
}

// lookupCharset returns the decoder of a character set name as
// information_schema reports it ("" means UTF-8: a definition that does not
// know the column's character set, e.g. from a binlog without metadata).
func lookupCharset(name string) (*charset, bool) {
	if name == "" {
		return charsets["utf8mb4"], true
	}
	cs, ok := charsets[strings.ToLower(name)]
	return cs, ok
}

// DecodeText decodes b from the named character set ("" is utf8mb4) to
// UTF-8, as the converters do. It fails with [ErrUnsupportedCharset] or
// [ErrInvalidValue].
func DecodeText(charsetName string, b []byte) (string, error) {
	cs, ok := lookupCharset(charsetName)
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnsupportedCharset, charsetName)
	}
	return cs.decode(b)
}

// CharsetSupported reports whether capture decodes a character set.
func CharsetSupported(name string) bool {
	_, ok := lookupCharset(name)
	return ok
}

// decode converts b from the character set to UTF-8. Bytes that are not a
// character of the set fail with [ErrInvalidValue]: they are never replaced
// or passed through.
func (c *charset) decode(b []byte) (string, error) {
	if c.asciiSafe && isASCII(b) {
		return string(b), nil
	}
	var err error
	switch {
	case c.name == "ascii":
		if isASCII(b) {
			return string(b), nil
		}
	case c.table != nil:
		out := make([]rune, 0, len(b))
		for _, x := range b {
			r := c.table[x]
			if r == 0 && x != 0 {
				return "", c.invalid(b, nil)
			}
			out = append(out, r)
		}
		return string(out), nil
	case c.width != nil:
		return c.decodeMulti(b)
	case c.enc == nil: // the UTF-8 family and binary
		if utf8.Valid(b) {
			return string(b), nil
		}
	default:
		var out []byte
		out, err = c.enc.NewDecoder().Bytes(b)
		if err == nil && bytes.ContainsRune(out, utf8.RuneError) && !c.faithful(b, out) {
			err = errors.New("undecodable bytes")
		}
		if err == nil {
			return string(out), nil
		}
	}
	return "", c.invalid(b, nil)
}

// decodeString is decode for a value the binlog library hands over as a
// string: text that is already UTF-8 (the UTF-8 family, and ASCII in an
// ASCII-safe set — nearly every value) is returned as it is, without the
// two copies of a []byte round trip.
func (c *charset) decodeString(s string) (string, error) {
	utf8Family := c.enc == nil && c.table == nil && c.width == nil && c.name != "ascii"
	if utf8Family && utf8.ValidString(s) || c.asciiSafe && isASCIIString(s) {
		return s, nil
	}
	return c.decode([]byte(s))
}

func isASCIIString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (c *charset) invalid(b []byte, why error) error {
	if why != nil {
		return fmt.Errorf("%w: bytes %s are not %s text: %w", ErrInvalidValue, hexPreview(b), c.name, why)
	}
	return fmt.Errorf("%w: bytes %s are not %s text", ErrInvalidValue, hexPreview(b), c.name)
}

// decodeMulti decodes a multi-byte set character by character, so that the
// server's differences (special) apply to whole characters.
func (c *charset) decodeMulti(b []byte) (string, error) {
	var out strings.Builder
	out.Grow(len(b) * 3 / 2)
	dec := c.enc.NewDecoder()
	for i := 0; i < len(b); {
		if b[i] < 0x80 {
			out.WriteByte(b[i])
			i++
			continue
		}
		n := c.width(b[i:])
		if i+n > len(b) {
			return "", c.invalid(b, errors.New("truncated character"))
		}
		ch := b[i : i+n]
		i += n
		if c.special != nil {
			r, ok, err := c.special(ch)
			if err != nil {
				return "", c.invalid(ch, err)
			}
			if ok {
				out.WriteRune(r)
				continue
			}
		}
		d, err := dec.Bytes(ch)
		if err != nil || utf8.RuneCount(d) != 1 || bytes.ContainsRune(d, utf8.RuneError) {
			return "", c.invalid(ch, nil)
		}
		out.Write(d)
	}
	return out.String(), nil
}

// faithful reports whether out, which holds U+FFFD, is the true decoding
// of in: the set has U+FFFD as a character and encoding out gives in back.
func (c *charset) faithful(in, out []byte) bool {
	if !c.holdsReplacement {
		return false
	}
	back, err := c.enc.NewEncoder().Bytes(out)
	return err == nil && bytes.Equal(back, in)
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// hexPreview renders up to 16 bytes in hex for error messages.
func hexPreview(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%X…", b[:16])
	}
	return fmt.Sprintf("%X", b)
}
