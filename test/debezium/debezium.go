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
// TopicNameStrategy subjects <topic>-key and <topic>-value. With Converter
// "glue" it writes through AWS's AWSKafkaAvroConverter instead, registering
// in the Glue Schema Registry API at the endpoint given (GlueConverter).
package debezium

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Config selects what one connector captures.
type Config struct {
	Database     string // the one database captured (database.include.list)
	TopicPrefix  string // topic.prefix; topics are <prefix>.<db>.<table>
	ServerID     uint32 // database.server.id: unique among the server's replicas
	SnapshotMode string // snapshot.mode; "" means no_data (stream only)
	// Converter is "avro" (the default: Apicurio AvroConverter), "json"
	// (Kafka's JsonConverter with schemas.enable=true) or "glue" (AWS's
	// AWSKafkaAvroConverter with the settings of Glue, see
	// GlueConverterProperties).
	Converter string
	Glue      GlueConverter // with Converter "glue"
	// Env is added to the Kafka Connect worker's environment (NAME=value):
	// credentials for a converter's default chain, as AWS_ACCESS_KEY_ID.
	Env []string
	// Extra connector properties, applied last (they override the defaults).
	Extra map[string]string
}

// Connector is a running Debezium connector.
type Connector struct {
	Name  string            // the worker name given to debezium.sh
	Dir   string            // its directory: logs, offsets, schema history
	Props map[string]string // the connector properties it was started with
	stack string
	port  string // BINLAKE_CONNECT_PORT of its worker; "" for the default
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

// GlueConverterClass is AWS's Avro converter for Glue Schema Registry, in
// Maven Central's software.amazon.glue:schema-registry-kafkaconnect-converter
// (deploy/local/debezium.sh installs it).
const GlueConverterClass = "com.amazonaws.services.schemaregistry.kafkaconnect.AWSKafkaAvroConverter"

// GlueConverter holds the Glue settings of AWS's converter.
type GlueConverter struct {
	Region   string // region: the signing region
	Endpoint string // endpoint: the Glue API's URL, in place of AWS's for the region
	Registry string // registry.name
	// Compatibility of the schemas it creates (compatibility); "" is AWS's
	// default, BACKWARD.
	Compatibility string
	Compression   string // compression: NONE (the default) or ZLIB
}

// GlueConverterProperties are the key and value converter settings that
// make Debezium write Glue-framed Avro (header byte 3, compression byte,
// schema version UUID) through AWS's AWSKafkaAvroConverter, registering
// schemas as its serde does: with the default naming strategy, key and
// value schemas are both named after the topic (two versions of one
// schema), auto-registration on, GENERIC_RECORD. Credentials come from the
// worker's environment (Config.Env), AWS's default chain.
func GlueConverterProperties(g GlueConverter) map[string]string {
	p := map[string]string{}
	for _, side := range []string{"key", "value"} {
		c := side + ".converter"
		p[c] = GlueConverterClass
		p[c+".region"] = g.Region
		p[c+".endpoint"] = g.Endpoint
		p[c+".registry.name"] = g.Registry
		p[c+".schemaAutoRegistrationEnabled"] = "true"
		p[c+".dataFormat"] = "AVRO"
		p[c+".avroRecordType"] = "GENERIC_RECORD"
		p[c+".compression"] = cmp.Or(g.Compression, "NONE")
		if g.Compatibility != "" {
			p[c+".compatibility"] = g.Compatibility
		}
	}
	return p
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
		// Debezium parses every DDL statement in the binlog before it filters
		// by database, and its task dies on one it cannot parse: in make
		// test's lanes, test/e2e's `CREATE TABLE … CHAR VARYING(10) …` in a
		// database of its own killed compat's connector (Debezium 3.5.0).
		// Skipped, such a statement in the captured database itself still
		// fails the comparison: its rows then have no known schema.
		"schema.history.internal.skip.unparseable.ddl": "true",
		// The broker does not auto-create topics: Connect creates them.
		"topic.creation.default.replication.factor": "1",
		"topic.creation.default.partitions":         "1",
	}
	switch cfg.Converter {
	case "json":
		maps.Copy(p, JSONConverterProperties())
	case "glue":
		maps.Copy(p, GlueConverterProperties(cfg.Glue))
	default:
		maps.Copy(p, AvroConverterProperties(NativeRegistryURL(registryURL)))
	}
	maps.Copy(p, cfg.Extra)
	return p
}

