package resume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/binlake/binlake/capture/internal/filter"
	"github.com/binlake/binlake/capture/internal/schemahist"
	"github.com/binlake/binlake/capture/internal/snapshot"
	"github.com/binlake/binlake/capture/internal/stream"
)

// NewTables applies the policy for tables the filter lists capture now
// and did not when st was stored (the include lists were widened, or the
// exclude lists narrowed, between runs): their rows are not in the binlog
// still to be read, so with snapshot-mode initial or when_needed they are
// added to st's ad-hoc snapshot (after the tables it still has to read,
// none twice); other modes log that their rows are missing. Tables in the
// schema history were captured before and never count as new, nor does
// anything when st was stored without lists (an older capture) or not
// stored at all.
//
// It then sets st's lists to lists, and reports store when they changed:
// the state must then be stored before streaming starts, so that a restart
// neither forgets the new tables nor snapshots them twice.
func NewTables(ctx context.Context, mode snapshot.Mode, st *stream.State, stored bool, lists *stream.TableLists,
	history map[string]schemahist.Definition, src Source, logger *slog.Logger,
) (store bool, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	if stored {
		added, err := newlyCaptured(ctx, st.Lists, history, src)
		if err != nil {
			return false, err
		}
		p := st.Incremental
		if p != nil {
			added = slices.DeleteFunc(added, func(t snapshot.TableID) bool { return slices.Contains(p.Tables[p.Table:], t) })
		}
		if len(added) > 0 {
			switch mode {
			case snapshot.ModeInitial, snapshot.ModeWhenNeeded:
				logger.Info("incremental snapshot: tables newly captured by the include lists", "tables", added)
				if p == nil {
					p = &snapshot.Progress{}
				}
				p.Tables = append(p.Tables, added...)
				st.Incremental = p
			default:
				logger.Warn("tables newly captured by the include lists are not snapshotted with this snapshot-mode; their existing rows are missing until `capture snapshot --tables` is run",
					"tables", added, "snapshot_mode", string(mode))
			}
		}
	}
	if st.Lists == nil || *st.Lists != *lists {
		st.Lists, store = lists, true
	}
	return store, nil
}

// newlyCaptured returns the tables src captures now that the lists stored
// did not, leaving out those in the schema history.
func newlyCaptured(ctx context.Context, stored *stream.TableLists, history map[string]schemahist.Definition, src Source) ([]snapshot.TableID, error) {
	if stored == nil {
		return nil, nil
	}
	old, err := filter.New(filter.Lists{
		DatabaseInclude: stored.DatabaseInclude, DatabaseExclude: stored.DatabaseExclude,
		TableInclude: stored.TableInclude, TableExclude: stored.TableExclude,
	})
	if err != nil {
		return nil, fmt.Errorf("the table lists stored with the position: %w", err)
	}
	tables, err := src.Tables(ctx)
	if err != nil {
		return nil, err
	}
	var out []snapshot.TableID
	for _, t := range tables {
		if _, known := history[t.String()]; known || old.Table(t.DB, t.Table) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}
