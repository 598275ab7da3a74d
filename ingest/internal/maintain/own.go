package maintain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/commit"
	"github.com/binlake/binlake/ingest/internal/schemamap"
)

// ErrSharedLocation reports a table whose folders hold, or lie in,
// another table's: orphan removal would take the other table's files for
// orphans of its own, so it is refused.
var ErrSharedLocation = errors.New("maintain: the table shares its location with another table")

// Ours reports whether a table with these properties is one ingest
// writes: ingest sets schemamap.SourceProperty on every table it creates,
// and tables created by versions before that carry the Kafka offsets of
// their commits (commit.OffsetsKeyPrefix) in their properties. A table
// with neither is someone else's, or one ingest never committed to.
func Ours(props iceberg.Properties) bool {
	if props[schemamap.SourceProperty] != "" {
		return true
	}
	for k := range props {
		if strings.HasPrefix(k, commit.OffsetsKeyPrefix) {
			return true
		}
	}
	return false
}

// Tables lists the tables of the namespaces that ingest writes (Ours), in
// catalog order, and apart the ones it leaves alone.
func Tables(ctx context.Context, cat catalog.Catalog, namespaces []table.Identifier) (own, foreign []table.Identifier, err error) {
	for _, ns := range namespaces {
		for id, err := range cat.ListTables(ctx, ns) {
			if err != nil {
				return nil, nil, fmt.Errorf("listing the tables of namespace %v: %w", ns, err)
			}
			tbl, err := cat.LoadTable(ctx, id)
			if err != nil {
				return nil, nil, fmt.Errorf("loading table %v: %w", id, err)
			}
			if Ours(tbl.Properties()) {
				own = append(own, id)
			} else {
				foreign = append(foreign, id)
			}
		}
	}
	return own, foreign, nil
}

// Folders returns where the table writes its data files and its metadata:
// write.data.path and write.metadata.path, else its location's "data" and
// "metadata" folders. They are all orphan removal scans.
func Folders(md table.Metadata) (data, meta string) {
	loc := strings.TrimRight(md.Location(), "/")
	data, meta = loc+"/data", loc+"/metadata"
	if p := strings.TrimRight(md.Properties()[table.WriteDataPathKey], "/"); p != "" {
		data = p
	}
	if p := strings.TrimRight(md.Properties()[table.WriteMetadataPathKey], "/"); p != "" {
		meta = p
	}
	return data, meta
}

// sameScheme spells the S3 schemes alike, so that s3a://b/x and s3://b/x
// compare as the one folder they are.
func sameScheme(p string) string {
	for _, s := range []string{"s3a://", "s3n://"} {
		if strings.HasPrefix(p, s) {
			return "s3://" + p[len(s):]
		}
	}
	return p
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	path, dir = sameScheme(strings.TrimRight(path, "/")), sameScheme(strings.TrimRight(dir, "/"))
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// placed is where one table keeps its files.
type placed struct {
	ident                table.Identifier
	location, data, meta string
}

func placeOf(ident table.Identifier, md table.Metadata) placed {
	data, meta := Folders(md)
	return placed{ident: ident, location: md.Location(), data: data, meta: meta}
}

// overlap explains why orphan removal of t could take o's files, or
// returns "" when it cannot: t's location holds o's, or a folder t scans
// holds o's location or one of o's folders, or lies in one of o's folders.
func overlap(t, o placed) string {
	switch {
	case within(o.location, t.location):
		return fmt.Sprintf("its location %s holds table %v's location %s", t.location, o.ident, o.location)
	}
	for _, r := range []string{t.data, t.meta} {
		for _, x := range []string{o.location, o.data, o.meta} {
			if within(x, r) {
				return fmt.Sprintf("the folder %s it scans for orphans holds table %v's %s", r, o.ident, x)
			}
		}
		for _, x := range []string{o.data, o.meta} {
			if within(r, x) {
				return fmt.Sprintf("the folder %s it scans for orphans lies in table %v's folder %s", r, o.ident, x)
			}
		}
	}
	return ""
}

// neighbourTTL is how long the locations of a namespace's tables are
// reused before they are listed again: the check loads every table of the
// namespace, which a round over many tables should not do for each one.
const neighbourTTL = 10 * time.Minute

// neighbours caches the places of each namespace's tables.
type neighbours struct {
	mu   sync.Mutex
	byNS map[string]neighbourList
}

type neighbourList struct {
	at     time.Time
	tables []placed
}

// of lists where the tables of namespace ns keep their files.
func (n *neighbours) of(ctx context.Context, cat catalog.Catalog, ns table.Identifier) ([]placed, error) {
	key := strings.Join(ns, "\x00")
	n.mu.Lock()
	l, ok := n.byNS[key]
	n.mu.Unlock()
	if ok && time.Since(l.at) < neighbourTTL {
		return l.tables, nil
	}
	l = neighbourList{at: time.Now()}
	for id, err := range cat.ListTables(ctx, ns) {
		if err != nil {
			return nil, fmt.Errorf("listing the tables of namespace %v: %w", ns, err)
		}
		tbl, err := cat.LoadTable(ctx, id)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			continue // dropped since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("loading table %v: %w", id, err)
		}
		l.tables = append(l.tables, placeOf(id, tbl.Metadata()))
	}
	n.mu.Lock()
	if n.byNS == nil {
		n.byNS = map[string]neighbourList{}
	}
	n.byNS[key] = l
	n.mu.Unlock()
	return l.tables, nil
}

