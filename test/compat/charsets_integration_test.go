//go:build integration

package compat

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlake/binlake/test/kafkatest"
	"github.com/binlake/binlake/test/testenv"
)

// candidates are texts from the repertoires of the character sets (the
// MySQL 8.4 and MariaDB 10.11 manuals' character-set chapters name the
// languages each covers); a table keeps those its charset holds, as the
// server decides (CONVERT round trip).
var candidates = []string{
	"café", "Grüße", "naïve façade", "Ærø ß ÿ", "€ „quoted“ – …", "Łódź Ęą", "Příliš žluťoučký", "Şişli İğ",
	"Ελληνικά", "Кириллица ёЁ", "Україна ґї", "עברית", "العربية", "ภาษาไทย", "Õun šž", "Ķīļ",
	"日本語", "カタカナ", "ｶﾀｶﾅ", "～〜", "中文简体", "繁體中文", "한국어", "￥£¢", "😀 emoji", "Ω≈ç√",
}

// charsetWorkload creates, for one character set, a table with the
// charset's texts in a key column, CHAR (padding), VARCHAR, TEXT, ENUM and
// SET columns, and returns the number of rows written by insert (ids from
// base).
type charsetTable struct {
	name  string
	cs    string
	texts []string
}

func repertoire(t *testing.T, db *sql.DB, cs string) []string {
	t.Helper()
	var out []string
	for _, c := range candidates {
		var back sql.NullString
		err := db.QueryRowContext(t.Context(), "SELECT CONVERT(CONVERT(? USING "+cs+") USING utf8mb4)", c).Scan(&back)
		if cs == "big5" && strings.ContainsFunc(c, func(r rune) bool { return (r >= 0x3040 && r <= 0x30FF) || (r >= 0x400 && r <= 0x4FF) }) {
			// Big5's kana and Cyrillic are in the ETEN rows 0xC6A1-0xC8FE, where capture
			// stops by design (TYPES.md, "Character sets").
			continue
		}
		if err == nil && back.Valid && back.String == c && !isASCII(c) {
			out = append(out, c)
		}
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func quoteSQL(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (ct charsetTable) create() string {
	labels := ct.texts
	if len(labels) > 3 {
		labels = labels[:3]
	}
	var enum, set []string
	for _, l := range labels {
		enum = append(enum, quoteSQL(l))
		set = append(set, quoteSQL(strings.ReplaceAll(l, ",", ";")))
	}
	return fmt.Sprintf("CREATE TABLE %s (k INT NOT NULL, id VARCHAR(40) CHARACTER SET %[2]s NOT NULL, c CHAR(20) CHARACTER SET %[2]s, "+
		"v VARCHAR(100) CHARACTER SET %[2]s, tx TEXT CHARACTER SET %[2]s, e ENUM(%[3]s) CHARACTER SET %[2]s, "+
		"s SET(%[4]s) CHARACTER SET %[2]s, PRIMARY KEY (k, id))",
		ct.name, ct.cs, strings.Join(enum, ","), strings.Join(set, ","))
}

// inserts writes one row per text, with ids from base.
func (ct charsetTable) inserts(base int) []string {
	var out []string
	labels := min(len(ct.texts), 3)
	for i, txt := range ct.texts {
		l := ct.texts[i%labels]
		setv := strings.ReplaceAll(l, ",", ";")
		if labels > 1 {
			setv += "," + strings.ReplaceAll(ct.texts[(i+1)%labels], ",", ";")
		}
		c := []rune(txt)
		if len(c) > 20 {
			c = c[:20]
		}
		out = append(out, fmt.Sprintf("INSERT INTO %s VALUES (%d, %s, %s, %s, %s, %s, %s)", ct.name, base+i,
			quoteSQL(txt), quoteSQL(string(c)), quoteSQL(txt+" "+txt), quoteSQL(strings.Repeat(txt, 3)), quoteSQL(l), quoteSQL(setv)))
	}
	return out
}

// startCaptureOnly builds and starts capture on database db with topic
// prefix, without Debezium, and returns its log path.
func startCaptureOnly(t *testing.T, db, prefix string, env ...string) string {
	t.Helper()
	log, _ := startCaptureCmd(t, db, prefix, env...)
	return log
}

// startCaptureCmd is startCaptureOnly, also returning the process.
func startCaptureCmd(t *testing.T, db, prefix string, env ...string) (string, *exec.Cmd) {
	t.Helper()
	m := testenv.MariaDBEnv(t)
	bin := filepath.Join(t.TempDir(), "capture")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/binlake/binlake/capture").CombinedOutput(); err != nil {
		t.Fatalf("building capture: %v\n%s", err, out)
	}
	logPath := filepath.Join(t.TempDir(), "capture.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		"CAPTURE_MYSQL_ADDR="+m.Addr, "CAPTURE_MYSQL_USER="+m.CaptureUser, "CAPTURE_MYSQL_PASSWORD="+m.CapturePassword,
		"CAPTURE_KAFKA_BROKERS="+strings.Join(testenv.KafkaBrokers(t), ","), "CAPTURE_SCHEMA_REGISTRY_URL="+testenv.RegistryURL(t),
		"CAPTURE_TOPIC_PREFIX="+prefix, "CAPTURE_DATABASE_INCLUDE_LIST="+db, "CAPTURE_METRICS_ADDR=off")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("capture log (last 4000 bytes):\n%s", b[max(0, len(b)-4000):])
		}
	})
	return logPath, cmd
}

