package publish

import (
	"bytes"
	"compress/zlib"
	"fmt"
)

// Glue's record header, as AWS's Glue Schema Registry serde writes it: a
// header version byte, a compression byte, then the schema version id.
const (
	glueHeaderVersion = 3
	glueNoCompression = 0
	glueZlib          = 5
)

// Frame is how the records of one registered schema are framed on the
// wire: the header before the Avro body, and whether the body is
// compressed. The zero Frame is the Confluent header of schema id 0.
type Frame struct {
	header [18]byte
	n      uint8 // header length: 5 (Confluent) or 18 (Glue)
	zlib   bool
}

// ConfluentFrame is the Confluent wire framing of schema id: magic byte
// 0x00 and the id as 4 big-endian bytes.
func ConfluentFrame(id int) Frame {
	f := Frame{n: 5}
	f.header[1], f.header[2], f.header[3], f.header[4] = byte(id>>24), byte(id>>16), byte(id>>8), byte(id)
	return f
}

// GlueFrame is the Glue Schema Registry framing of schema version id:
// header version 3, compression byte (0, or 5 with compress for a zlib
// body), the 16 bytes of the version UUID.
func GlueFrame(id [16]byte, compress bool) Frame {
	f := Frame{n: 18, zlib: compress}
	f.header[0], f.header[1] = glueHeaderVersion, glueNoCompression
	if compress {
		f.header[1] = glueZlib
	}
	copy(f.header[2:], id[:])
	return f
}

// Header is the bytes that precede the body.
func (f Frame) Header() []byte { return f.header[:max(f.n, 5)] }

// AppendHeader appends the header to dst; append the Avro body after it
// and pass the whole to Seal.
func (f *Frame) AppendHeader(dst []byte) []byte {
	if f.n == 18 {
		return append(dst, f.header[:18]...)
	}
	return append(dst, f.header[0], f.header[1], f.header[2], f.header[3], f.header[4])
}

// Compressed reports whether Seal rewrites the body.
func (f Frame) Compressed() bool { return f.zlib }

// Seal finishes a record that starts with the header and goes on with the
// Avro body: as it is, or with the body zlib-compressed into a new slice.
func (f Frame) Seal(rec []byte) ([]byte, error) {
	if !f.zlib {
		return rec, nil
	}
	h := len(f.Header())
	if len(rec) < h {
		return nil, fmt.Errorf("sealing a record of %d bytes, shorter than its %d-byte header", len(rec), h)
	}
	var b bytes.Buffer
	b.Grow(h + len(rec)/2 + 16)
	b.Write(rec[:h])
	zw := zlib.NewWriter(&b)
	if _, err := zw.Write(rec[h:]); err != nil {
		return nil, fmt.Errorf("compressing a record body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing a record body: %w", err)
	}
	return b.Bytes(), nil
}
