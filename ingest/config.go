package main

import (
	"errors"
	"strings"
)

// Config is ingest's whole configuration.
type Config struct {
	KafkaBrokers string // comma-separated seed brokers
	RegistryURL  string // Confluent-compatible schema registry API
	CatalogURI   string // Iceberg REST catalog
}

func (c *Config) bind(f *envFlags) {
	f.String(&c.KafkaBrokers, "kafka-brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	f.String(&c.RegistryURL, "schema-registry-url", "http://127.0.0.1:8081", "Confluent-compatible schema registry URL")
	f.String(&c.CatalogURI, "catalog-uri", "", "Iceberg REST catalog URI (required)")
}

// Validate checks the settings against each other.
func (c *Config) Validate() error {
	var errs []error
	if c.CatalogURI == "" {
		errs = append(errs, errors.New("catalog-uri is required (INGEST_CATALOG_URI)"))
	}
	if strings.TrimSpace(c.KafkaBrokers) == "" {
		errs = append(errs, errors.New("kafka-brokers is empty"))
	}
	return errors.Join(errs...)
}
