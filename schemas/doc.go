// Package schemas holds what both binaries share about the change-event
// format: the Avro schemas of the Debezium envelope and the Go code that
// builds, frames and decodes them (in sub-packages).
package schemas
