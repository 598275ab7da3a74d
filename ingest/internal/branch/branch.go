// Package branch lets ingest's writer (package commit, through package
// pipeline) write into an Iceberg branch instead of main, unchanged: a
// Catalog wraps the real one and shows every table as if the branch were
// main, and turns the commits made on that view into commits on the branch.
//
// The view of a table ([View]) has main pointing at the branch's head, and
// the ingest bookkeeping properties (Kafka offsets, commit id, truncate
// watermark: commit.OffsetsKeyPrefix and friends), which are table-wide,
// replaced by those of the branch, read from the summary of the branch's
// newest snapshot that carries them. Commits through the view are sent with
// their main requirements and main ref updates renamed to the branch, and
// without the bookkeeping properties: on a branch they live in the snapshot
// summaries alone, so main's own offsets, which the running ingest keeps,
// are never touched. Every other update (a schema change, other
// properties) is table-wide and passes through.
//
// The replay of `ingest replay` is built on it: the branch starts at an
// earlier snapshot, a pipeline re-applies the topic from that snapshot's
// offsets through the view, and [Publish] then moves main to the branch.
package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Bookkeeping property keys, the same as package commit's (not imported,
// to keep this package below commit).
const (
	offsetsPrefix = "binlake.offsets."
	commitIDKey   = "binlake.commit-id"
	watermarkKey  = "binlake.truncate.source-order"
	epochsKey     = "binlake.source.epochs"
)

// ErrNoBranch reports a table that has no branch of the name.
var ErrNoBranch = errors.New("branch: no such branch")

// bookkeeping reports whether a property key is one of ingest's table-wide
// bookkeeping keys, which a branch keeps in its snapshot summaries.
func bookkeeping(k string) bool {
	return strings.HasPrefix(k, offsetsPrefix) || k == commitIDKey || k == watermarkKey || k == epochsKey
}

// Catalog is a catalog.Catalog whose tables are seen, and written, at
// branch Branch. It creates no tables and renames none.
type Catalog struct {
	catalog.Catalog
	Branch string
}

// LoadTable loads the table and returns its view at the branch; the error
// wraps ErrNoBranch when the table has no such branch.
func (c *Catalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return View(tbl, c.Branch, c)
}

// CreateTable refuses: a branch belongs to an existing table.
func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, _ *iceberg.Schema, _ ...catalog.CreateTableOpt) (*table.Table, error) {
	return nil, fmt.Errorf("table %s does not exist: a write into branch %q does not create tables", strings.Join(ident, "."), c.Branch)
}

// RenameTable refuses: a rename is table-wide.
func (c *Catalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	return nil, fmt.Errorf("renaming %s to %s: a write into branch %q does not rename tables", strings.Join(from, "."), strings.Join(to, "."), c.Branch)
}

// CommitTable sends a commit made on a view to the branch and returns the
// view of the result.
func (c *Catalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	r, u, err := Retarget(reqs, updates, c.Branch)
	if err != nil {
		return nil, "", err
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, ident, r, u)
	if err != nil {
		return nil, "", err
	}
	view, err := viewMetadata(meta, loc, c.Branch)
	if err != nil {
		return nil, "", fmt.Errorf("table %s after a commit to branch %q: %w", strings.Join(ident, "."), c.Branch, err)
	}
	return view, loc, nil
}

// View returns tbl as seen from branch: main is the branch's head and the
// bookkeeping properties are the branch's. cat is the view's catalog (the
// Catalog of the branch, so that commits on the view reach the branch).
func View(tbl *table.Table, branch string, cat table.CatalogIO) (*table.Table, error) {
	meta, err := viewMetadata(tbl.Metadata(), tbl.MetadataLocation(), branch)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", strings.Join(tbl.Identifier(), "."), err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, cat), nil
}

