package mysqltype

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/schemas/debezium"
	"github.com/binlake/binlake/schemas/debezium/debeziumtest"
	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

func decBytes(s string) []byte {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad test decimal " + s)
	}
	return debezium.DecimalBytes(n)
}

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Skipf("time zone %s unavailable: %v", name, err)
	}
	return loc
}

func geom(srid uint32, wkb []byte) []byte {
	return append(binary.LittleEndian.AppendUint32(nil, srid), wkb...)
}

func pointWKB(x, y float64) []byte {
	b := []byte{1, 1, 0, 0, 0}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(y))
}

// TestSchemas checks the Avro rendering of each column type's field schema.
func TestSchemas(t *testing.T) {
	connect := Options{TimePrecision: TimeConnect}
	tests := []struct {
		typ      string
		nullable bool
		opts     Options
		want     string
	}{
		{"tinyint(4)", false, Options{}, `{"type":"int","connect.type":"int16"}`},
		{"tinyint(1)", false, Options{}, `{"type":"int","connect.type":"int16"}`},
		{"tinyint(3) unsigned", false, Options{}, `{"type":"int","connect.type":"int16"}`},
		{"boolean", false, Options{}, `"boolean"`},
		{"smallint(6)", true, Options{}, `["null",{"type":"int","connect.type":"int16"}]`},
		{"smallint unsigned", false, Options{}, `"int"`},
		{"mediumint(8) unsigned", false, Options{}, `"int"`},
		{"int(11)", false, Options{}, `"int"`},
		{"int(10) unsigned zerofill", false, Options{}, `"long"`},
		{"bigint(20)", false, Options{}, `"long"`},
		{"bigint(20) unsigned", false, Options{}, `"long"`},
		{"bigint(20) unsigned", false, Options{BigintUnsigned: BigintPrecise},
			`{"type":"bytes","scale":0,"precision":20,"connect.version":1,"connect.parameters":{"scale":"0","connect.decimal.precision":"20"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"float", false, Options{}, `"float"`},
		{"float(10,2)", false, Options{}, `"double"`},
		{"double", false, Options{}, `"double"`},
		{"double precision", false, Options{}, `"double"`},
		{"decimal(65,30)", false, Options{},
			`{"type":"bytes","scale":30,"precision":65,"connect.version":1,"connect.parameters":{"scale":"30","connect.decimal.precision":"65"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"decimal", false, Options{},
			`{"type":"bytes","scale":0,"precision":10,"connect.version":1,"connect.parameters":{"scale":"0","connect.decimal.precision":"10"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}`},
		{"decimal(10,2)", false, Options{Decimal: DecimalString}, `"string"`},
		{"numeric(10,2)", false, Options{Decimal: DecimalDouble}, `"double"`},
		{"bit(1)", false, Options{}, `"boolean"`},
		{"bit(64)", false, Options{},
			`{"type":"bytes","connect.version":1,"connect.parameters":{"length":"64"},"connect.name":"io.debezium.data.Bits"}`},
		{"varchar(255)", true, Options{}, `["null","string"]`},
		{"longtext", false, Options{}, `"string"`},
		{"varbinary(16)", false, Options{}, `"bytes"`},
		{"blob", false, Options{Binary: BinaryHex}, `"string"`},
		{"date", false, Options{}, `{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}`},
		{"date", false, connect, `{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}`},
		{"time(6)", false, Options{}, `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTime"}`},
		{"time(6)", false, connect, `{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}`},
		{"datetime", false, Options{}, `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}`},
		{"datetime(3)", false, Options{}, `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}`},
		{"datetime(4)", false, Options{}, `{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}`},
		{"datetime(6)", false, connect, `{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`},
		{"timestamp(3)", false, connect, `{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}`},
		{"year(4)", false, Options{}, `{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Year"}`},
		{"json", true, Options{}, `["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.data.Json"}]`},
		{"enum('a','it''s','c,d')", false, Options{},
			`{"type":"string","connect.version":1,"connect.parameters":{"allowed":"a,it's,c,d"},"connect.name":"io.debezium.data.Enum"}`},
		{"set('x','y')", false, Options{},
			`{"type":"string","connect.version":1,"connect.parameters":{"allowed":"x,y"},"connect.name":"io.debezium.data.EnumSet"}`},
		{"polygon", true, Options{},
			`["null",{"type":"record","name":"Geometry","namespace":"io.debezium.data.geometry","fields":[{"name":"wkb","type":"bytes"},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geometry","connect.version":1,"connect.name":"io.debezium.data.geometry.Geometry"}]`},
		{"point", false, Options{},
			`{"type":"record","name":"Point","namespace":"io.debezium.data.geometry","fields":[{"name":"x","type":"double"},{"name":"y","type":"double"},{"name":"wkb","type":["null","bytes"],"default":null},{"name":"srid","type":["null","int"],"default":null}],"connect.doc":"Geometry (POINT)","connect.version":1,"connect.name":"io.debezium.data.geometry.Point"}`},
		{"vector(3)", false, Options{},
			`{"type":"array","items":"float","connect.version":1,"connect.name":"io.debezium.data.FloatVector"}`},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			c, err := New(Column{Name: "c", Type: tt.typ, Nullable: tt.nullable}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := debezium.AvroSchema(c.Schema())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

type valueCase struct {
	name     string
	typ      string
	nullable bool
	opts     Options
	in       any
	want     any
}

func valueCases(t *testing.T) []valueCase {
	ny := mustLoc(t, "America/New_York")
	berlin := mustLoc(t, "Europe/Berlin")
	big64 := strings.Repeat("9", 35) + "." + strings.Repeat("9", 30)
	allOnes := bytes.Repeat([]byte{0xff}, 8)
	var labels64 []string
	for i := range 64 {
		labels64 = append(labels64, "m"+string(rune('A'+i%26))+strings.Repeat("x", i/26))
	}
	set64 := "set('" + strings.Join(labels64, "','") + "')"
	bigJSON := `{"k":"` + strings.Repeat("é🎉", 400_000) + `"}`
	bigBlob := bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<20)
	gwkb := []byte{1, 2, 0, 0, 0, 0, 0, 0, 0}
	pwkb := pointWKB(1.5, -2.5)
	return []valueCase{
		// integers
		{"tinyint min", "tinyint(4)", false, Options{}, int8(math.MinInt8), int16(math.MinInt8)},
		{"tinyint text", "tinyint(4)", false, Options{}, []byte("-7"), int16(-7)},
		{"tinyint unsigned", "tinyint unsigned", false, Options{}, uint8(255), int16(255)},
		{"tinyint unsigned without metadata", "tinyint unsigned", false, Options{}, int8(-1), int16(255)},
		{"boolean", "bool", false, Options{}, int8(1), true},
		{"boolean text", "boolean", false, Options{}, "0", false},
		{"smallint", "smallint", false, Options{}, int16(math.MinInt16), int16(math.MinInt16)},
		{"smallint unsigned", "smallint unsigned", false, Options{}, uint16(65535), int32(65535)},
		{"mediumint", "mediumint", false, Options{}, int32(-8388608), int32(-8388608)},
		{"mediumint unsigned", "mediumint unsigned", false, Options{}, uint32(16777215), int32(16777215)},
		{"mediumint unsigned without metadata", "mediumint unsigned", false, Options{}, int32(-1), int32(16777215)},
		{"int", "int(11)", false, Options{}, int32(math.MinInt32), int32(math.MinInt32)},
		{"int unsigned", "int unsigned", false, Options{}, uint32(math.MaxUint32), int64(math.MaxUint32)},
		{"int unsigned without metadata", "int unsigned", false, Options{}, int32(-1), int64(math.MaxUint32)},
		{"bigint", "bigint(20)", false, Options{}, int64(math.MinInt64), int64(math.MinInt64)},
		{"bigint unsigned max long", "bigint unsigned", false, Options{}, uint64(math.MaxUint64), int64(-1)},
		{"bigint unsigned 2^63 long", "bigint unsigned", false, Options{}, uint64(1 << 63), int64(math.MinInt64)},
		{"bigint unsigned max text long", "bigint unsigned", false, Options{}, "18446744073709551615", int64(-1)},
		{"bigint unsigned max precise", "bigint(20) unsigned", false, Options{BigintUnsigned: BigintPrecise},
			uint64(math.MaxUint64), decBytes("18446744073709551615")},
		{"bigint unsigned small precise", "bigint unsigned", false, Options{BigintUnsigned: BigintPrecise},
			uint64(255), decBytes("255")},
		{"bigint unsigned precise without metadata", "bigint unsigned", false, Options{BigintUnsigned: BigintPrecise},
			int64(-1), decBytes("18446744073709551615")},
		// floating point
		{"float", "float", false, Options{}, float32(1.5), float32(1.5)},
		{"float text", "float", false, Options{}, "0.1", float32(0.1)},
		{"float(M,D) widens", "float(10,2)", false, Options{}, float32(0.1), float64(float32(0.1))},
		{"double", "double", false, Options{}, math.SmallestNonzeroFloat64, math.SmallestNonzeroFloat64},
		// decimal
		{"decimal", "decimal(10,2)", false, Options{}, "123.45", decBytes("12345")},
		{"decimal rescaled", "decimal(10,2)", false, Options{}, "5", decBytes("500")},
		{"decimal negative", "decimal(10,2)", false, Options{}, "-0.50", decBytes("-50")},
		{"decimal(65,30) max", "decimal(65,30)", false, Options{}, big64, decBytes(strings.Repeat("9", 65))},
		{"decimal(65,30) min", "decimal(65,30)", false, Options{}, "-" + big64, decBytes("-" + strings.Repeat("9", 65))},
		{"decimal string", "decimal(10,2)", false, Options{Decimal: DecimalString}, "1.5", "1.50"},
		{"decimal string (65,30)", "decimal(65,30)", false, Options{Decimal: DecimalString}, "-" + big64, "-" + big64},
		{"decimal string zero", "decimal(4,2)", false, Options{Decimal: DecimalString}, "-0.00", "0.00"},
		{"decimal double", "decimal(10,2)", false, Options{Decimal: DecimalDouble}, "1.25", 1.25},
		// bits
		{"bit(1) binlog", "bit(1)", false, Options{}, int64(1), true},
		{"bit(1) snapshot", "bit(1)", false, Options{}, []byte{0}, false},
		{"bit(64) all ones binlog", "bit(64)", false, Options{}, int64(-1), allOnes},
		{"bit(64) all ones snapshot", "bit(64)", false, Options{}, allOnes, allOnes},
		{"bit(10) binlog", "bit(10)", false, Options{}, int64(0x2AB), []byte{0xAB, 0x02}},
		{"bit(10) snapshot", "bit(10)", false, Options{}, []byte{0x02, 0xAB}, []byte{0xAB, 0x02}},
		// strings
		{"varchar utf8mb4", "varchar(32)", false, Options{}, "héllo 🎉 𝄞", "héllo 🎉 𝄞"},
		{"empty string is not null", "varchar(32)", true, Options{}, "", ""},
		{"text from binlog bytes", "mediumtext", false, Options{}, []byte("t"), "t"},
		{"char", "char(3)", false, Options{}, "ab", "ab"},
		// binary
		{"binary padded", "binary(4)", false, Options{}, []byte{1}, []byte{1, 0, 0, 0}},
		{"binary from string", "binary(2)", false, Options{}, "\x01\x02", []byte{1, 2}},
		{"varbinary base64", "varbinary(16)", false, Options{Binary: BinaryBase64}, []byte("hi"), "aGk="},
		{"varbinary base64url", "varbinary(16)", false, Options{Binary: BinaryBase64URLSafe}, []byte{0xfb, 0xff}, "-_8="},
		{"varbinary hex", "varbinary(16)", false, Options{Binary: BinaryHex}, []byte{0xfb, 0xff}, "fbff"},
		{"longblob 4 MiB", "longblob", false, Options{}, bigBlob, bigBlob},
		// json
		{"json", "json", true, Options{}, `{"a":1}`, `{"a":1}`},
		{"json mariadb bytes", "json", true, Options{}, []byte(`[1]`), `[1]`},
		{"json multi-megabyte", "json", false, Options{}, bigJSON, bigJSON},
		{"json empty nullable", "json", true, Options{}, []byte{}, nil},
		{"json empty not null", "json", false, Options{}, []byte{}, "{}"},
		// date
		{"date", "date", false, Options{}, "2024-02-29", int32(19782)},
		{"date before epoch", "date", false, Options{}, "1969-12-31", int32(-1)},
		{"date year 1", "date", false, Options{}, "0001-01-01", int32(-719162)},
		{"date max", "date", false, Options{}, "9999-12-31", int32(2932896)},
		{"date time.Time", "date", false, Options{}, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), int32(19782)},
		{"date zero nullable", "date", true, Options{}, "0000-00-00", nil},
		{"date zero not null", "date", false, Options{}, "0000-00-00", int32(0)},
		{"date zero day", "date", true, Options{}, "2024-01-00", nil},
		{"date connect", "date", false, Options{TimePrecision: TimeConnect}, "1970-01-02", int32(1)},
		// DATE limits (manual: 1000-01-01 … 9999-12-31; MariaDB stores from 0000-01-01).
		{"date min documented", "date", false, Options{}, "1000-01-01", int32(-354285)},
		{"date year 0", "date", false, Options{}, "0000-01-01", int32(-719528)},
		{"date year 0 end", "date", false, Options{}, "0000-12-31", int32(-719163)},
		{"date julian gap day", "date", false, Options{}, "1582-10-10", int32(-141432)},
		{"date leap day", "date", false, Options{}, "2000-02-29", int32(11016)},
		{"date zero month nullable", "date", true, Options{}, "2020-00-15", nil},
		{"date zero month not null", "date", false, Options{}, "2020-00-15", int32(0)},
		{"date zero day not null", "date", false, Options{}, "2020-02-00", int32(0)},
		// DATETIME(0-6) limits.
		{"datetime min", "datetime", false, Options{}, "1000-01-01 00:00:00", int64(-30610224000000)},
		{"datetime max", "datetime", false, Options{}, "9999-12-31 23:59:59", int64(253402300799000)},
		{"datetime(1) max", "datetime(1)", false, Options{}, "9999-12-31 23:59:59.9", int64(253402300799900)},
		{"datetime(2) max", "datetime(2)", false, Options{}, "9999-12-31 23:59:59.99", int64(253402300799990)},
		{"datetime(3) max", "datetime(3)", false, Options{}, "9999-12-31 23:59:59.999", int64(253402300799999)},
		{"datetime(4) max", "datetime(4)", false, Options{}, "9999-12-31 23:59:59.9999", int64(253402300799999900)},
		{"datetime(5) max", "datetime(5)", false, Options{}, "9999-12-31 23:59:59.99999", int64(253402300799999990)},
		{"datetime(6) max", "datetime(6)", false, Options{}, "9999-12-31 23:59:59.999999", int64(253402300799999999)},
		{"datetime(6) year 1", "datetime(6)", false, Options{}, "0001-01-01 00:00:00.000001", int64(-62135596799999999)},
		{"datetime(4) before epoch", "datetime(4)", false, Options{}, "1969-12-31 23:59:59.9999", int64(-100)},
		{"datetime(2) before epoch floors to ms", "datetime(2)", false, Options{}, "1969-12-31 23:59:59.99", int64(-10)},
		{"datetime zero month nullable", "datetime", true, Options{}, "2020-00-15 10:20:30", nil},
		{"datetime(6) zero day not null", "datetime(6)", false, Options{}, "2020-02-00 23:59:59.999999", int64(0)},
		{"datetime(6) year 0", "datetime(6)", false, Options{}, "0000-12-31 23:59:59.999999", int64(-62135596800000001)},
		// time
		{"time", "time", false, Options{}, "12:34:56", int64(45296_000_000)},
		{"time fsp", "time(6)", false, Options{}, "00:00:00.000001", int64(1)},
		{"time fsp1", "time(1)", false, Options{}, "00:00:00.5", int64(500_000)},
		{"time negative", "time", false, Options{}, "-838:59:59", int64(-3020399_000_000)},
		{"time negative fraction", "time(2)", false, Options{}, "-00:00:01.50", int64(-1_500_000)},
		{"time over 24h", "time", false, Options{}, "25:00:00", int64(90000_000_000)},
		{"time max", "time(6)", false, Options{}, "838:59:59.000000", int64(3020399_000_000)},
		{"time duration", "time(3)", false, Options{}, 90*time.Minute + time.Millisecond, int64(5400_001_000)},
		{"time connect", "time(3)", false, Options{TimePrecision: TimeConnect}, "01:00:00.123", int32(3600123)},
		{"time connect negative", "time", false, Options{TimePrecision: TimeConnect}, "-01:00:00", int32(-3600000)},
		// TIME(0-6) limits: -838:59:59.999999 … 838:59:59.999999.
		{"time(6) max", "time(6)", false, Options{}, "838:59:59.999999", int64(3020399_999_999)},
		{"time(6) min", "time(6)", false, Options{}, "-838:59:59.999999", int64(-3020399_999_999)},
		{"time(1) min", "time(1)", false, Options{}, "-838:59:59.9", int64(-3020399_900_000)},
		{"time(2) max", "time(2)", false, Options{}, "838:59:59.99", int64(3020399_990_000)},
		{"time(3) min", "time(3)", false, Options{}, "-838:59:59.999", int64(-3020399_999_000)},
		{"time(4) max", "time(4)", false, Options{}, "838:59:59.9999", int64(3020399_999_900)},
		{"time(5) min", "time(5)", false, Options{}, "-838:59:59.99999", int64(-3020399_999_990)},
		{"time(6) minus one µs", "time(6)", false, Options{}, "-00:00:00.000001", int64(-1)},
		{"time(1) minus a tenth", "time(1)", false, Options{}, "-00:00:00.1", int64(-100_000)},
		{"time 24:00", "time", false, Options{}, "24:00:00", int64(86400_000_000)},
		{"time(6) end of day", "time(6)", false, Options{}, "23:59:59.999999", int64(86399_999_999)},
		{"time connect int32 limit", "time(3)", false, Options{TimePrecision: TimeConnect}, "596:31:23.647", int32(math.MaxInt32)},
		{"time connect negative int32 limit", "time(3)", false, Options{TimePrecision: TimeConnect}, "-596:31:23.648", int32(math.MinInt32)},
		// datetime
		{"datetime", "datetime", false, Options{}, "2024-01-02 03:04:05", int64(1704164645000)},
		{"datetime(3)", "datetime(3)", false, Options{}, "2024-01-02 03:04:05.678", int64(1704164645678)},
		{"datetime(3) before epoch", "datetime(3)", false, Options{}, "1969-12-31 23:59:59.999", int64(-1)},
		{"datetime(6)", "datetime(6)", false, Options{}, "2024-01-02 03:04:05.123456", int64(1704164645123456)},
		{"datetime(6) time.Time wall clock", "datetime(6)", false, Options{},
			time.Date(2024, 1, 2, 3, 4, 5, 123456000, berlin), int64(1704164645123456)},
		{"datetime zero nullable", "datetime", true, Options{}, "0000-00-00 00:00:00", nil},
		{"datetime zero not null", "datetime(6)", false, Options{}, "0000-00-00 00:00:00.000000", int64(0)},
		{"datetime connect drops micros", "datetime(6)", false, Options{TimePrecision: TimeConnect},
			"1969-12-31 23:59:59.999999", int64(-1)},
		// timestamp
		{"timestamp binlog time.Time", "timestamp", false, Options{},
			time.Date(2024, 1, 2, 3, 4, 5, 0, berlin), "2024-01-02T02:04:05Z"},
		{"timestamp(3) exact digits", "timestamp(3)", false, Options{},
			time.Date(2024, 1, 2, 3, 4, 5, 120_000_000, time.UTC), "2024-01-02T03:04:05.120Z"},
		{"timestamp(6) zero fraction", "timestamp(6)", false, Options{}, "2024-01-02 03:04:05.000000",
			"2024-01-02T03:04:05.000000Z"},
		{"timestamp text in New York", "timestamp(3)", false, Options{ServerTimeZone: ny},
			"2024-01-02 03:04:05.120", "2024-01-02T08:04:05.120Z"},
		{"timestamp text in Berlin summer", "timestamp", false, Options{ServerTimeZone: berlin},
			"2024-07-01 12:00:00", "2024-07-01T10:00:00Z"},
		// The zero TIMESTAMP is second 0: Debezium's binlog reader emits
		// that instant with the column's fsp digits, nullable or not.
		{"timestamp zero nullable", "timestamp", true, Options{}, "0000-00-00 00:00:00", "1970-01-01T00:00:00Z"},
		{"timestamp zero not null", "timestamp(6)", false, Options{}, "0000-00-00 00:00:00.000000", "1970-01-01T00:00:00.000000Z"},
		{"timestamp(3) zero not null", "timestamp(3)", false, Options{}, "0000-00-00 00:00:00.000", "1970-01-01T00:00:00.000Z"},
		{"timestamp(1) zero nullable", "timestamp(1)", true, Options{}, []byte("0000-00-00 00:00:00.0"), "1970-01-01T00:00:00.0Z"},
		// TIMESTAMP second 0 with a fraction (issue 17): go-mysql's binlog
		// text is "0000-00-00 00:00:00.ffffff" (fsp digits), a SELECT in
		// UTC gives the instant; both are 1970-01-01T00:00:00.fZ.
		{"timestamp(6) second 0 fraction binlog", "timestamp(6)", true, Options{}, "0000-00-00 00:00:00.999999", "1970-01-01T00:00:00.999999Z"},
		{"timestamp(6) second 0 fraction snapshot", "timestamp(6)", true, Options{}, "1970-01-01 00:00:00.999999", "1970-01-01T00:00:00.999999Z"},
		{"timestamp(6) second 0 one µs", "timestamp(6)", false, Options{}, "0000-00-00 00:00:00.000001", "1970-01-01T00:00:00.000001Z"},
		{"timestamp(1) second 0 fraction binlog", "timestamp(1)", true, Options{}, "0000-00-00 00:00:00.9", "1970-01-01T00:00:00.9Z"},
		{"timestamp(3) second 0 fraction binlog", "timestamp(3)", false, Options{}, "0000-00-00 00:00:00.001", "1970-01-01T00:00:00.001Z"},
		{"timestamp(5) second 0 fraction binlog", "timestamp(5)", false, Options{}, "0000-00-00 00:00:00.99999", "1970-01-01T00:00:00.99999Z"},
		{"timestamp(6) second 0 fraction in New York", "timestamp(6)", false, Options{ServerTimeZone: ny}, "0000-00-00 00:00:00.5", "1970-01-01T00:00:00.500000Z"},
		// TIMESTAMP limits: 1970-01-01 00:00:01 … 2038-01-19 03:14:07.999999 UTC.
		{"timestamp min", "timestamp", false, Options{}, "1970-01-01 00:00:01", "1970-01-01T00:00:01Z"},
		{"timestamp max", "timestamp", false, Options{}, "2038-01-19 03:14:07", "2038-01-19T03:14:07Z"},
		{"timestamp(6) max", "timestamp(6)", false, Options{}, "2038-01-19 03:14:07.999999", "2038-01-19T03:14:07.999999Z"},
		{"timestamp(1) max", "timestamp(1)", false, Options{}, "2038-01-19 03:14:07.9", "2038-01-19T03:14:07.9Z"},
		{"timestamp(2) min", "timestamp(2)", false, Options{}, "1970-01-01 00:00:01.00", "1970-01-01T00:00:01.00Z"},
		{"timestamp(4) min", "timestamp(4)", false, Options{}, "1970-01-01 00:00:01.0001", "1970-01-01T00:00:01.0001Z"},
		{"timestamp(6) min binlog time.Time", "timestamp(6)", false, Options{}, time.Unix(1, 1000), "1970-01-01T00:00:01.000001Z"},
		{"timestamp max text in -12:59", "timestamp(6)", false, Options{ServerTimeZone: time.FixedZone("", -(12*3600 + 59*60))},
			"2038-01-18 14:15:07.999999", "2038-01-19T03:14:07.999999Z"},
		{"timestamp min text in +13:00", "timestamp", false, Options{ServerTimeZone: time.FixedZone("", 13*3600)},
			"1970-01-01 13:00:01", "1970-01-01T00:00:01Z"},
		// year
		{"year", "year(4)", false, Options{}, int(2024), int32(2024)},
		{"year text", "year", false, Options{}, "1901", int32(1901)},
		{"year zero", "year", false, Options{}, int(0), int32(0)},
		{"year min", "year", false, Options{}, int(1901), int32(1901)},
		{"year max", "year", true, Options{}, int(2155), int32(2155)},
		{"year zero snapshot text", "year", true, Options{}, []byte("0000"), int32(0)},
		{"year snapshot text", "year", true, Options{}, []byte("2155"), int32(2155)},
		// enum and set
		{"enum index", "enum('a','b')", false, Options{}, int64(2), "b"},
		{"enum invalid index 0", "enum('a','b')", false, Options{}, int64(0), ""},
		{"enum snapshot label", "enum('a','b')", false, Options{}, []byte("a"), "a"},
		{"enum quoted label", "enum('it''s')", false, Options{}, int64(1), "it's"},
		{"set all members", "set('a','b','c')", false, Options{}, int64(7), "a,b,c"},
		{"set some members", "set('a','b','c')", false, Options{}, int64(5), "a,c"},
		{"set empty", "set('a','b','c')", false, Options{}, int64(0), ""},
		{"set 64 members all", set64, false, Options{}, int64(-1), strings.Join(labels64, ",")},
		{"set snapshot", "set('a','b')", false, Options{}, "a,b", "a,b"},
		// spatial and vector
		{"geometry", "geometry", true, Options{}, geom(4326, gwkb), debezium.Struct{gwkb, int32(4326)}},
		{"geometry srid 0", "linestring", false, Options{}, geom(0, gwkb), debezium.Struct{gwkb, nil}},
		{"point", "point", true, Options{}, geom(4326, pwkb), debezium.Struct{1.5, -2.5, pwkb, int32(4326)}},
		{"vector", "vector(2)", false, Options{},
			binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.5)), math.Float32bits(-2)),
			[]any{float32(1.5), float32(-2)}},
	}
}