// FormatProperties renders properties as a sorted .properties file.
func FormatProperties(p map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(p)) {
		// A backslash in a .properties value escapes the next character:
		// a regular expression's \. must be written \\. to stay one.
		fmt.Fprintf(&b, "%s=%s\n", k, strings.ReplaceAll(p[k], `\`, `\\`))
	}
	return b.String()
}

var nonWorker = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Run starts Debezium for cfg with deploy/local/debezium.sh, waits until it
// streams from the binlog, and stops it (deleting its offsets and history)
// when the test ends. Its worker listens on a free REST port of its own, so
// that tests running side by side (test/integration.sh's lanes) can each
// run one.
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
	c := &Connector{Name: name, Dir: filepath.Join(stack, "connect", name), Props: props, stack: stack, port: FreePort(t)}
	// A worker of the same name left over by a killed test would still run.
	_ = c.script(t, "reset", name)
	t.Cleanup(func() {
		if err := c.script(t, "reset", name); err != nil {
			t.Errorf("stopping debezium worker %s: %v", name, err)
		}
	})
	if err := c.script(t, append(slices.Clip(cfg.Env), "run", name, file)...); err != nil {
		t.Fatalf("starting debezium: %v\n%s", err, c.logTail())
	}
	if err := c.script(t, "wait", name, "180"); err != nil {
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

// FreePort is a loopback TCP port no one listens on now, for a worker's
// REST API.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func (c *Connector) script(t testing.TB, args ...string) error {
	t.Helper()
	var env []string
	if c.port != "" {
		env = []string{"BINLAKE_CONNECT_PORT=" + c.port}
	}
	return script(t, c.stack, append(env, args...)...)
}

// script runs debezium.sh with args; leading NAME=value arguments are
// added to its environment.
func script(t testing.TB, stack string, args ...string) error {
	t.Helper()
	env := append(os.Environ(), "BINLAKE_STACK_DIR="+stack)
	for len(args) > 0 && strings.Contains(args[0], "=") {
		env = append(env, args[0])
		args = args[1:]
	}
	cmd := exec.Command("bash", append([]string{Script()}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Logf("debezium.sh %s:\n%s", strings.Join(args, " "), strings.TrimRight(string(out), "\n"))
	}
	if err != nil {
		return fmt.Errorf("debezium.sh %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// InstallGlueConverter installs AWS's Glue converter with debezium.sh
// install-glue (nothing when it is there), returning the script's error
// and output when Maven could not fetch it.
func InstallGlueConverter(t testing.TB) error {
	t.Helper()
	stack := env(t, "BINLAKE_STACK_DIR")
	cmd := exec.Command("bash", Script(), "install-glue")
	cmd.Env = append(os.Environ(), "BINLAKE_STACK_DIR="+stack)
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(stack, "connect", "maven.log"))
		return fmt.Errorf("debezium.sh install-glue: %w\n%s\nMaven log:\n%s", err, out, log)
	}
	return nil
}

// JDBCSinkConfig selects what one Debezium JDBC sink connector
// (io.debezium.connector.jdbc.JdbcSinkConnector) consumes and where it writes.
type JDBCSinkConfig struct {
	TopicsRegex string // topics.regex: the topics consumed
	Database    string // the MariaDB database written into (it must exist)
	// Port is the REST port of its own Kafka Connect worker; "" is a free
	// one.
	Port  string
	Extra map[string]string // applied last
}

// JDBCSinkProperties are the connector properties of a JDBC sink consuming
// capture's (or Debezium's) Confluent-framed Avro topics through the
// registry (registryURL: its Confluent-compatible URL) and writing each
// source table into a table of the same name in database (on the MariaDB at
// mariadbAddr): upserts by the record key, deletes (and tombstones) as
// deletes, tables created and widened as the records' schemas say
// (schema.evolution=basic). The topic <prefix>.<db>.<table> is routed to
// the table <table> with Kafka's RegexRouter. The consumer reads only
// committed records (read_committed): capture writes in Kafka transactions
// and the records of an aborted one (a killed capture's) must not be applied.
func JDBCSinkProperties(name string, cfg JDBCSinkConfig, mariadbAddr, user, password, registryURL string) map[string]string {
	p := map[string]string{
		"name":            name,
		"connector.class": "io.debezium.connector.jdbc.JdbcSinkConnector",
		"tasks.max":       "1",
		"topics.regex":    cfg.TopicsRegex,
		// nullDatabaseMeansCurrent: the sink asks the driver whether a table
		// exists without naming a database, and the MariaDB driver then
		// searches every database, finding the source's table of the same
		// name: the sink would not create its own, and fail writing to it.
		"connection.url":                      "jdbc:mariadb://" + mariadbAddr + "/" + cfg.Database + "?nullDatabaseMeansCurrent=true",
		"connection.username":                 user,
		"connection.password":                 password,
		"insert.mode":                         "upsert",
		"primary.key.mode":                    "record_key",
		"delete.enabled":                      "true",
		"schema.evolution":                    "basic",
		"database.time_zone":                  "UTC",
		"transforms":                          "table",
		"transforms.table.type":               "org.apache.kafka.connect.transforms.RegexRouter",
		"transforms.table.regex":              `.*\.([^.]+)`,
		"transforms.table.replacement":        "$1",
		"consumer.override.isolation.level":   "read_committed",
		"consumer.override.auto.offset.reset": "earliest",
		// New topics matching topics.regex are found within a second, not
		// the consumer's default five minutes.
		"consumer.override.metadata.max.age.ms": "1000",
	}
	maps.Copy(p, AvroConverterProperties(NativeRegistryURL(registryURL)))
	maps.Copy(p, cfg.Extra)
	return p
}

// StartJDBCSink starts a JDBC sink connector (JDBCSinkProperties) on a
// Kafka Connect worker of its own, with the MariaDB admin user of the
// stack, and stops it (deleting its worker directory) when the test ends.
// The worker comes up in the background (a JVM: tens of seconds); wait,
// called from the test's goroutine, waits until the connector and its task
// are RUNNING. The sink's consumer group is connect-<Name>: its offsets
// live there, in Kafka, not in the worker directory.
func StartJDBCSink(t testing.TB, cfg JDBCSinkConfig) (c *Connector, wait func()) {
	t.Helper()
	stack := env(t, "BINLAKE_STACK_DIR")
	addr := env(t, "BINLAKE_MARIADB_ADDR")
	user := env(t, "BINLAKE_MARIADB_ADMIN_USER")
	password := env(t, "BINLAKE_MARIADB_ADMIN_PASSWORD")
	registry := env(t, "BINLAKE_SCHEMA_REGISTRY_URL")
	if cfg.TopicsRegex == "" || cfg.Database == "" {
		t.Fatalf("debezium.StartJDBCSink: TopicsRegex and Database are required (got %+v)", cfg)
	}
	name := nonWorker.ReplaceAllString("jdbc-"+cfg.Database, "_")
	props := JDBCSinkProperties(name, cfg, addr, user, password, registry)
	file := filepath.Join(t.TempDir(), "connector.properties")
	if err := os.WriteFile(file, []byte(FormatProperties(props)), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg.Port == "" {
		cfg.Port = FreePort(t)
	}
	c = &Connector{Name: name, Dir: filepath.Join(stack, "connect", name), Props: props, stack: stack, port: cfg.Port}
	_ = c.script(t, "reset", name)
	done := make(chan error, 1)
	// Only ServiceLoader manifests, no reflective scan of the plugin
	// jars: the worker starts in seconds instead of about a minute.
	go func() { done <- c.script(t, "BINLAKE_CONNECT_PLUGIN_DISCOVERY=service_load", "run", name, file) }()
	t.Cleanup(func() {
		<-done // the script has started the worker, or given up
		if err := c.script(t, "reset", name); err != nil {
			t.Errorf("stopping the JDBC sink worker %s: %v", name, err)
		}
	})
	var once sync.Once
	var err error
	return c, func() {
		t.Helper()
		once.Do(func() { err = <-done; done <- err })
		if err != nil {
			t.Fatalf("starting the JDBC sink: %v\n%s", err, c.logTail())
		}
	}
}

// Failed returns the connector's or its task's failure trace when the
// worker's REST API reports one FAILED, "" otherwise.
func (c *Connector) Failed() string {
	port := c.port
	if port == "" {
		port = os.Getenv("BINLAKE_CONNECT_PORT") // a shifted stack's (stack.sh, BINLAKE_PORT_OFFSET)
	}
	if port == "" {
		port = "18083"
	}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://127.0.0.1:" + port + "/connectors/" + c.Name + "/status")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var st struct {
		Connector struct{ State, Trace string }
		Tasks     []struct{ State, Trace string }
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil {
		return ""
	}
	if st.Connector.State == "FAILED" {
		return "connector FAILED: " + st.Connector.Trace
	}
	for _, tk := range st.Tasks {
		if tk.State == "FAILED" {
			return "task FAILED: " + tk.Trace
		}
	}
	return ""
}