func viewMetadata(meta table.Metadata, loc, branch string) (table.Metadata, error) {
	head := meta.SnapshotByName(branch)
	if head == nil {
		return nil, fmt.Errorf("%w %q", ErrNoBranch, branch)
	}
	b, err := table.MetadataBuilderFromBase(meta, loc)
	if err != nil {
		return nil, err
	}
	if err := b.SetSnapshotRef(table.MainBranch, head.SnapshotID, table.BranchRef); err != nil {
		return nil, err
	}
	var drop []string
	for k := range meta.Properties() {
		if bookkeeping(k) {
			drop = append(drop, k)
		}
	}
	if len(drop) > 0 {
		if err := b.RemoveProperties(drop); err != nil {
			return nil, err
		}
	}
	if props := Bookkeeping(meta, head.SnapshotID); len(props) > 0 {
		if err := b.SetProperties(props); err != nil {
			return nil, err
		}
	}
	return b.Build()
}

// Bookkeeping returns the bookkeeping properties as of snapshot id: each
// topic's offsets from the newest snapshot from id back that carries that
// topic's offsets (a commit records only the topics it consumed: a table
// fed by two topics, after a rename, has the old topic's offsets in the
// snapshots before the rename alone; a compaction's or a foreign writer's
// snapshot carries none and holds the rows of its parent), the truncate
// watermark and the binlog histories (epochs) of the newest that carries
// them, and the commit id of id itself.
func Bookkeeping(meta table.Metadata, id int64) iceberg.Properties {
	out := iceberg.Properties{}
	haveMark, haveEpochs := false, false
	first := true
	for s, seen := meta.SnapshotByID(id), 0; s != nil && seen <= len(meta.Snapshots()); seen++ {
		if s.Summary != nil {
			props := s.Summary.Properties
			if first && props[commitIDKey] != "" {
				out[commitIDKey] = props[commitIDKey]
			}
			for k, v := range props {
				if _, have := out[k]; !have && strings.HasPrefix(k, offsetsPrefix) {
					out[k] = v
				}
			}
			if !haveMark && props[watermarkKey] != "" {
				out[watermarkKey], haveMark = props[watermarkKey], true
			}
			if !haveEpochs && props[epochsKey] != "" {
				out[epochsKey], haveEpochs = props[epochsKey], true
			}
		}
		first = false
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}

// Retarget turns the requirements and updates of a commit on main into
// those of a commit on branch: assert-ref-snapshot-id and set-snapshot-ref
// of main name the branch, and the bookkeeping keys are left out of
// set-properties and remove-properties.
func Retarget(reqs []table.Requirement, updates []table.Update, branch string) ([]table.Requirement, []table.Update, error) {
	outR := make([]table.Requirement, 0, len(reqs))
	for _, r := range reqs {
		if r.GetType() == "assert-ref-snapshot-id" {
			var w struct {
				Ref        string `json:"ref"`
				SnapshotID *int64 `json:"snapshot-id"`
			}
			if err := roundTrip(r, &w); err != nil {
				return nil, nil, err
			}
			if w.Ref == table.MainBranch {
				r = table.AssertRefSnapshotID(branch, w.SnapshotID)
			}
		}
		outR = append(outR, r)
	}
	outU := make([]table.Update, 0, len(updates))
	for _, u := range updates {
		switch u.Action() {
		case table.UpdateSetSnapshotRef:
			var w struct {
				Ref        string        `json:"ref-name"`
				Type       table.RefType `json:"type"`
				SnapshotID int64         `json:"snapshot-id"`
			}
			if err := roundTrip(u, &w); err != nil {
				return nil, nil, err
			}
			if w.Ref == table.MainBranch {
				u = table.NewSetSnapshotRefUpdate(branch, w.SnapshotID, table.BranchRef, 0, 0, 0)
			}
		case table.UpdateSetProperties:
			var w struct {
				Updates iceberg.Properties `json:"updates"`
			}
			if err := roundTrip(u, &w); err != nil {
				return nil, nil, err
			}
			maps.DeleteFunc(w.Updates, func(k, _ string) bool { return bookkeeping(k) })
			if len(w.Updates) == 0 {
				continue
			}
			u = table.NewSetPropertiesUpdate(w.Updates)
		case table.UpdateRemoveProperties:
			var w struct {
				Removals []string `json:"removals"`
			}
			if err := roundTrip(u, &w); err != nil {
				return nil, nil, err
			}
			var keep []string
			for _, k := range w.Removals {
				if !bookkeeping(k) {
					keep = append(keep, k)
				}
			}
			if len(keep) == 0 {
				continue
			}
			u = table.NewRemovePropertiesUpdate(keep)
		}
		outU = append(outU, u)
	}
	return outR, outU, nil
}

func roundTrip(v any, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("branch: encoding %T: %w", v, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("branch: decoding %T: %w", v, err)
	}
	return nil
}

// Create makes branch at snapshot id of tbl, and sets the table properties
// props with it; it fails if the branch exists.
func Create(ctx context.Context, cat catalog.Catalog, tbl *table.Table, branch string, id int64, props iceberg.Properties) error {
	reqs := []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(branch, nil)}
	updates := []table.Update{table.NewSetSnapshotRefUpdate(branch, id, table.BranchRef, 0, 0, 0)}
	if len(props) > 0 {
		updates = append(updates, table.NewSetPropertiesUpdate(props))
	}
	_, _, err := cat.CommitTable(ctx, tbl.Identifier(), reqs, updates)
	return err
}