// TestValues converts each value, compares it with the expected Debezium
// value, then encodes it and decodes it with goavro to cross-check.
func TestValues(t *testing.T) {
	for _, tt := range valueCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Column{Name: "c", Type: tt.typ, Nullable: tt.nullable}, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Convert(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("Convert(%v) (-want +got):\n%s", tt.in, d)
			}
			back, err := debeziumtest.RoundTrip(c.Schema(), got)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(got, back); d != "" {
				t.Errorf("goavro round trip (-want +got):\n%s", d)
			}
			// NULL converts to NULL for every nullable type.
			if tt.nullable {
				if v, err := c.Convert(nil); v != nil || err != nil {
					t.Errorf("Convert(nil) = %v, %v", v, err)
				}
				if _, err := debeziumtest.RoundTrip(c.Schema(), nil); err != nil {
					t.Errorf("null round trip: %v", err)
				}
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	tests := []struct {
		name      string
		col       Column
		want      any
		wantAvro  string // substring of the rendered field schema
		opts      Options
		wantError error
	}{
		{name: "mysql string", col: Column{Type: "varchar(10)", Default: ptr("abc")}, want: "abc"},
		{name: "mariadb quoted string", col: Column{Type: "varchar(10)", Nullable: true, Default: ptr("'it''s'")}, want: "it's",
			wantAvro: `[{"type":"string","connect.default":"it's"},"null"]`},
		{name: "mariadb null", col: Column{Type: "varchar(10)", Nullable: true, Default: ptr("NULL")}, want: nil},
		{name: "int", col: Column{Type: "int(11)", Default: ptr("5")}, want: int32(5)},
		{name: "tinyint", col: Column{Type: "tinyint(4)", Default: ptr("-1")}, want: int16(-1),
			wantAvro: `{"type":"int","connect.default":-1,"connect.type":"int16"}`},
		{name: "decimal", col: Column{Type: "decimal(10,2)", Default: ptr("1.5")}, want: decBytes("150")},
		{name: "timestamp current", col: Column{Type: "timestamp", Default: ptr("CURRENT_TIMESTAMP")}, want: EpochZonedTimestamp},
		{name: "timestamp(3) current mariadb", col: Column{Type: "timestamp(3)", Default: ptr("current_timestamp(3)")}, want: EpochZonedTimestamp},
		{name: "timestamp(3) zero not null", col: Column{Type: "timestamp(3)", Default: ptr("'0000-00-00 00:00:00.000'")}, want: EpochZonedTimestamp},
		{name: "timestamp zero nullable", col: Column{Type: "timestamp", Nullable: true, Default: ptr("'0000-00-00 00:00:00'")}, want: nil},
		{name: "timestamp(6) second 0 fraction", col: Column{Type: "timestamp(6)", Nullable: true, Default: ptr("'1970-01-01 00:00:00.999999'")}, want: "1970-01-01T00:00:00.999999Z"},
		{name: "timestamp(3) nullable current", col: Column{Type: "timestamp(3)", Nullable: true, Default: ptr("current_timestamp(3)")}, want: nil},
		{name: "datetime(6) nullable current", col: Column{Type: "datetime(6)", Nullable: true, Default: ptr("current_timestamp(6)")}, want: int64(0)},
		{name: "timestamp literal in zone", col: Column{Type: "timestamp", Default: ptr("2024-01-01 01:00:00")},
			opts: Options{ServerTimeZone: time.FixedZone("+01", 3600)}, want: "2024-01-01T00:00:00Z"},
		{name: "datetime current", col: Column{Type: "datetime", Default: ptr("now()")}, want: int64(0)},
		{name: "datetime(6) literal", col: Column{Type: "datetime(6)", Default: ptr("'1970-01-01 00:00:01.000001'")}, want: int64(1_000_001)},
		{name: "date zero not null", col: Column{Type: "date", Default: ptr("0000-00-00")}, want: int32(0)},
		{name: "date zero nullable", col: Column{Type: "date", Nullable: true, Default: ptr("0000-00-00")}, want: nil},
		{name: "bit", col: Column{Type: "bit(4)", Default: ptr("b'0101'")}, want: []byte{5}},
		{name: "bit(1)", col: Column{Type: "bit(1)", Default: ptr("b'1'")}, want: true},
		{name: "enum", col: Column{Type: "enum('new','paid')", Default: ptr("new")}, want: "new"},
		{name: "set", col: Column{Type: "set('a','b')", Default: ptr("a,b")}, want: "a,b"},
		{name: "binary hex", col: Column{Type: "binary(2)", Default: ptr("0x0102")}, want: []byte{1, 2}},
		{name: "expression", col: Column{Type: "varchar(36)", Default: ptr("uuid()"), DefaultGenerated: true}, want: nil},
		{name: "current_timestamp on int", col: Column{Type: "int", Default: ptr("CURRENT_TIMESTAMP")}, want: nil},
		{name: "bad int", col: Column{Type: "int", Default: ptr("abc")}, wantError: ErrInvalidDefault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.col.Name = "c"
			c, err := New(tt.col, tt.opts)
			if tt.wantError != nil {
				if !errors.Is(err, tt.wantError) {
					t.Fatalf("got %v, want %v", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, c.Schema().Default); d != "" {
				t.Errorf("default (-want +got):\n%s", d)
			}
			js, err := debezium.AvroSchema(&debezium.Schema{Type: debezium.STRUCT, Name: "R",
				Fields: []debezium.Field{c.Field()}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantAvro != "" && !strings.Contains(string(js), tt.wantAvro) {
				t.Errorf("schema %s does not contain %s", js, tt.wantAvro)
			}
			if _, err := debeziumtest.Codec(&debezium.Schema{Type: debezium.STRUCT, Name: "R",
				Fields: []debezium.Field{c.Field()}}); err != nil {
				t.Errorf("goavro rejects default: %v", err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		col  Column
		opts Options
		in   any
		want error
	}{
		{"unknown type", Column{Type: "uuid"}, Options{}, nil, ErrUnsupportedType},
		{"inet6", Column{Type: "inet6"}, Options{}, nil, ErrUnsupportedType},
		{"bad arguments", Column{Type: "decimal(a,b)"}, Options{}, nil, ErrUnsupportedType},
		{"unbalanced", Column{Type: "enum('a'"}, Options{}, nil, ErrUnsupportedType},
		{"bad mode", Column{Type: "int"}, Options{Decimal: "exact"}, nil, ErrInvalidOptions},
		{"tinyint out of range", Column{Type: "tinyint"}, Options{}, "300", ErrInvalidValue},
		{"int wrong go type", Column{Type: "int"}, Options{}, 1.5, ErrInvalidValue},
		{"decimal too many digits", Column{Type: "decimal(5,2)"}, Options{}, "1.234", ErrInvalidValue},
		{"decimal garbage", Column{Type: "decimal(5,2)"}, Options{}, "1e5", ErrInvalidValue},
		{"enum index out of range", Column{Type: "enum('a')"}, Options{}, int64(2), ErrInvalidValue},
		{"set bit out of range", Column{Type: "set('a')"}, Options{}, int64(2), ErrInvalidValue},
		{"bad date", Column{Type: "date"}, Options{}, "2024-13-01", ErrInvalidValue},
		{"bad time", Column{Type: "time"}, Options{}, "12:61:00", ErrInvalidValue},
		// Days a month does not have (sql_mode ALLOW_INVALID_DATES).
		{"date february 31", Column{Type: "date"}, Options{}, "2021-02-31", ErrInvalidValue},
		{"date february 29 common year", Column{Type: "date", Nullable: true}, Options{}, []byte("2021-02-29"), ErrInvalidValue},
		{"date february 29 1900", Column{Type: "date"}, Options{}, "1900-02-29", ErrInvalidValue},
		{"datetime april 31", Column{Type: "datetime(6)"}, Options{}, "2021-04-31 00:00:00.000001", ErrInvalidValue},
		{"datetime connect june 31", Column{Type: "datetime"}, Options{TimePrecision: TimeConnect}, "2021-06-31 10:00:00", ErrInvalidValue},
		{"date default february 30", Column{Type: "date", Default: ptr("'2021-02-30'")}, Options{}, nil, ErrInvalidDefault},
		{"timestamp bad text", Column{Type: "timestamp(6)"}, Options{}, "2021-02-30 00:00:00", ErrInvalidValue},
		{"year out of range", Column{Type: "year"}, Options{}, int(10000), ErrInvalidValue},
		// Connect Time is INT32 ms: TIME beyond ±596:31:23.647 does not fit
		// (it would wrap to another value).
		{"time connect max overflows int32", Column{Type: "time(3)"}, Options{TimePrecision: TimeConnect}, "838:59:59.999", ErrInvalidValue},
		{"time connect min overflows int32", Column{Type: "time"}, Options{TimePrecision: TimeConnect}, "-838:59:59", ErrInvalidValue},
		{"short geometry", Column{Type: "geometry"}, Options{}, []byte{1, 2}, ErrInvalidValue},
		{"point not a point", Column{Type: "point"}, Options{}, geom(0, append([]byte{1, 2, 0, 0, 0}, make([]byte, 16)...)), ErrInvalidValue},
		{"bit overflow", Column{Type: "bit(8)"}, Options{}, int64(256), ErrInvalidValue},
		{"json diff", Column{Type: "json"}, Options{}, struct{}{}, ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.col.Name = "col_x"
			c, err := New(tt.col, tt.opts)
			if err == nil {
				_, err = c.Convert(tt.in)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidOptions) && !strings.Contains(err.Error(), "converting column col_x") {
				t.Errorf("error %q does not name the column", err)
			}
		})
	}
}

// TestGoldenA5 builds the A.5 example from information_schema-style
// columns and compares it with the golden registry schema.
func TestGoldenA5(t *testing.T) {
	cols := []Column{
		{Name: "id", Type: "int(11)"},
		{Name: "name", Type: "varchar(255)", Nullable: true},
		{Name: "price", Type: "decimal(10,2)"},
		{Name: "created_dt", Type: "datetime", Nullable: true},
		{Name: "updated_ts", Type: "timestamp", Default: ptr("current_timestamp()")},
		{Name: "attrs", Type: "json", Nullable: true},
		{Name: "status", Type: "enum('new','paid','shipped')", Default: ptr("'new'")},
	}
	tbl, err := NewTable(cols, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := debezium.TableID{Prefix: "dbserver1", DB: "inventory", Table: "orders"}
	env := debezium.EnvelopeSchema(id, debezium.FlavorMySQL, debezium.ValueSchema(id, tbl.Fields()))
	got, err := debezium.AvroSchema(env)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../../schemas/debezium/testdata/orders-value.avsc")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != strings.TrimSpace(string(want)) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	key, err := debezium.AvroSchema(debezium.KeySchema(id, tbl.Fields()[:1]))
	if err != nil {
		t.Fatal(err)
	}
	wantKey, _ := os.ReadFile("../../../schemas/debezium/testdata/orders-key.avsc")
	if string(key) != strings.TrimSpace(string(wantKey)) {
		t.Errorf("key got %s\nwant %s", key, wantKey)
	}
}

// realisticTable is a typical OLTP row: ids, money, status, timestamps,
// a short text and a JSON document.
func realisticTable(tb testing.TB) (*Table, []any) {
	cols := []Column{
		{Name: "id", Type: "bigint(20) unsigned"},
		{Name: "customer_id", Type: "int(11)"},
		{Name: "sku", Type: "varchar(64)"},
		{Name: "qty", Type: "smallint(6)"},
		{Name: "price", Type: "decimal(12,2)"},
		{Name: "status", Type: "enum('new','paid','shipped')"},
		{Name: "note", Type: "varchar(255)", Nullable: true},
		{Name: "created_at", Type: "datetime(6)"},
		{Name: "updated_at", Type: "timestamp(3)"},
		{Name: "attrs", Type: "json", Nullable: true},
	}
	tbl, err := NewTable(cols, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	row := []any{
		uint64(123456789), int32(4242), "SKU-000123-BLUE-XL", int16(3), "1299.99", int64(2), nil,
		"2024-05-06 07:08:09.123456", time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC),
		[]byte(`{"gift":true,"channel":"web","tags":["a","b"]}`),
	}
	return tbl, row
}

func TestRealisticRowRoundTrip(t *testing.T) {
	tbl, row := realisticTable(t)
	id := debezium.TableID{Prefix: "p", DB: "shop", Table: "orders"}
	env := debezium.EnvelopeSchema(id, debezium.FlavorMariaDB, debezium.ValueSchema(id, tbl.Fields()))
	after, err := tbl.ConvertRow(nil, row)
	if err != nil {
		t.Fatal(err)
	}
	e := debezium.Envelope{After: after, Op: debezium.OpCreate,
		Source: debezium.Source{Version: "3.1.2.Final", Connector: debezium.FlavorMariaDB, Name: "p", DB: "shop", File: "f"}}
	want := e.Struct()
	got, err := debeziumtest.RoundTrip(env, want)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := tbl.ConvertRow(nil, row[:3]); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("short row: %v", err)
	}
}

// BenchmarkConvertEncodeRow measures binlog row → Debezium value →
// framed Avro envelope, the per-row hot path of capture.
func BenchmarkConvertEncodeRow(b *testing.B) {
	tbl, row := realisticTable(b)
	id := debezium.TableID{Prefix: "p", DB: "shop", Table: "orders"}
	env := debezium.EnvelopeSchema(id, debezium.FlavorMySQL, debezium.ValueSchema(id, tbl.Fields()))
	e := debezium.Envelope{Op: debezium.OpCreate,
		Source: debezium.Source{Version: "3.1.2.Final", Connector: debezium.FlavorMySQL, Name: "p", DB: "shop",
			Table: "orders", File: "mysql-bin.000001", Pos: 1234, ServerID: 1, TsMs: 1, TsUs: 1000, TsNs: 1000000}}
	var after debezium.Struct
	var buf, frame []byte
	after, _ = tbl.ConvertRow(after, row)
	e.After = after
	buf, _ = debezium.AppendAvro(buf, env, e.Struct())
	b.SetBytes(int64(len(buf) + 5))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		after, err = tbl.ConvertRow(after, row)
		if err != nil {
			b.Fatal(err)
		}
		e.After = after
		buf, err = e.AppendAvro(buf[:0], env)
		if err != nil {
			b.Fatal(err)
		}
		frame = debezium.AppendFrame(frame[:0], 7, buf)
	}
}

// BenchmarkConvertRow isolates the value conversion.
func BenchmarkConvertRow(b *testing.B) {
	tbl, row := realisticTable(b)
	var after debezium.Struct
	b.ReportAllocs()
	for b.Loop() {
		after, _ = tbl.ConvertRow(after, row)
	}
}

// snapshotTable is test/bench's orders table with one row as a snapshot
// SELECT returns it over the text protocol: every value as []byte.
func snapshotTable(tb testing.TB) (*Table, []any) {
	cols := []Column{
		{Name: "id", Type: "bigint(20)"},
		{Name: "customer_id", Type: "int(11)"},
		{Name: "status", Type: "enum('new','paid','shipped','cancelled')", Charset: "utf8mb4"},
		{Name: "amount", Type: "decimal(12,2)"},
		{Name: "currency", Type: "char(3)", Charset: "utf8mb4"},
		{Name: "note", Type: "varchar(200)", Nullable: true, Charset: "utf8mb4"},
		{Name: "created_at", Type: "datetime(6)"},
		{Name: "updated_at", Type: "timestamp(3)"},
		{Name: "flags", Type: "tinyint(3) unsigned"},
		{Name: "attrs", Type: "json", Nullable: true},
	}
	tbl, err := NewTable(cols, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	text := []string{"4242424", "3975", "paid", "12345.67", "EUR", "order 4242424 0f3c5e2a9b1d4c7e8f6a5b4c3d2e1f00",
		"2024-02-19 02:23:44.242424", "2024-07-20 02:23:44.000", "184", `{"k": 4242424, "tag": "9e107d9d372bb6826bd81d3542a419d6"}`}
	row := make([]any, len(text))
	for i, s := range text {
		row[i] = []byte(s)
	}
	return tbl, row
}

// BenchmarkConvertRowSnapshot is the value conversion of a snapshot row
// (text protocol bytes), the per-row work of a snapshot's converters.
func BenchmarkConvertRowSnapshot(b *testing.B) {
	tbl, row := snapshotTable(b)
	var after debezium.Struct
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if after, err = tbl.ConvertRow(after[:0], row); err != nil {
			b.Fatal(err)
		}
	}
}
