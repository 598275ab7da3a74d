// Package smoke holds one integration test per component of the local stack
// (build tag integration). Each proves that the component does the one thing
// binlake relies on it for, against the real server: Kafka transactions, the
// registry's Confluent API, the Iceberg REST catalog writing to MinIO, and
// MariaDB's binlog read with go-mysql.
package smoke
