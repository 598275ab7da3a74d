// Package securekafka starts a throw-away Apache Kafka broker with security
// on, for integration tests of TLS and SASL against a real (Java) broker
// rather than an in-process fake.
//
// The broker is a single KRaft node (broker and controller in one JVM, heap
// 384 MiB by default) run from the Kafka jars the local stack downloaded
// ($BINLAKE_STACK_DIR/kafka/lib, see deploy/local/stack.sh kafka_up), in
// the test's temporary directory, on free loopback ports. It has three
// listeners:
//
//   - SASL_SSL: TLS plus SASL/SCRAM-SHA-512 (the users are written into the
//     metadata log when the storage is formatted, KIP-900's --add-scram, so
//     they exist before the broker serves); also the inter-broker listener,
//     under a user of its own;
//   - SSL: TLS with a required client certificate (mutual TLS);
//   - CONTROLLER: plaintext, loopback only, used by the node itself.
//
// Key material is PEM (ssl.keystore.type=PEM, ssl.truststore.type=PEM) from
// a [tlstest.PKI]. The shared stack's own broker is never touched. Start
// returns once both client listeners answer a metadata request, and the
// broker is killed when the test ends.
package securekafka

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/binlake/binlake/test/tlstest"
)

// Config says what the broker accepts.
type Config struct {
	// PKI supplies the broker's certificate and key (ServerCertFile,
	// ServerKeyFile) and the CA that client certificates must chain to.
	// Required.
	PKI *tlstest.PKI
	// Users are SCRAM-SHA-512 users (name → password) of the SASL_SSL
	// listener. Names and passwords may not contain ',', '[', ']', '=' or
	// '"' (the format tool's syntax).
	Users map[string]string
	// MaxHeap is the JVM's -Xmx (default 384m).
	MaxHeap string
	// StartTimeout bounds formatting and start-up (default 90s).
	StartTimeout time.Duration
}

// Broker is a running secured broker.
type Broker struct {
	// SASLSSL is host:port of the SASL_SSL (SCRAM-SHA-512) listener.
	SASLSSL string
	// MTLS is host:port of the SSL listener that requires a client
	// certificate.
	MTLS string
	// Dir holds the configuration, the data and LogFile.
	Dir string
	// LogFile receives the broker's output.
	LogFile string

	pki  *tlstest.PKI
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Mechanism is the SASL mechanism of the SASL_SSL listener, in Kafka's
// spelling.
const Mechanism = "SCRAM-SHA-512"

// interBrokerUser is the SCRAM user the broker uses to talk to itself.
const interBrokerUser = "binlake-broker"

// LibDir returns the folder of the Kafka jars: $BINLAKE_KAFKA_LIB, or
// $BINLAKE_STACK_DIR/kafka/lib. When neither is set the test is skipped,
// or fails under BINLAKE_REQUIRE_STACK=1 (as test/testenv does).
func LibDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("BINLAKE_KAFKA_LIB")
	if dir == "" {
		if stack := os.Getenv("BINLAKE_STACK_DIR"); stack != "" {
			dir = filepath.Join(stack, "kafka", "lib")
		}
	}
	if dir == "" {
		msg := "BINLAKE_STACK_DIR (or BINLAKE_KAFKA_LIB) is not set; run: eval \"$(deploy/local/stack.sh env)\""
		if os.Getenv("BINLAKE_REQUIRE_STACK") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if jars, _ := filepath.Glob(filepath.Join(dir, "kafka_2.13-*.jar")); len(jars) == 0 {
		t.Fatalf("no kafka_2.13-*.jar in %s: run deploy/local/stack.sh up, which downloads Kafka", dir)
	}
	return dir
}

func javaBinary(t testing.TB) string {
	t.Helper()
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if j := filepath.Join(home, "bin", "java"); fileExists(j) {
			return j
		}
	}
	j, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("the secured Kafka broker needs Java 17+: %v", err)
	}
	return j
}

