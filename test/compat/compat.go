// Package compat proves capture's events equal the real Debezium MariaDB
// connector's, schema and value, field by field (build tag integration;
// `make compat`).
package compat
