package maintain

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/apache/iceberg-go/table"
)

// ManifestReport is what a manifest rewrite did.
type ManifestReport struct {
	Rewritten, Added int
	SnapshotID       int64 // the rewrite snapshot; 0 when none
}

func (r ManifestReport) attrs() []any {
	return []any{"manifests_rewritten", r.Rewritten, "manifests_added", r.Added, "snapshot_id", r.SnapshotID}
}

func (m *Maintainer) rewriteManifests(ctx context.Context, ident table.Identifier) (ManifestReport, error) {
	var rep ManifestReport
	err := m.retry(ctx, ident, StepRewriteManifests, func(tbl *table.Table) error {
		rep = ManifestReport{}
		if tbl.CurrentSnapshot() == nil {
			return nil
		}
		if m.cfg.DryRun {
			// Planning writes the merged manifests; a dry run only
			// counts the data manifests that could be merged.
			st, err := TableStats(ctx, tbl)
			if err != nil {
				return err
			}
			if st.DataManifests > 1 {
				rep.Rewritten = st.DataManifests
			}
			return nil
		}
		tx, err := pinned(tbl)
		if err != nil {
			return err
		}
		res, err := tx.RewriteManifests(ctx)
		if err != nil {
			return fmt.Errorf("rewriting manifests: %w", err)
		}
		if res.IsNoOp() {
			return nil
		}
		next, err := m.commit(ctx, tx, StepRewriteManifests)
		if err != nil {
			return fmt.Errorf("committing the manifest rewrite: %w", err)
		}
		rep.Rewritten, rep.Added = len(res.RewrittenManifests), len(res.AddedManifests)
		if s := next.CurrentSnapshot(); s != nil {
			rep.SnapshotID = s.SnapshotID
		}
		return nil
	})
	return rep, err
}

// ExpireReport is what a snapshot expiry did.
type ExpireReport struct {
	Expired, Kept int
}

func (r ExpireReport) attrs() []any {
	return []any{"snapshots_expired", r.Expired, "snapshots_kept", r.Kept}
}

func (m *Maintainer) expire(ctx context.Context, ident table.Identifier) (ExpireReport, error) {
	var rep ExpireReport
	err := m.retry(ctx, ident, StepExpireSnapshots, func(tbl *table.Table) error {
		rep = ExpireReport{}
		before := len(tbl.Metadata().Snapshots())
		if before == 0 {
			return nil
		}
		tx, err := pinned(tbl)
		if err != nil {
			return err
		}
		// Files only expired snapshots reference are deleted once the
		// commit lands; readers still on those snapshots lose them,
		// which is what the age is for.
		if err := tx.ExpireSnapshots(table.WithOlderThan(m.cfg.ExpireOlderThan), table.WithRetainLast(m.cfg.RetainLast), table.WithPostCommit(true)); err != nil {
			return fmt.Errorf("planning the expiry (expire-older-than %s, expire-retain-last %d): %w", m.cfg.ExpireOlderThan, m.cfg.RetainLast, err)
		}
		staged, err := tx.StagedTable()
		if err != nil {
			return fmt.Errorf("reading the staged expiry: %w", err)
		}
		after := len(staged.Metadata().Snapshots())
		rep.Expired, rep.Kept = before-after, after
		if rep.Expired == 0 || m.cfg.DryRun {
			return nil
		}
		next, err := m.commit(ctx, tx, StepExpireSnapshots)
		if err != nil {
			return fmt.Errorf("committing the expiry: %w", err)
		}
		rep.Kept = len(next.Metadata().Snapshots())
		return nil
	})
	return rep, err
}

// OrphanReport is what orphan removal did.
type OrphanReport struct {
	Found, Removed int
	Bytes          int64 // of the orphans found
	// Spared are files the scan offered that the guard kept: outside the
	// table's folders, or referenced by a snapshot of the table as it was
	// just before the deletion.
	Spared int
}

func (r OrphanReport) attrs() []any {
	return []any{"orphans_found", r.Found, "orphans_removed", r.Removed, "orphan_bytes", r.Bytes, "orphans_spared", r.Spared}
}

// removeOrphans deletes the files of the table's data and metadata folders
// (Folders) that no snapshot references and that are older than
// OrphanAge. It scans nothing else: a table's location may hold other
// tables' files (one located at its namespace's or the warehouse's
// folder). A table whose folders overlap another table's of its
// namespace is refused (ErrSharedLocation; Run refuses it before its
// first step). Before deleting, the table
// is loaded again and every file its snapshots (all of them, of every
// ref) reach is kept, whatever the scan said.
func (m *Maintainer) removeOrphans(ctx context.Context, ident table.Identifier) (OrphanReport, error) {
	var rep OrphanReport
	tbl, err := m.cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("loading table %v: %w", ident, err)
	}
	if err := m.alone(ctx, ident, tbl); err != nil {
		return rep, err // checked by Run already; the table may have moved since
	}
	data, meta := Folders(tbl.Metadata())
	var found []table.OrphanFile
	for _, dir := range []string{data, meta} {
		plan, err := tbl.PlanOrphanFiles(ctx, table.WithLocation(dir), table.WithFilesOlderThan(m.cfg.OrphanAge))
		if errors.Is(err, fs.ErrNotExist) {
			continue // nothing written there yet
		}
		if err != nil {
			return rep, fmt.Errorf("listing the files of %s unreferenced for %s (orphan-age): %w", dir, m.cfg.OrphanAge, err)
		}
		found = append(found, plan.OrphanFiles()...)
	}
	if tbl, err = m.cat.LoadTable(ctx, ident); err != nil {
		return rep, fmt.Errorf("loading table %v: %w", ident, err)
	}
	refs, err := referenced(ctx, tbl)
	if err != nil {
		return rep, fmt.Errorf("reading the files the snapshots of %v reference: %w", ident, err)
	}
	orphans, outside, live := guard(found, []string{data, meta}, refs)
	rep.Found, rep.Spared = len(orphans), len(outside)+len(live)
	for _, o := range orphans {
		rep.Bytes += o.SizeBytes
	}
	if len(outside) > 0 || len(live) > 0 {
		m.cfg.Logger.Warn("orphan scan offered files the table's folders do not hold or its snapshots reference; kept",
			"table", ident, "outside", outside, "referenced", live)
	}
	if m.cfg.DryRun || len(orphans) == 0 {
		return rep, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return rep, fmt.Errorf("opening the file system of %v: %w", ident, err)
	}
	for _, o := range orphans {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := fsys.Remove(o.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("removing orphan %s: %w", o.Path, err)
		}
		rep.Removed++
	}
	return rep, nil
}
