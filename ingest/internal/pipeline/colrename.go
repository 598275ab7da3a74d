package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/decode"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// Column renames (ALTER TABLE t CHANGE c c2 ..., RENAME COLUMN c TO c2)
// are followed as Iceberg column renames, which keep the column's field
// id, so the rows written before the rename hold their values under the
// new name. The Avro row schema carries no rename (c2 looks like a new
// column), so the renames are read from the DDL of the schema-change
// records on topic <prefix>:
//
//   - The handler of a schema-change record notes the column renames it
//     makes (noteColumnRenames), by the table's topic and the statement's
//     binlog position, in memory.
//   - A table's worker, before it adopts a record schema for a change at
//     position q (which may evolve the table), applies every noted
//     rename of its topic before q that its lake table has not had yet,
//     all in one metadata commit that also sets the table property
//     columnsRenamedAtProperty to the last one's position. Tables wait for
//     the schema topic to be handled up to their change's position before
//     they buffer it (awaitSchema), so every rename before q is noted by
//     then.
//   - Several processes (or workers of other partitions) may apply the
//     same renames to one table: the commit requires the table's schema to
//     be the one the renames were computed against, so the loser reloads
//     the table and finds the property past the renames.
//   - A change at q that is before renames the table already had (a record
//     of another partition, polled late) has its columns' names carried
//     through those renames (renamedThrough), so that its values land in
//     the renamed columns rather than in new ones with the old names.
//
// A rename whose old column the lake table does not have (never written,
// or renamed already) is skipped; so is one onto a name the table holds
// for another column (a column dropped at the source keeps its lake
// column): its column then goes on as before, a new column.

// columnsRenamedAtProperty is the table property that holds the binlog
// position (file:pos) of the last column-rename statement the table has
// had: the renames up to it are in its schema. A table created from a
// change holds the change's position: its schema has every rename before.
const columnsRenamedAtProperty = "binlake.columns-renamed-at"

// maxColumnRenameNotes bounds the rename statements kept per topic: the
// oldest go first. A table that falls further behind its topic's renames
// than this misses the oldest (its columns go on under their old names
// beside new ones, as without rename-following).
const maxColumnRenameNotes = 256

// maxColumnRenameAttempts bounds the rename commits retried after another
// writer changed the table first.
const maxColumnRenameAttempts = 10

// columnRenameNote is one statement's column renames.
type columnRenameNote struct {
	pos     decode.SourcePos
	renames []columnRename
	// history marks a note of a record below the group's offset when the
	// follower started (follower.run), not handled live by this process.
	history bool
}

// columnRenames are the noted column renames, by table topic, each list
// in position order. The zero value is ready; its mutex is a leaf.
type columnRenames struct {
	mu      sync.Mutex
	byTopic map[string][]columnRenameNote
}

// note adds a statement's renames to topic, once per position (live
// when noted live once).
func (c *columnRenames) note(topic string, pos decode.SourcePos, renames []columnRename, history bool) (dropped bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byTopic == nil {
		c.byTopic = map[string][]columnRenameNote{}
	}
	notes := c.byTopic[topic]
	i, found := slices.BinarySearchFunc(notes, pos, func(n columnRenameNote, p decode.SourcePos) int { return n.pos.Compare(p) })
	if found {
		notes[i].history = notes[i].history && history
		return false
	}
	notes = slices.Insert(notes, i, columnRenameNote{pos, slices.Clone(renames), history})
	if len(notes) > maxColumnRenameNotes {
		notes, dropped = slices.Delete(notes, 0, len(notes)-maxColumnRenameNotes), true
	}
	c.byTopic[topic] = notes
	return dropped
}

// between returns topic's notes after from (all when from is unknown) and
// before to.
func (c *columnRenames) between(topic string, from, to decode.SourcePos) []columnRenameNote {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []columnRenameNote
	for _, n := range c.byTopic[topic] {
		if (!from.Known() || n.pos.Compare(from) > 0) && n.pos.Compare(to) < 0 {
			out = append(out, n)
		}
	}
	return out
}

// after returns topic's notes after from and up to upTo, both known.
func (c *columnRenames) after(topic string, from, upTo decode.SourcePos) []columnRenameNote {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []columnRenameNote
	for _, n := range c.byTopic[topic] {
		if n.pos.Compare(from) > 0 && n.pos.Compare(upTo) <= 0 {
			out = append(out, n)
		}
	}
	return out
}

// noteColumnRenames notes the column renames of a schema-change record of
// schema topic prefix, for the table workers to apply
// (worker.followColumnRenames). A statement that also renames its table
// (ALTER TABLE a RENAME COLUMN x TO y, RENAME TO b) is noted under both
// topics: the lake table goes on under b's.
func (p *Pipeline) noteColumnRenames(prefix string, sc *decode.SchemaChange) {
	p.noteColumns(prefix, sc, true)
}

