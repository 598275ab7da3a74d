package main

import (
	"errors"
	"fmt"
	"strings"
)

// Config is capture's whole configuration.
type Config struct {
	MySQLAddr     string // host:port of the source server
	MySQLUser     string
	MySQLPassword string // secret: CAPTURE_MYSQL_PASSWORD or CAPTURE_MYSQL_PASSWORD_FILE
	KafkaBrokers  string // comma-separated seed brokers
	RegistryURL   string // Confluent-compatible schema registry API
	TopicPrefix   string // Debezium topic.prefix
}

func (c *Config) bind(f *envFlags) {
	f.String(&c.MySQLAddr, "mysql-addr", "127.0.0.1:3306", "source MySQL/MariaDB server, host:port")
	f.String(&c.MySQLUser, "mysql-user", "binlake_capture", "replication user")
	f.Secret(&c.MySQLPassword, "mysql-password")
	f.String(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	f.String(&c.RegistryURL, "schema-registry-url", "http://127.0.0.1:8081", "Confluent-compatible schema registry URL")
	f.String(&c.TopicPrefix, "topic-prefix", "", "Debezium topic.prefix: topics are <prefix>.<db>.<table> (required)")
}

// Validate checks the settings against each other.
func (c *Config) Validate() error {
	var errs []error
	if c.TopicPrefix == "" {
		errs = append(errs, errors.New("topic-prefix is required (CAPTURE_TOPIC_PREFIX)"))
	}
	if strings.TrimSpace(c.KafkaBrokers) == "" {
		errs = append(errs, errors.New("kafka-brokers is empty"))
	}
	if !strings.Contains(c.MySQLAddr, ":") {
		errs = append(errs, fmt.Errorf("mysql-addr %q is not host:port", c.MySQLAddr))
	}
	return errors.Join(errs...)
}
