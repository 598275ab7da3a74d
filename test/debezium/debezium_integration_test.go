//go:build integration

package debezium_test

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/binlake/binlake/test/debezium"
	"github.com/binlake/binlake/test/testenv"
)

// randomServerID picks a replication server id that no other test uses at
// the same time (MariaDB itself is server 1).
func randomServerID() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return 100000 + binary.BigEndian.Uint32(b[:])%4000000000
}

func uniquePrefix(p string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return p + hex.EncodeToString(b[:])
}

// TestDebeziumStreamsChanges runs the real Debezium MariaDB connector with the
// Apicurio Avro converter, makes an insert, an update and a delete, and checks
// the events: topic, op c/u/d, the tombstone after the delete, the Confluent
// framing, the registered subjects and the envelope and source schema names.
func TestDebeziumStreamsChanges(t *testing.T) {
	m := testenv.MariaDBEnv(t)
	brokers := testenv.KafkaBrokers(t)
	reg := debezium.NewRegistry(testenv.RegistryURL(t))
	ctx := t.Context()

	db := m.CreateDatabase(t, "dbz")
	admin := m.AdminDB(t, db)
	if _, err := admin.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2))"); err != nil {
		t.Fatal(err)
	}
	prefix := uniquePrefix("dbzt")
	debezium.Run(t, debezium.Config{Database: db, TopicPrefix: prefix, ServerID: randomServerID()})

	for _, q := range []string{
		"INSERT INTO t VALUES (1, 'one', 1.50)",
		"UPDATE t SET name = 'uno' WHERE id = 1",
		"DELETE FROM t WHERE id = 1",
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	topic := prefix + "." + db + ".t"
	recs := debezium.ReadTopic(t, brokers, topic, 4, 90*time.Second)

	wantOps := []string{"c", "u", "d"}
	var valueID uint32
	for i, r := range recs[:3] {
		if r.Topic != topic {
			t.Errorf("record %d: topic %q, want %q", i, r.Topic, topic)
		}
		key, err := reg.Decode(ctx, r.Key)
		if err != nil {
			t.Fatalf("record %d key: %v", i, err)
		}
		if got := key.Native.(map[string]any)["id"]; got != int32(1) {
			t.Errorf("record %d: key id %v (%T), want 1", i, got, got)
		}
		val, err := reg.Decode(ctx, r.Value)
		if err != nil {
			t.Fatalf("record %d value: %v", i, err)
		}
		v := val.Native.(map[string]any)
		if v["op"] != wantOps[i] {
			t.Errorf("record %d: op %v, want %s", i, v["op"], wantOps[i])
		}
		src := v["source"].(map[string]any)
		table, _ := src["table"].(map[string]any)
		if src["connector"] != "mariadb" || src["db"] != db || table["string"] != "t" {
			t.Errorf("record %d: source %v", i, src)
		}
		valueID = val.SchemaID
	}

	// The tombstone: same key bytes as the delete, null value.
	tomb := recs[3]
	if tomb.Value != nil {
		t.Errorf("record 3: value %x, want a tombstone (null)", tomb.Value)
	}
	if !bytes.Equal(tomb.Key, recs[2].Key) {
		t.Errorf("tombstone key %x differs from the delete's key %x", tomb.Key, recs[2].Key)
	}

	// The id in the frame is the latest version of the TopicNameStrategy subject.
	sub, err := reg.LatestVersion(ctx, topic+"-value")
	if err != nil {
		t.Fatalf("subject %s-value: %v", topic, err)
	}
	if sub.ID != valueID {
		t.Errorf("subject %s-value has id %d, the records carry %d", topic, sub.ID, valueID)
	}
	if _, err := reg.LatestVersion(ctx, topic+"-key"); err != nil {
		t.Errorf("subject %s-key: %v", topic, err)
	}

	// The registered value schema, fetched by the id in the frame.
	schema, err := reg.SchemaByID(ctx, valueID)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Type        string `json:"type"`
		Name        string `json:"name"`
		Namespace   string `json:"namespace"`
		ConnectName string `json:"connect.name"`
		ConnectVer  int    `json:"connect.version"`
		Fields      []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schema), &env); err != nil {
		t.Fatalf("value schema %d: %v\n%s", valueID, err, schema)
	}
	wantEnv := prefix + "." + db + ".t"
	if env.Type != "record" || env.Name != "Envelope" || env.Namespace != wantEnv || env.ConnectName != wantEnv+".Envelope" {
		t.Errorf("envelope: type %q name %q namespace %q connect.name %q, want record %q in %q",
			env.Type, env.Name, env.Namespace, env.ConnectName, "Envelope", wantEnv)
	}
	if env.ConnectVer != 2 {
		t.Errorf("envelope connect.version %d, want 2", env.ConnectVer)
	}
	var names []string
	for _, f := range env.Fields {
		names = append(names, f.Name)
		if f.Name != "source" {
			continue
		}
		var src struct {
			Type        string `json:"type"`
			Name        string `json:"name"`
			Namespace   string `json:"namespace"`
			ConnectName string `json:"connect.name"`
			ConnectVer  int    `json:"connect.version"`
		}
		if err := json.Unmarshal(f.Type, &src); err != nil {
			t.Fatalf("source field type: %v\n%s", err, f.Type)
		}
		if src.Type != "record" || src.Namespace+"."+src.Name != "io.debezium.connector.mariadb.Source" ||
			src.ConnectName != "io.debezium.connector.mariadb.Source" || src.ConnectVer != 1 {
			t.Errorf("source block schema %s, want record io.debezium.connector.mariadb.Source with connect.version 1", f.Type)
		}
	}
	if got, want := names, []string{"before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"}; !equal(got, want) {
		t.Errorf("envelope fields %v, want %v", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