// alone returns ErrSharedLocation when orphan removal of tbl could take
// the files of another table of its namespace.
func (m *Maintainer) alone(ctx context.Context, ident table.Identifier, tbl *table.Table) error {
	me := placeOf(ident, tbl.Metadata())
	others, err := m.neighbours.of(ctx, m.cat, ident[:len(ident)-1])
	if err != nil {
		return err
	}
	for _, o := range others {
		if slices.Equal(o.ident, ident) {
			continue
		}
		if why := overlap(me, o); why != "" {
			return fmt.Errorf("%w: %s; it is not maintained (give it a location of its own, or leave out remove-orphans)", ErrSharedLocation, why)
		}
	}
	return nil
}

// referenced returns every file the table's metadata reaches: its metadata
// files (current and logged), statistics, and for every snapshot (of every
// branch and tag, expired or not yet) its manifest list, manifests, and
// data and delete files.
func referenced(ctx context.Context, tbl *table.Table) (map[string]struct{}, error) {
	md := tbl.Metadata()
	refs := map[string]struct{}{}
	add := func(p string) {
		if p != "" {
			refs[sameScheme(p)] = struct{}{}
		}
	}
	add(tbl.MetadataLocation())
	for e := range md.PreviousFiles() {
		add(e.MetadataFile)
	}
	for s := range md.Statistics() {
		add(s.StatisticsPath)
	}
	for s := range md.PartitionStatistics() {
		add(s.StatisticsPath)
	}
	snaps := md.Snapshots()
	if len(snaps) == 0 {
		return refs, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening the table's file system: %w", err)
	}
	seen := map[string]bool{}
	for _, s := range snaps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		add(s.ManifestList)
		mans, err := s.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("reading the manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, mf := range mans {
			if seen[mf.FilePath()] {
				continue
			}
			seen[mf.FilePath()] = true
			add(mf.FilePath())
			entries, err := mf.FetchEntries(fs, false)
			if err != nil {
				return nil, fmt.Errorf("reading manifest %s: %w", mf.FilePath(), err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	return refs, nil
}

// guard keeps of candidates those that lie in one of the folders and that
// no snapshot of the table references; it returns what it held back.
func guard(candidates []table.OrphanFile, folders []string, refs map[string]struct{}) (keep []table.OrphanFile, outside, live []string) {
	for _, c := range candidates {
		in := false
		for _, f := range folders {
			in = in || (within(c.Path, f) && sameScheme(strings.TrimRight(c.Path, "/")) != sameScheme(strings.TrimRight(f, "/")))
		}
		_, used := refs[sameScheme(c.Path)]
		switch {
		case !in:
			outside = append(outside, c.Path)
		case used:
			live = append(live, c.Path)
		default:
			keep = append(keep, c)
		}
	}
	return keep, outside, live
}