// TestCharsetsAgainstConvert checks capture's strings against the server,
// for every character set the server offers that capture decodes: rows
// written before capture starts come through the snapshot, rows written
// after through the binlog, and every string, ENUM and SET value (key
// columns included) must equal SELECT CONVERT(col USING utf8mb4).
func TestCharsetsAgainstConvert(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	db := m.CreateDatabase(t, "cs")
	admin := m.AdminDB(t, db)
	rows, err := admin.QueryContext(t.Context(), "SELECT CHARACTER_SET_NAME FROM information_schema.CHARACTER_SETS ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for rows.Next() {
		var cs string
		if err := rows.Scan(&cs); err != nil {
			t.Fatal(err)
		}
		sets = append(sets, cs)
	}
	rows.Close()

	var tables []charsetTable
	skipped := map[string]string{}
	for _, cs := range sets {
		if cs == "binary" {
			skipped[cs] = "string columns in binary are BINARY/VARBINARY/BLOB types"
			continue
		}
		if unsupportedCharsets[cs] {
			skipped[cs] = "capture stops on it (TestUnsupportedCharsetStops)"
			continue
		}
		texts := repertoire(t, admin, cs)
		if cs == "ascii" {
			texts = []string{"plain", "A~z{|}", "tab\there"} // no repertoire beyond ASCII
		}
		if len(texts) == 0 {
			t.Fatalf("%s: no candidate text round-trips through the server; add one from its repertoire", cs)
		}
		ct := charsetTable{name: "t_" + cs, cs: cs, texts: texts}
		tables = append(tables, ct)
		stmts := append([]string{ct.create()}, ct.inserts(1)...)
		for _, s := range stmts {
			if _, err := admin.ExecContext(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	prefix := testenv.Unique(t, "cscap")
	logPath := startCaptureOnly(t, db, prefix, "CAPTURE_SNAPSHOT_MODE=initial")
	waitLogFile(t, logPath, "Connected to server", 2*time.Minute)
	for _, ct := range tables {
		for _, s := range ct.inserts(1000) {
			if _, err := admin.ExecContext(t.Context(), s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
	capturedUpTo(t, db, prefix, 2*time.Minute) // the reads below end at the topics' end offsets
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	checked, values := 0, 0
	for _, ct := range tables {
		want := 2 * len(ct.texts)
		recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, prefix+"."+db+"."+ct.name, want, 2*time.Minute)
		if len(recs) != want {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s: %d records, want %d; capture log:\n%s", ct.name, len(recs), want, b)
		}
		ops := map[string]int{}
		for _, rec := range recs {
			ops[rec.Op()]++
			after, _ := rec.Value["after"].(map[string]any)
			k := after["k"]
			var got [6]any
			for i, col := range []string{"id", "c", "v", "tx", "e", "s"} {
				got[i] = after[col]
			}
			var exp [6]sql.NullString
			err := admin.QueryRowContext(t.Context(), "SELECT CONVERT(id USING utf8mb4), CONVERT(c USING utf8mb4), CONVERT(v USING utf8mb4), "+
				"CONVERT(tx USING utf8mb4), CONVERT(e USING utf8mb4), CONVERT(s USING utf8mb4) FROM "+ct.name+" WHERE k = ?", k).
				Scan(&exp[0], &exp[1], &exp[2], &exp[3], &exp[4], &exp[5])
			if err != nil {
				t.Fatalf("%s k=%v: %v", ct.name, k, err)
			}
			for i, col := range []string{"id", "c", "v", "tx", "e", "s"} {
				values++
				if fmt.Sprint(got[i]) != exp[i].String {
					t.Errorf("%s k=%v (op %s) column %s: capture %q, server CONVERT %q", ct.name, k, rec.Op(), col, got[i], exp[i].String)
				}
			}
			key, _ := rec.Key["id"].(string)
			if key != exp[0].String {
				t.Errorf("%s k=%v: key id %q, server %q", ct.name, k, key, exp[0].String)
			}
		}
		if ops["r"] != len(ct.texts) || ops["c"] != len(ct.texts) {
			t.Errorf("%s: ops %v, want %d snapshot reads and %d creates", ct.name, ops, len(ct.texts), len(ct.texts))
		}
		checked++
	}
	fmt.Printf("CHARSETS checked=%d offered=%d values=%d skipped=%v\n", checked, len(sets), values, skipped)
}

// unsupportedCharsets are MariaDB 10.11's character sets that
// golang.org/x/text does not implement.
var unsupportedCharsets = map[string]bool{
	"armscii8": true, "dec8": true, "geostd8": true, "hp8": true, "keybcs2": true, "macce": true, "swe7": true,
}

// TestUnsupportedCharsetStops: a column in a character set capture cannot
// decode (here MariaDB's swe7, which golang.org/x/text lacks), created
// while capture streams, stops capture at its first row event with an
// error naming the table, the column, the charset and the fix; nothing of
// the table is written.
func TestUnsupportedCharsetStops(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	db := m.CreateDatabase(t, "csbad")
	admin := m.AdminDB(t, db)
	prefix := testenv.Unique(t, "csbad")
	logPath, cmd := startCaptureCmd(t, db, prefix, "CAPTURE_SNAPSHOT_MODE=no_data")
	waitLogFile(t, logPath, "Connected to server", 2*time.Minute)
	for _, s := range []string{
		"CREATE TABLE legacy (id INT PRIMARY KEY, name VARCHAR(20) CHARACTER SET swe7)",
		"INSERT INTO legacy VALUES (1, 'abc')",
	} {
		if _, err := admin.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var exitErr error
	testenv.Eventually(t, 2*time.Minute, 200*time.Millisecond, func() bool {
		select {
		case exitErr = <-done:
			return true
		default:
			return false
		}
	}, "capture to stop on the swe7 column")
	if exitErr == nil {
		t.Fatal("capture exited 0")
	}
	b, _ := os.ReadFile(logPath)
	want := []string{db + ".legacy", "column name", "character set swe7", "CHARACTER SET utf8mb4", "-column-exclude-list"}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("capture's error does not name %q:\n%s", w, b[max(0, len(b)-2000):])
		}
	}
	if topics := kafkatest.ListTopics(t, testenv.KafkaBrokers(t)); slicesContains(topics, prefix+"."+db+".legacy") {
		dec, _ := kafkatest.NewDecoder(testenv.RegistryURL(t))
		if recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, prefix+"."+db+".legacy", 0, time.Minute); len(recs) > 0 {
			t.Errorf("capture wrote %d records of the swe7 table", len(recs))
		}
	}
	fmt.Printf("STOP %s\n", lastLine(string(b)))
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestCharsetAlterWhileBehind: rows written in latin1, then the table
// converted to utf8mb4 and more rows written, all before capture reads
// them (it starts at the GTID before the workload): information_schema
// says utf8mb4 for every row, the table map events say which charset each
// row was written in, and every value must equal what the server returns.
func TestCharsetAlterWhileBehind(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	db := m.CreateDatabase(t, "csalter")
	admin := m.AdminDB(t, db)
	var gtid string
	if err := admin.QueryRowContext(t.Context(), "SELECT @@gtid_binlog_pos").Scan(&gtid); err != nil {
		t.Fatal(err)
	}
	// MariaDB 10.11 refuses CONVERT TO CHARACTER SET on a latin1 ENUM with
	// non-ASCII labels ("Data truncated"), so t's ENUM stays latin1 and
	// its VARCHAR changes by MODIFY; u changes by CONVERT TO.
	stmts := []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20) CHARACTER SET latin1, e ENUM('café','thé') CHARACTER SET latin1) CHARACTER SET latin1",
		"CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(20)) CHARACTER SET latin1",
		"INSERT INTO t VALUES (1, 'café', 'thé')",
		"INSERT INTO u VALUES (1, 'café')",
		"ALTER TABLE t MODIFY v VARCHAR(20) CHARACTER SET utf8mb4",
		"ALTER TABLE u CONVERT TO CHARACTER SET utf8mb4",
		"INSERT INTO t VALUES (2, 'Grüße ąę', 'café')",
		"INSERT INTO u VALUES (2, 'Grüße ąę')",
		"ALTER TABLE t MODIFY v VARCHAR(20) CHARACTER SET latin2",
		"ALTER TABLE u CONVERT TO CHARACTER SET latin2",
		"INSERT INTO t VALUES (3, 'Łódź', 'thé')",
		"INSERT INTO u VALUES (3, 'Łódź')",
		"UPDATE t SET v = CONCAT(v, 'é') WHERE id = 1",
		"UPDATE u SET v = CONCAT(v, 'é') WHERE id = 1",
	}
	for _, s := range stmts {
		if _, err := admin.ExecContext(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	prefix := testenv.Unique(t, "csalter")
	logPath := startCaptureOnly(t, db, prefix, "CAPTURE_SNAPSHOT_MODE=never", "CAPTURE_START_POSITION=gtid:"+gtid)
	capturedUpTo(t, db, prefix, 2*time.Minute) // the reads below end at the topics' end offsets
	dec, err := kafkatest.NewDecoder(testenv.RegistryURL(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ v, e string }{{"café", "thé"}, {"Grüße ąę", "café"}, {"Łódź", "thé"}, {"caféé", "thé"}}
	for _, tbl := range []string{"t", "u"} {
		recs := kafkatest.ReadAll(t, testenv.KafkaBrokers(t), dec, prefix+"."+db+"."+tbl, 4, 2*time.Minute)
		if len(recs) != len(want) {
			t.Fatalf("%s: %d records, want %d", tbl, len(recs), len(want))
		}
		for i, rec := range recs {
			after, _ := rec.Value["after"].(map[string]any)
			if after["v"] != want[i].v || (tbl == "t" && after["e"] != want[i].e) {
				t.Errorf("%s record %d (op %s): v=%q e=%q, want %q %q", tbl, i, rec.Op(), after["v"], after["e"], want[i].v, want[i].e)
			}
		}
	}
	// Only the rows written under an older charset need a definition from
	// the binlog (two per table); the others match the current one, ENUM
	// labels in latin1 included.
	b, _ := os.ReadFile(logPath)
	if n := strings.Count(string(b), "table definition taken from the binlog"); n != 4 {
		t.Errorf("%d definitions taken from the binlog, want 4 (rows 1 and 2 of t and u)", n)
	}
	// The last value, from the server, as the oracle.
	var v string
	if err := admin.QueryRowContext(t.Context(), "SELECT CONVERT(v USING utf8mb4) FROM t WHERE id = 1").Scan(&v); err != nil || v != want[3].v {
		t.Errorf("server has %q (%v), want %q", v, err, want[3].v)
	}
}
