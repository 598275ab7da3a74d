package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// Table names (schemamap.Namer): a table's name depends on the catalog,
// not only on the source's: a natural name another source table holds
// (schemamap.SourceProperty) sends the second one to its hashed name, and
// a table created under the naming of earlier versions keeps being used.
// So a name is resolved against the catalog where a table is opened:
// assignment (adjustOffsets, heldIdent), a worker's first change (locate)
// and a rename's target (renameTarget).
//
// Creation races: two table goroutines of one process resolving the same
// natural name for two sources are serialised by Pipeline.nameMu, held
// from resolving to the table's creation, so the second sees the first's
// table. Two processes are told apart by the catalog: CreateTable of the
// loser fails (or its retry finds the table), and the creator checks the
// table's SourceProperty after every creation: a table another source
// created under the name sends it back to resolving, which then picks the
// hashed name. Each process reaches the same names, whichever won.

// namerFor is the pipeline's Namer for the topic prefix prefix.
func (p *Pipeline) namerFor(prefix string) schemamap.Namer {
	n := p.cfg.Namer
	n.Prefix = prefix
	return n
}

// lookup is a schemamap.Lookup over the catalog that keeps the tables it
// loaded, for the caller to use without loading them again.
type lookup struct {
	cat    catalog.Catalog
	loaded map[string]*table.Table
}

func (l *lookup) look(ctx context.Context, ident table.Identifier) (map[string]string, bool, error) {
	tbl, err := l.cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("loading table %v: %w", ident, err)
	}
	if l.loaded == nil {
		l.loaded = map[string]*table.Table{}
	}
	l.loaded[strings.Join(ident, "\x00")] = tbl
	return tbl.Properties(), true, nil
}

func (l *lookup) table(ident table.Identifier) *table.Table {
	return l.loaded[strings.Join(ident, "\x00")]
}

// resolveTable finds the table of source table names (topic: its change
// topic): the resolved name and, when it exists, the table.
func (p *Pipeline) resolveTable(ctx context.Context, names topicNames, topic string) (schemamap.Resolved, *table.Table, error) {
	l := &lookup{cat: p.cat}
	res, err := p.namerFor(names.prefix).Resolve(ctx, names.db, names.table, topic, l.look)
	if err != nil {
		return schemamap.Resolved{}, nil, err
	}
	var tbl *table.Table
	if res.Exists {
		tbl = l.table(res.Ident)
	}
	return res, tbl, nil
}

// sourceProps are the properties that record which source table a lake
// table holds.
func (p *Pipeline) sourceProps(names topicNames) iceberg.Properties {
	return iceberg.Properties{
		schemamap.SourceProperty:       p.namerFor(names.prefix).Source(names.db, names.table),
		schemamap.SourcePrefixProperty: names.prefix,
	}
}

// locate resolves w's table at its first change: it sets w.ident and
// returns the table, nil when it is still to be created (under w.ident).
func (w *worker) locate(ctx context.Context) (*table.Table, error) {
	res, tbl, err := w.p.resolveTable(ctx, w.names, w.topic)
	if err != nil {
		return nil, fmt.Errorf("naming the table of %s: %w", w.topic, err)
	}
	w.setIdent(res)
	if tbl != nil && tbl.Properties()[schemamap.SourcePrefixProperty] == "" && w.names.prefix != "" {
		if tbl, err = w.adoptTable(ctx, tbl); err != nil {
			return nil, err
		}
	}
	return tbl, nil
}

