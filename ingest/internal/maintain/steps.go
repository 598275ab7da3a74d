package maintain

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/catalog"
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
}

func (r OrphanReport) attrs() []any {
	return []any{"orphans_found", r.Found, "orphans_removed", r.Removed, "orphan_bytes", r.Bytes}
}

func (m *Maintainer) removeOrphans(ctx context.Context, ident table.Identifier) (OrphanReport, error) {
	var rep OrphanReport
	tbl, err := m.cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("loading table %v: %w", ident, err)
	}
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(m.cfg.OrphanAge), table.WithDryRun(m.cfg.DryRun))
	if err != nil {
		return rep, fmt.Errorf("removing files unreferenced for %s (orphan-age): %w", m.cfg.OrphanAge, err)
	}
	rep.Found, rep.Removed, rep.Bytes = len(res.OrphanFileLocations), len(res.DeletedFiles), res.TotalSizeBytes
	return rep, nil
}

// Tables lists the tables of the namespaces, in catalog order.
func Tables(ctx context.Context, cat catalog.Catalog, namespaces []table.Identifier) ([]table.Identifier, error) {
	var out []table.Identifier
	for _, ns := range namespaces {
		for id, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, fmt.Errorf("listing the tables of namespace %v: %w", ns, err)
			}
			out = append(out, id)
		}
	}
	return out, nil
}