// Start formats the storage with the SCRAM users and starts the broker. It
// fails the test if the broker does not serve both client listeners within
// cfg.StartTimeout.
func Start(t testing.TB, cfg Config) *Broker {
	t.Helper()
	if cfg.PKI == nil {
		t.Fatal("securekafka: Config.PKI is required")
	}
	for name, pw := range cfg.Users {
		if strings.ContainsAny(name+pw, `,[]="`) || name == "" || pw == "" {
			t.Fatalf("securekafka: SCRAM user %q: empty, or a character the format tool cannot take", name)
		}
	}
	if cfg.MaxHeap == "" {
		cfg.MaxHeap = "384m"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 90 * time.Second
	}
	lib, java := LibDir(t), javaBinary(t)
	dir := t.TempDir()
	ports := freePorts(t, 3)
	b := &Broker{
		SASLSSL: fmt.Sprintf("127.0.0.1:%d", ports[0]),
		MTLS:    fmt.Sprintf("127.0.0.1:%d", ports[1]),
		Dir:     dir,
		LogFile: filepath.Join(dir, "broker.log"),
		pki:     cfg.PKI,
		done:    make(chan struct{}),
	}
	controller := fmt.Sprintf("127.0.0.1:%d", ports[2])

	// A PEM key store is one file holding the PKCS#8 key and the
	// certificate chain (Kafka's ssl.keystore.type=PEM, KIP-651).
	keystore := filepath.Join(dir, "keystore.pem")
	var ks []byte
	for _, f := range []string{cfg.PKI.ServerKeyFile, cfg.PKI.ServerCertFile} {
		ks = append(ks, mustRead(t, f)...)
	}
	writeFile(t, keystore, ks)

	brokerPassword := randomHex(t, 16)
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.voters=1@" + controller,
		"listeners=SASL_SSL://" + b.SASLSSL + ",SSL://" + b.MTLS + ",CONTROLLER://" + controller,
		"advertised.listeners=SASL_SSL://" + b.SASLSSL + ",SSL://" + b.MTLS,
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=SASL_SSL",
		"sasl.enabled.mechanisms=" + Mechanism,
		"sasl.mechanism.inter.broker.protocol=" + Mechanism,
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="` +
			interBrokerUser + `" password="` + brokerPassword + `";`,
		"listener.name.ssl.ssl.client.auth=required",
		"ssl.keystore.type=PEM",
		"ssl.keystore.location=" + keystore,
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + cfg.PKI.CAFile,
		"log.dirs=" + filepath.Join(dir, "data"),
		"num.partitions=1",
		"default.replication.factor=1",
		"auto.create.topics.enable=false",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"transaction.state.log.num.partitions=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"",
	}, "\n")
	propsFile := filepath.Join(dir, "server.properties")
	writeFile(t, propsFile, []byte(props))
	log4j := filepath.Join(dir, "log4j2.properties")
	writeFile(t, log4j, []byte(strings.Join([]string{
		"status = warn",
		"appender.console.type = Console",
		"appender.console.name = STDOUT",
		"appender.console.layout.type = PatternLayout",
		"appender.console.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = WARN",
		"rootLogger.appenderRef.stdout.ref = STDOUT",
		// One INFO line says the server is up; authentication failures
		// are logged by the server at INFO too (SaslServerAuthenticator).
		"logger.started.name = kafka.server.KafkaRaftServer",
		"logger.started.level = INFO",
		"",
	}, "\n")))

	logf, err := os.Create(b.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	jvm := []string{"-Xms64m", "-Xmx" + cfg.MaxHeap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile=file:" + log4j, "-Dkafka.logs.dir=" + dir, "-cp", filepath.Join(lib, "*")}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	format := []string{"kafka.tools.StorageTool", "format", "--cluster-id=" + clusterID(t), "--config", propsFile,
		"--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", Mechanism, interBrokerUser, brokerPassword)}
	for name, pw := range cfg.Users {
		format = append(format, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", Mechanism, name, pw))
	}
	fcmd := exec.CommandContext(ctx, java, append(append([]string{}, jvm...), format...)...)
	fcmd.Stdout, fcmd.Stderr = logf, logf
	if err := fcmd.Run(); err != nil {
		logf.Close()
		t.Fatalf("formatting the secured Kafka broker's storage: %v\n%s", err, tail(b.LogFile))
	}

	b.cmd = exec.Command(java, append(append([]string{}, jvm...), "kafka.Kafka", propsFile)...)
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting the secured Kafka broker: %v", err)
	}
	go func() {
		b.err = b.cmd.Wait()
		logf.Close()
		close(b.done)
	}()
	t.Cleanup(b.Stop)

	scramOpt := kgo.SASL(scram.Auth{User: interBrokerUser, Pass: brokerPassword}.AsSha512Mechanism())
	for _, probe := range []struct {
		addr string
		opts []kgo.Opt
	}{
		{b.SASLSSL, []kgo.Opt{kgo.DialTLSConfig(cfg.PKI.ClientConfig(false)), scramOpt}},
		{b.MTLS, []kgo.Opt{kgo.DialTLSConfig(cfg.PKI.ClientConfig(true))}},
	} {
		if err := b.waitServing(ctx, probe.addr, probe.opts); err != nil {
			t.Fatalf("the secured Kafka broker (%s) does not serve %s: %v\nbroker log:\n%s", dir, probe.addr, err, tail(b.LogFile))
		}
	}
	return b
}

// waitServing polls until a metadata request through addr succeeds.
func (b *Broker) waitServing(ctx context.Context, addr string, opts []kgo.Opt) error {
	var last error
	for {
		select {
		case <-b.done:
			return fmt.Errorf("the broker exited: %v", b.err)
		default:
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
		if err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = cl.Ping(pctx)
		cancel()
		cl.Close()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Stop kills the broker (its data is thrown away with the test's
// directory). It is safe to call more than once.
func (b *Broker) Stop() {
	select {
	case <-b.done:
		return
	default:
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.done
}

// Exited reports whether the broker process has ended.
func (b *Broker) Exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// Log returns the end of the broker's output (for failure messages).
func (b *Broker) Log() string { return tail(b.LogFile) }

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// clusterID is a random base64url UUID as Kafka's format tool takes it;
// one starting with '-' would be read as an option.
func clusterID(t testing.TB) string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		if id := base64.RawURLEncoding.EncodeToString(b[:]); id[0] != '-' {
			return id
		}
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}
