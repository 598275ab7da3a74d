// Package debezium runs the real Debezium MariaDB connector (Kafka Connect
// standalone, started by deploy/local/debezium.sh) against the local stack, so
// that integration tests can compare capture's events with Debezium's, field by
// field.
//
// Run starts a connector for one database and stops it when the test ends;
// ReadTopic reads what it wrote; Decode turns a Confluent-framed Avro payload
// back into its registered schema and a JSON-able value.
//
// The connector writes Avro through Apicurio's AvroConverter
// (io.apicurio.registry.utils.converter.AvroConverter) registering in the local
// Apicurio Registry with the settings of AvroConverterProperties: the payload
// is the Confluent wire format (magic byte 0, 4-byte big-endian contentId,
// Avro binary) and the schemas are registered, self-contained, under the
// TopicNameStrategy subjects <topic>-key and <topic>-value.
package debezium

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// Config selects what one connector captures.
type Config struct {
	Database     string // the one database captured (database.include.list)
	TopicPrefix  string // topic.prefix; topics are <prefix>.<db>.<table>
	ServerID     uint32 // database.server.id: unique among the server's replicas
	SnapshotMode string // snapshot.mode; "" means no_data (stream only)
	// Converter is "avro" (the default: Apicurio AvroConverter) or "json"
	// (Kafka's JsonConverter with schemas.enable=true).
	Converter string
	// Extra connector properties, applied last (they override the defaults).
	Extra map[string]string
}

// Connector is a running Debezium connector.
type Connector struct {
	Name  string            // the worker name given to debezium.sh
	Dir   string            // its directory: logs, offsets, schema history
	Props map[string]string // the connector properties it was started with
	stack string
}

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Script returns the path of deploy/local/debezium.sh.
func Script() string { return filepath.Join(RepoRoot(), "deploy", "local", "debezium.sh") }

func env(t testing.TB, key string) string {
	t.Helper()
	v := os.Getenv(key)
	if v == "" {
		if os.Getenv("BINLAKE_REQUIRE_STACK") == "1" {
			t.Fatalf("%s is not set; run: eval \"$(deploy/local/stack.sh env)\"", key)
		}
		t.Skipf("%s is not set; start the local stack and eval \"$(deploy/local/stack.sh env)\"", key)
	}
	return v
}

// NativeRegistryURL turns the Confluent-compatible URL of the local Apicurio
// Registry (.../apis/ccompat/v7) into its native v3 API URL, which the
// Apicurio converter talks to.
func NativeRegistryURL(ccompatURL string) string {
	if i := strings.Index(ccompatURL, "/apis/"); i >= 0 {
		return ccompatURL[:i] + "/apis/registry/v3"
	}
	return strings.TrimRight(ccompatURL, "/") + "/apis/registry/v3"
}

// AvroConverterProperties are the key and value converter settings that make
// Debezium write Confluent-framed Avro through the Apicurio Registry at
// nativeURL (.../apis/registry/v3):
//   - auto-register: register the schema on first use, like Confluent's converter;
//   - find-latest: reuse the latest registered version when content is unchanged;
//   - dereference-schema=true: register each schema whole; without it the Apicurio
//     serde registers every nested named record (the row Value, the Source block,
//     event.block) as a subject of its own and the value schema only as references;
//   - headers.enabled=false, use-id=contentId, Default4ByteIdHandler: the id goes
//     into the payload as magic 0 + 4-byte contentId, which is what
//     GET /apis/ccompat/v7/schemas/ids/<id> resolves (these are the defaults,
//     set explicitly so a change of default cannot silently change the format).
//
// The artifact strategy is left at its default, TopicIdStrategy: subjects
// <topic>-key and <topic>-value.
func AvroConverterProperties(nativeURL string) map[string]string {
	p := map[string]string{}
	for _, side := range []string{"key", "value"} {
		c := side + ".converter"
		p[c] = "io.apicurio.registry.utils.converter.AvroConverter"
		p[c+".apicurio.registry.url"] = nativeURL
		p[c+".apicurio.registry.auto-register"] = "true"
		p[c+".apicurio.registry.find-latest"] = "true"
		p[c+".apicurio.registry.dereference-schema"] = "true"
		p[c+".apicurio.registry.headers.enabled"] = "false"
		p[c+".apicurio.registry.use-id"] = "contentId"
		p[c+".apicurio.registry.id-handler"] = "io.apicurio.registry.serde.Default4ByteIdHandler"
	}
	return p
}

// JSONConverterProperties are the settings for Kafka's JsonConverter with the
// Connect schema embedded in every message.
func JSONConverterProperties() map[string]string {
	return map[string]string{
		"key.converter":                  "org.apache.kafka.connect.json.JsonConverter",
		"key.converter.schemas.enable":   "true",
		"value.converter":                "org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable": "true",
	}
}