// noteColumns is noteColumnRenames, logging each note when logged. It
// reports whether the statement renames columns.
func (p *Pipeline) noteColumns(prefix string, sc *decode.SchemaChange, logged bool) bool {
	if !sc.Source.Known() {
		return false
	}
	tn, renames, ok := parseColumnRenames(sc.DDL, sc.Database)
	if !ok {
		return false
	}
	topics := []string{tableTopic(prefix, tn)}
	for _, pr := range parseRenames(sc.DDL, sc.Database) {
		if pr.From == tn {
			topics = append(topics, tableTopic(prefix, pr.To))
		}
	}
	for _, topic := range topics {
		if p.colRenames.note(topic, sc.Source, renames, !logged) {
			p.log.Warn("too many column renames of one table wait to be applied; forgetting the oldest",
				"topic", topic, "kept", maxColumnRenameNotes)
		}
		if logged {
			p.log.Info("noted column renames", "topic", topic, "renames", renameText(renames), "binlog_file", sc.Source.File, "binlog_pos", sc.Source.Pos)
		}
	}
	return true
}

func renameText(renames []columnRename) string {
	parts := make([]string, len(renames))
	for i, r := range renames {
		parts[i] = r.Old + " -> " + r.New
	}
	return strings.Join(parts, ", ")
}

// formatSourcePos and parseSourcePos write and read a position as
// file:pos.
func formatSourcePos(p decode.SourcePos) string { return p.File + ":" + strconv.FormatInt(p.Pos, 10) }

func parseSourcePos(s string) (decode.SourcePos, bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return decode.SourcePos{}, false
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return decode.SourcePos{}, false
	}
	return decode.SourcePos{File: s[:i], Pos: n}, true
}

// renamedAt is the position of the last rename statement the table has
// had, by its property; unknown when it has none.
func renamedAt(props iceberg.Properties) decode.SourcePos {
	p, _ := parseSourcePos(props[columnsRenamedAtProperty])
	return p
}

// columnRenameProps sets, on a table created from the change at q, the property
// that says it has had every column rename before q.
func (w *worker) columnRenameProps(props iceberg.Properties) {
	if w.changeAt.Known() {
		props[columnsRenamedAtProperty] = formatSourcePos(w.changeAt)
	}
}

// lakeColumn finds the top-level column of sch that source column name
// is in the lake: the column of that name, else (lower-case-columns) of
// its lower-cased name, else the one name matches regardless of case
// (MariaDB's column names are case-insensitive, so the DDL may spell it
// otherwise). It returns the column's index in fields.
func (p *Pipeline) lakeColumn(fields []iceberg.NestedField, name string) (int, bool) {
	if i := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == name }); i >= 0 {
		return i, true
	}
	if p.cfg.LowerCaseColumns {
		l := schemamap.LowerColumn(name)
		if i := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == l }); i >= 0 {
			return i, true
		}
	}
	found := -1
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return 0, false
			}
			found = i
		}
	}
	return found, found >= 0
}

// lakeColumnName is the lake name of a column renamed to source name.
func (p *Pipeline) lakeColumnName(name string) string {
	if p.cfg.LowerCaseColumns {
		return schemamap.LowerColumn(name)
	}
	return name
}

// appliedRename is one column renamed in the lake.
type appliedRename struct {
	id       int
	from, to string
}

// renameColumns applies the notes in order to the top-level columns
// fields (changed in place). The renames of one statement apply at once,
// each to a column as it was before the statement. It returns what it
// renamed and what it skipped, with why.
func (p *Pipeline) renameColumns(fields []iceberg.NestedField, notes []columnRenameNote) (done []appliedRename, skipped []string) {
	for _, n := range notes {
		type move struct {
			idx int
			r   columnRename
			to  string
		}
		var moves []move
		moving := map[int]bool{}
		for _, r := range n.renames {
			i, ok := p.lakeColumn(fields, r.Old)
			if !ok || moving[i] {
				skipped = append(skipped, r.Old+" -> "+r.New+": the table has no column "+r.Old)
				continue
			}
			to := p.lakeColumnName(r.New)
			if fields[i].Name == to {
				continue // only its case changed, which the lake's names do not show
			}
			moving[i] = true
			moves = append(moves, move{i, r, to})
		}
		var stmt []appliedRename
		taken := map[string]bool{}
		for i, f := range fields {
			if !moving[i] {
				taken[f.Name] = true
			}
		}
		for _, m := range moves {
			if taken[m.to] {
				skipped = append(skipped, m.r.Old+" -> "+m.r.New+": the table has another column "+m.to)
				continue
			}
			taken[m.to] = true
			stmt = append(stmt, appliedRename{fields[m.idx].ID, fields[m.idx].Name, m.to})
			fields[m.idx].Name = m.to // the other moves' indexes and names are of before the statement
		}
		done = append(done, stmt...)
	}
	return done, skipped
}

