// Command stackcheck reports whether each component of the local stack is
// healthy, speaking each component's own protocol rather than only probing a
// port. deploy/local/stack.sh runs it for `status` and to wait for Kafka.
//
// Usage: stackcheck [all|mariadb|minio|kafka|registry|iceberg]...
//
// It prints one line per component, "<name> healthy|UNHEALTHY <endpoint> <detail>",
// and exits 1 if any checked component is unhealthy. Endpoints come from the
// variables printed by `stack.sh env`.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type check struct {
	name     string
	endpoint func() string
	run      func(ctx context.Context) (string, error)
}

func main() {
	checks := []check{
		{"mariadb", func() string { return os.Getenv("BINLAKE_MARIADB_ADDR") }, checkMariaDB},
		{"minio", func() string { return os.Getenv("BINLAKE_S3_ENDPOINT") }, checkMinIO},
		{"kafka", func() string { return os.Getenv("BINLAKE_KAFKA_BROKERS") }, checkKafka},
		{"registry", func() string { return os.Getenv("BINLAKE_SCHEMA_REGISTRY_URL") }, checkRegistry},
		{"iceberg", func() string { return os.Getenv("BINLAKE_ICEBERG_URI") }, checkIceberg},
	}
	want := map[string]bool{}
	for _, a := range os.Args[1:] {
		want[a] = true
	}
	all := len(want) == 0 || want["all"]
	failed := false
	for _, c := range checks {
		if !all && !want[c.name] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		detail, err := c.run(ctx)
		cancel()
		state := "healthy"
		if err != nil {
			state, detail, failed = "UNHEALTHY", err.Error(), true
		}
		fmt.Printf("%-9s %-9s %-45s %s\n", c.name, state, c.endpoint(), detail)
	}
	if failed {
		os.Exit(1)
	}
}

func env(key string) (string, error) {
	v := os.Getenv(key)
	if v == "" {
		return "", fmt.Errorf("%s is not set (eval \"$(deploy/local/stack.sh env)\")", key)
	}
	return v, nil
}

func checkMariaDB(ctx context.Context) (string, error) {
	addr, err := env("BINLAKE_MARIADB_ADDR")
	if err != nil {
		return "", err
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr = "tcp", addr
	cfg.User, cfg.Passwd = os.Getenv("BINLAKE_MARIADB_CAPTURE_USER"), os.Getenv("BINLAKE_MARIADB_CAPTURE_PASSWORD")
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return "", err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	var version, logBin, format, image, meta, strict, gtid string
	err = db.QueryRowContext(ctx, `SELECT @@version, @@log_bin, @@binlog_format, @@binlog_row_image,
		@@binlog_row_metadata, @@gtid_strict_mode, @@gtid_binlog_pos`).Scan(&version, &logBin, &format, &image, &meta, &strict, &gtid)
	if err != nil {
		return "", fmt.Errorf("querying server settings: %w", err)
	}
	if logBin != "1" || format != "ROW" || image != "FULL" || meta != "FULL" || strict != "1" {
		return "", fmt.Errorf("binlog not CDC-ready: log_bin=%s format=%s row_image=%s row_metadata=%s gtid_strict=%s",
			logBin, format, image, meta, strict)
	}
	return fmt.Sprintf("version=%s gtid_binlog_pos=%q", version, gtid), nil
}

func checkMinIO(ctx context.Context) (string, error) {
	endpoint, err := env("BINLAKE_S3_ENDPOINT")
	if err != nil {
		return "", err
	}
	bucket, err := env("BINLAKE_S3_BUCKET")
	if err != nil {
		return "", err
	}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), ""),
	})
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return "", fmt.Errorf("bucket %s: %w", bucket, err)
	}
	return "bucket=" + bucket, nil
}

func checkKafka(ctx context.Context) (string, error) {
	brokers, err := env("BINLAKE_KAFKA_BROKERS")
	if err != nil {
		return "", err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return "", fmt.Errorf("fetching metadata: %w", err)
	}
	if len(meta.Brokers) == 0 {
		return "", fmt.Errorf("no brokers registered")
	}
	return fmt.Sprintf("cluster=%s brokers=%d controller=%d", meta.Cluster, len(meta.Brokers), meta.Controller), nil
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return string(body), nil
}

func checkRegistry(ctx context.Context) (string, error) {
	url, err := env("BINLAKE_SCHEMA_REGISTRY_URL")
	if err != nil {
		return "", err
	}
	if _, err := httpGet(ctx, url+"/subjects"); err != nil {
		return "", err
	}
	return "confluent api ok", nil
}

func checkIceberg(ctx context.Context) (string, error) {
	uri, err := env("BINLAKE_ICEBERG_URI")
	if err != nil {
		return "", err
	}
	body, err := httpGet(ctx, uri+"/v1/config")
	if err != nil {
		return "", err
	}
	if !strings.Contains(body, "defaults") {
		return "", fmt.Errorf("unexpected /v1/config answer: %.200s", body)
	}
	return "rest catalog ok", nil
}