// Properties returns the connector properties for cfg. mariadbAddr is
// host:port; registryURL is the Confluent-compatible URL of the registry (only
// used by the Avro converter). The text @DIR@ stands for the worker directory
// (debezium.sh replaces it).
func Properties(name string, cfg Config, mariadbAddr, user, password, registryURL string) map[string]string {
	host, port, ok := strings.Cut(mariadbAddr, ":")
	if !ok {
		port = "3306"
	}
	mode := cfg.SnapshotMode
	if mode == "" {
		mode = "no_data"
	}
	p := map[string]string{
		"name":                  name,
		"connector.class":       "io.debezium.connector.mariadb.MariaDbConnector",
		"tasks.max":             "1",
		"database.hostname":     host,
		"database.port":         port,
		"database.user":         user,
		"database.password":     password,
		"database.server.id":    fmt.Sprint(cfg.ServerID),
		"topic.prefix":          cfg.TopicPrefix,
		"database.include.list": cfg.Database,
		"snapshot.mode":         mode,
		// Schema-change events go to the topic <prefix>; the comparison is about
		// data topics, so leave them out.
		"include.schema.changes": "false",
		// The schema history is a file next to the offsets: no extra topic, and
		// removed with the worker directory.
		"schema.history.internal":               "io.debezium.storage.file.history.FileSchemaHistory",
		"schema.history.internal.file.filename": "@DIR@/schema-history.dat",
		// Read and keep the schemas of the captured database only, as capture
		// does. By default Debezium's snapshot reads every database on the
		// server, and dies when another test drops a table meanwhile.
		"schema.history.internal.store.only.captured.tables.ddl":    "true",
		"schema.history.internal.store.only.captured.databases.ddl": "true",
		// The broker does not auto-create topics: Connect creates them.
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.partitions":         "1",
	}
	if cfg.Converter == "json" {
		maps.Copy(p, JSONConverterProperties())
	} else {
		maps.Copy(p, AvroConverterProperties(NativeRegistryURL(registryURL)))
	}
	maps.Copy(p, cfg.Extra)
	return p
}

// FormatProperties renders properties as a sorted .properties file.
func FormatProperties(p map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

var nonWorker = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Run starts Debezium for cfg with deploy/local/debezium.sh, waits until it
// streams from the binlog, and stops it (deleting its offsets and history)
// when the test ends. Only one connector can run at a time (one REST port).
func Run(t testing.TB, cfg Config) *Connector {
	t.Helper()
	stack := env(t, "BINLAKE_STACK_DIR")
	addr := env(t, "BINLAKE_MARIADB_ADDR")
	user := env(t, "BINLAKE_MARIADB_DEBEZIUM_USER")
	password := env(t, "BINLAKE_MARIADB_DEBEZIUM_PASSWORD")
	registry := env(t, "BINLAKE_SCHEMA_REGISTRY_URL")
	if cfg.Database == "" || cfg.TopicPrefix == "" || cfg.ServerID == 0 {
		t.Fatalf("debezium.Run: Database, TopicPrefix and ServerID are required (got %+v)", cfg)
	}
	name := nonWorker.ReplaceAllString("dbz-"+cfg.TopicPrefix, "_")
	props := Properties(name, cfg, addr, user, password, registry)

	file := filepath.Join(t.TempDir(), "connector.properties")
	if err := os.WriteFile(file, []byte(FormatProperties(props)), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Connector{Name: name, Dir: filepath.Join(stack, "connect", name), Props: props, stack: stack}
	// A worker of the same name left over by a killed test would hold the port.
	_ = script(t, stack, "reset", name)
	t.Cleanup(func() {
		if err := script(t, stack, "reset", name); err != nil {
			t.Errorf("stopping debezium worker %s: %v", name, err)
		}
	})
	if err := script(t, stack, "run", name, file); err != nil {
		t.Fatalf("starting debezium: %v\n%s", err, c.logTail())
	}
	if err := script(t, stack, "wait", name, "180"); err != nil {
		t.Fatalf("debezium is not streaming: %v\n%s", err, c.logTail())
	}
	return c
}

// Stop stops the connector now and deletes its offsets and schema history
// (Run's cleanup then has nothing left to do). Only one connector runs at a
// time, so a test that runs a second one stops the first.
func (c *Connector) Stop(t testing.TB) {
	t.Helper()
	if err := script(t, c.stack, "reset", c.Name); err != nil {
		t.Fatalf("stopping debezium worker %s: %v", c.Name, err)
	}
}

// Log returns the worker log so far.
func (c *Connector) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "connect.log"))
	return string(b)
}

func (c *Connector) logTail() string {
	l := c.Log()
	if len(l) > 8000 {
		l = "...\n" + l[len(l)-8000:]
	}
	return l
}

func script(t testing.TB, stack string, args ...string) error {
	t.Helper()
	cmd := exec.Command("bash", append([]string{Script()}, args...)...)
	cmd.Env = append(os.Environ(), "BINLAKE_STACK_DIR="+stack)
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Logf("debezium.sh %s:\n%s", strings.Join(args, " "), strings.TrimRight(string(out), "\n"))
	}
	if err != nil {
		return fmt.Errorf("debezium.sh %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
