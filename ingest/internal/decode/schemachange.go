package decode

import (
	"encoding/json"
	"strings"

	"github.com/binlake/binlake/schemas/debezium"
)

// SourcePos is a change's binlog position as Debezium's source block
// carries it (source.file, source.pos). Every event of one transaction is
// before a later statement's position and after an earlier one's, so
// positions order row changes against schema changes of the same server.
// The zero value means unknown.
type SourcePos struct {
	File string
	Pos  int64
}

// Known reports whether the position was in the record.
func (p SourcePos) Known() bool { return p.File != "" }

// Compare orders two known positions of one server: binlog files by their
// numeric suffix (a longer name is a later file), then by position.
func (p SourcePos) Compare(q SourcePos) int {
	if p.File != q.File {
		if len(p.File) != len(q.File) {
			if len(p.File) < len(q.File) {
				return -1
			}
			return 1
		}
		return strings.Compare(p.File, q.File)
	}
	switch {
	case p.Pos < q.Pos:
		return -1
	case p.Pos > q.Pos:
		return 1
	}
	return 0
}

// SchemaChange is the content of a schema-change record (topic <prefix>,
// io.debezium.connector.<connector>.SchemaChangeValue) that ingest acts
// on: renames are read from its DDL.
type SchemaChange struct {
	// Source is the statement's binlog position.
	Source SourcePos
	// Database is databaseName: the database of the changed table.
	Database string
	// DDL is the statement as the server logged it.
	DDL string
	// Tables are the tableChanges entries: type (CREATE, ALTER, DROP) and
	// id ("db"."table"; for a rename the new name, or "old,new").
	Tables []TableChange
}

// TableChange is one tableChanges entry.
type TableChange struct {
	Type, ID string
}

// schemaChangeFromAvro reads a SchemaChangeValue decoded generically by
// reader.value against its schema node n.
func schemaChangeFromAvro(n *node, v any) *SchemaChange {
	sc := &SchemaChange{}
	st, ok := v.(debezium.Struct)
	if !ok || n.kind != avroRecord {
		return sc
	}
	for i, f := range n.fields {
		if i >= len(st) {
			break
		}
		switch f.name {
		case "source":
			sc.Source = sourceFromAvro(f.typ, st[i])
		case "databaseName":
			sc.Database, _ = st[i].(string)
		case "ddl":
			sc.DDL, _ = st[i].(string)
		case "tableChanges":
			items, _ := st[i].([]any)
			arr, _, _ := nonNull(f.typ)
			if arr == nil || arr.kind != avroArray {
				break
			}
			rn, _, _ := nonNull(arr.items)
			for _, it := range items {
				s, ok := it.(debezium.Struct)
				if !ok || rn == nil {
					continue
				}
				var tc TableChange
				for j, cf := range rn.fields {
					if j >= len(s) {
						break
					}
					switch cf.name {
					case "type":
						tc.Type, _ = s[j].(string)
					case "id":
						tc.ID, _ = s[j].(string)
					}
				}
				sc.Tables = append(sc.Tables, tc)
			}
		}
	}
	return sc
}

func sourceFromAvro(n *node, v any) SourcePos {
	var p SourcePos
	rn, _, _ := nonNull(n)
	st, ok := v.(debezium.Struct)
	if rn == nil || !ok || rn.kind != avroRecord {
		return p
	}
	for i, f := range rn.fields {
		if i >= len(st) {
			break
		}
		switch f.name {
		case "file":
			p.File, _ = st[i].(string)
		case "pos":
			p.Pos = toInt64(st[i])
		}
	}
	return p
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case json.Number:
		n, _ := x.Int64()
		return n
	}
	return 0
}

// schemaChangeFromJSON reads a SchemaChangeValue payload of the JSON
// converter.
func schemaChangeFromJSON(p map[string]any) *SchemaChange {
	sc := &SchemaChange{}
	if src, ok := p["source"].(map[string]any); ok {
		sc.Source = sourceFromJSON(src)
	}
	sc.Database, _ = p["databaseName"].(string)
	sc.DDL, _ = p["ddl"].(string)
	items, _ := p["tableChanges"].([]any)
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		var tc TableChange
		tc.Type, _ = m["type"].(string)
		tc.ID, _ = m["id"].(string)
		sc.Tables = append(sc.Tables, tc)
	}
	return sc
}

func sourceFromJSON(src map[string]any) SourcePos {
	var p SourcePos
	p.File, _ = src["file"].(string)
	p.Pos = toInt64(src["pos"])
	return p
}

// isSchemaChange reports whether name is a SchemaChangeValue.
func isSchemaChange(name string) bool { return strings.HasSuffix(name, ".SchemaChangeValue") }