// adoptTable records w's source (its topic prefix) in tbl, w's table,
// which names no source (created by an older binlake): the first source
// that writes a table adopts it, and another source's table of the same
// name is then told apart (schemamap.ErrOtherSource). It returns the
// table as reloaded; it fails when another source adopted it first.
func (w *worker) adoptTable(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	w.p.nameMu.Lock()
	defer w.p.nameMu.Unlock()
	key := schemamap.SourcePrefixProperty
	err := retryCatalog(ctx, func() error {
		t, err := w.p.cat.LoadTable(ctx, w.ident)
		if err != nil {
			return fmt.Errorf("loading table %v: %w", w.ident, err)
		}
		if tbl = t; t.Properties()[key] != "" {
			return nil
		}
		tx := t.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{key: w.names.prefix}); err != nil {
			return fmt.Errorf("recording the source of table %v: %w", w.ident, err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			return fmt.Errorf("recording the source of table %v: %w", w.ident, err)
		}
		w.log.Info("the table names no source (created by an older binlake): this source adopts it; another source's table of the same name now stops ingest (see --merge-sources)",
			"source_prefix", w.names.prefix)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if got := tbl.Properties()[key]; got != w.names.prefix && !w.p.cfg.Namer.MergeSources {
		return nil, fmt.Errorf("naming the table of %s: %w", w.topic, w.p.namerFor(w.names.prefix).OtherSource(tbl.Properties(), w.names.db, w.names.table, w.ident))
	}
	return tbl, nil
}

// setIdent names w's table res.Ident.
func (w *worker) setIdent(res schemamap.Resolved) {
	if slices.Equal(w.ident, res.Ident) {
		return
	}
	w.ident, w.tableUUID = res.Ident, ""
	w.log = w.p.log.With("table", strings.Join(res.Ident, "."), "topic", w.topic)
	switch res.Kind {
	case schemamap.NameHashed:
		w.log.Info("the table's natural name is another source table's: using the hashed name", "natural", strings.Join(w.p.namerFor(w.names.prefix).Natural(w.names.db, w.names.table), "."))
	case schemamap.NameLegacy:
		w.log.Info("using the table under the name of earlier versions (see README: moving to natural names)")
	}
}

// createTable creates w's table with create, under the name resolved
// while p.nameMu is held, and checks afterwards that the table under that
// name is w's source's: when another process created it first for another
// source, w resolves again (which then gives the hashed name) and creates
// that one. It sets w.ident, and reports false when the table turned out
// to exist already (created meanwhile for w's source).
func (w *worker) createTable(ctx context.Context, create func(ident table.Identifier) error) (created bool, err error) {
	w.p.nameMu.Lock()
	defer w.p.nameMu.Unlock()
	n := w.p.namerFor(w.names.prefix)
	for range 3 {
		res, _, err := w.p.resolveTable(ctx, w.names, w.topic)
		if err != nil {
			return false, fmt.Errorf("naming the table of %s: %w", w.topic, err)
		}
		w.setIdent(res)
		if res.Exists {
			return false, nil // created meanwhile, for this source
		}
		if err := create(res.Ident); err != nil {
			return false, err
		}
		l := &lookup{cat: w.p.cat}
		props, ok, err := l.look(ctx, res.Ident)
		if err != nil {
			return false, err
		}
		if ok && n.Holds(props, w.names.db, w.names.table, w.topic, res.Ident) {
			return true, nil
		}
		w.log.Info("another source table's table took the name first; naming again", "holder", props[schemamap.SourceProperty])
	}
	return false, fmt.Errorf("creating the table of %s: the names it resolves to keep being taken by other source tables' tables: name it with table-name-map", w.topic)
}

// renameTarget is the table name the source table names (the new name of a
// rename) gets, when it takes over from (the table being renamed, of
// source table fromNames): from's own name when that is also the new
// source's natural name (a rename that changes only what the natural name
// drops, Orders to orders); the name the rename gave it, when one of the
// new source's names already holds a table of the old source (a crash
// between the rename and setSource: resolving would take it for another
// source's table and pick the hashed name, leaving the renamed table, and
// every row before the rename, behind); else the name resolved for it.
func (p *Pipeline) renameTarget(ctx context.Context, names topicNames, topic string, from table.Identifier, fromNames topicNames) (table.Identifier, error) {
	n := p.namerFor(names.prefix)
	if id := n.Ident(names.db, names.table); slices.Equal(id, from) {
		return id, nil
	}
	oldSource := p.namerFor(fromNames.prefix).Source(fromNames.db, fromNames.table)
	l := &lookup{cat: p.cat}
	for _, id := range []table.Identifier{n.Ident(names.db, names.table), n.Hashed(names.db, names.table)} {
		props, ok, err := l.look(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("naming the renamed table %s.%s: %w", names.db, names.table, err)
		}
		if ok && props[schemamap.SourceProperty] == oldSource {
			return id, nil
		}
	}
	res, _, err := p.resolveTable(ctx, names, topic)
	if err != nil {
		return nil, fmt.Errorf("naming the renamed table %s.%s: %w", names.db, names.table, err)
	}
	return res.Ident, nil
}

// setSource records in table ident that it holds source table names, named
// so by the rename at mark, when it does not say so already.
func (p *Pipeline) setSource(ctx context.Context, ident table.Identifier, names topicNames, mark nameMark) error {
	want := p.sourceProps(names)
	want[NameSinceProperty] = mark.String()
	return retryCatalog(ctx, func() error {
		tbl, err := p.cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("loading table %v: %w", ident, err)
		}
		if tbl.Properties()[schemamap.SourceProperty] == want[schemamap.SourceProperty] && tbl.Properties()[NameSinceProperty] == want[NameSinceProperty] {
			return nil
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(want); err != nil {
			return fmt.Errorf("setting the source of table %v: %w", ident, err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("setting the source of table %v: %w", ident, err)
		}
		return nil
	})
}