// followColumnRenames applies to w's table, before w adopts a schema for
// its change at w.changeAt, the noted column renames of its topic before
// that change which the table has not had: one metadata commit with the
// renamed schema and columnsRenamedAtProperty, retried on a conflict
// after reloading the table. The committer is replaced when the table
// changed.
func (w *worker) followColumnRenames(ctx context.Context) error {
	p := w.p
	q := w.changeAt
	if !q.Known() || w.committer == nil {
		return nil
	}
	if at := renamedAt(w.committer.Table().Properties()); len(p.colRenames.between(w.topic, at, q)) == 0 {
		return nil
	}
	var (
		done    []appliedRename
		skipped []string
		last    decode.SourcePos
	)
	for attempt := 1; ; attempt++ {
		tbl, err := p.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return fmt.Errorf("loading %v to rename its columns: %w", w.ident, err)
		}
		at := renamedAt(tbl.Properties())
		notes := p.colRenames.between(w.topic, at, q)
		if !at.Known() {
			// A table without the property was written by a version that
			// did not follow renames: statements from before this process
			// may be in it already, by name (a swap would be swapped back).
			notes = slices.DeleteFunc(notes, func(n columnRenameNote) bool { return n.history })
		}
		if len(notes) == 0 {
			done, skipped = nil, nil
			break
		}
		last = notes[len(notes)-1].pos
		sch := tbl.Schema()
		fields := slices.Clone(sch.Fields())
		done, skipped = p.renameColumns(fields, notes)
		meta := tbl.Metadata()
		reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()), table.AssertCurrentSchemaID(sch.ID)}
		var updates []table.Update
		if len(done) > 0 {
			next := iceberg.NewSchemaWithIdentifiers(0, sch.IdentifierFieldIDs, fields...)
			id := -1
			for _, s := range meta.Schemas() {
				if s.Equals(next) {
					id = s.ID // renamed back to names it had: that schema again
				}
			}
			if id < 0 {
				for _, s := range meta.Schemas() {
					id = max(id, s.ID)
				}
				id++
				next = iceberg.NewSchemaWithIdentifiers(id, sch.IdentifierFieldIDs, fields...)
				updates = append(updates, table.NewAddSchemaUpdate(next))
			}
			updates = append(updates, table.NewSetCurrentSchemaUpdate(id))
		}
		updates = append(updates, table.NewSetPropertiesUpdate(iceberg.Properties{columnsRenamedAtProperty: formatSourcePos(last)}))
		_, _, err = p.cat.CommitTable(ctx, w.ident, reqs, updates)
		if err == nil {
			break
		}
		if !errors.Is(err, table.ErrCommitFailed) || attempt == maxColumnRenameAttempts {
			return fmt.Errorf("renaming columns of %v: %w", w.ident, err)
		}
		w.log.Info("the table changed while its columns were being renamed; reloading it", "attempt", attempt, "error", err)
	}
	for _, d := range done {
		w.log.Info("renamed column", "from", d.from, "to", d.to, "field_id", d.id, "binlog_file", last.File, "binlog_pos", last.Pos)
	}
	for _, s := range skipped {
		w.log.Warn("not renaming a column: it goes on under its new name as a new column", "rename", s, "binlog_file", last.File, "binlog_pos", last.Pos)
	}
	var err error
	if err = w.openCommitter(ctx); err != nil {
		return err
	}
	return nil
}

// renamedThrough carries the lake schema ls and key of a change from
// before column renames the table has had (a record of another partition
// polled after the renames were applied) through those renames, as noted:
// its values then land in the renamed columns, not in columns re-added
// under the old names. A change after the table's renames is returned as
// is.
func (w *worker) renamedThrough(ls *decode.Schema, key []string) (*decode.Schema, []string) {
	q := w.changeAt
	if !q.Known() || w.committer == nil {
		return ls, key
	}
	at := renamedAt(w.committer.Table().Properties())
	if !at.Known() || q.Compare(at) >= 0 {
		return ls, key
	}
	notes := w.p.colRenames.after(w.topic, q, at)
	if len(notes) == 0 {
		return ls, key
	}
	names := slices.Clone(ls.Columns)
	fields := make([]iceberg.NestedField, len(names))
	for i, n := range names {
		fields[i] = iceberg.NestedField{ID: i + 1, Name: n}
	}
	w.p.renameColumns(fields, notes)
	rename := map[string]string{}
	for i, f := range fields {
		if f.Name != names[i] {
			rename[names[i]] = f.Name
		}
	}
	if len(rename) == 0 {
		return ls, key
	}
	w.log.Info("a change from before column renames the table has had: its columns go by their new names",
		"binlog_file", q.File, "binlog_pos", q.Pos, "renames", rename)
	out := &decode.Schema{ID: ls.ID, Columns: make([]string, len(ls.Columns))}
	for i, c := range ls.Columns {
		if n, ok := rename[c]; ok {
			c = n
		}
		out.Columns[i] = c
	}
	if ls.Row != nil {
		row := *ls.Row
		row.Fields = slices.Clone(ls.Row.Fields)
		for i, f := range row.Fields {
			if n, ok := rename[f.Name]; ok {
				row.Fields[i].Name = n
			}
		}
		out.Row = &row
	}
	lkey := slices.Clone(key)
	for i, k := range lkey {
		if n, ok := rename[k]; ok {
			lkey[i] = n
		}
	}
	return out, lkey
}