// Publish moves main to the head of branch, and the table's bookkeeping
// properties to the branch's (so that the ingest writing main resumes from
// the branch's offsets; main's offsets of a topic the branch holds none of
// are kept), in one commit that requires main and the branch to
// be where tbl has them: a commit to either since tbl was loaded fails it
// (table.ErrCommitFailed). set are further properties to set, remove
// further properties to remove. It returns the snapshot main now holds.
func Publish(ctx context.Context, cat catalog.Catalog, tbl *table.Table, branch string, set iceberg.Properties, remove []string) (int64, error) {
	meta := tbl.Metadata()
	head := meta.SnapshotByName(branch)
	if head == nil {
		return 0, fmt.Errorf("%w %q", ErrNoBranch, branch)
	}
	var mainID *int64
	if s := tbl.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		mainID = &id
	}
	headID := head.SnapshotID
	props := Bookkeeping(meta, headID)
	maps.Copy(props, set)
	var drop []string
	for k := range meta.Properties() {
		// Main's offsets of a topic the branch holds none of stay: the
		// branch did not consume it (nor, then, undo what main applied).
		if bookkeeping(k) && props[k] == "" && !strings.HasPrefix(k, offsetsPrefix) {
			drop = append(drop, k)
		}
	}
	drop = append(drop, remove...)
	reqs := []table.Requirement{
		table.AssertTableUUID(meta.TableUUID()),
		table.AssertRefSnapshotID(table.MainBranch, mainID),
		table.AssertRefSnapshotID(branch, &headID),
	}
	updates := []table.Update{table.NewSetSnapshotRefUpdate(table.MainBranch, headID, table.BranchRef, 0, 0, 0)}
	if len(props) > 0 {
		updates = append(updates, table.NewSetPropertiesUpdate(props))
	}
	if len(drop) > 0 {
		updates = append(updates, table.NewRemovePropertiesUpdate(drop))
	}
	if _, _, err := cat.CommitTable(ctx, tbl.Identifier(), reqs, updates); err != nil {
		return 0, err
	}
	return headID, nil
}

// Remove drops branch and the table properties remove.
func Remove(ctx context.Context, cat catalog.Catalog, tbl *table.Table, branch string, remove []string) error {
	updates := []table.Update{table.NewRemoveSnapshotRefUpdate(branch)}
	if len(remove) > 0 {
		updates = append(updates, table.NewRemovePropertiesUpdate(remove))
	}
	_, _, err := cat.CommitTable(ctx, tbl.Identifier(), []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID())}, updates)
	return err
}
