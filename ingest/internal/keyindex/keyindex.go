// Package keyindex keeps, per Iceberg table, an index of every live row's
// primary key → (data file, row position), on local disk in a Pebble store,
// so that ingest can delete a row by position instead of by equality.
//
// Guarantees:
//   - The index is a cache, never the source of truth. It records the
//     snapshot it reflects; [Index.Sync] brings it to the table's current
//     snapshot whenever they differ (another writer, a compaction, a commit
//     of ours whose outcome was unknown): the keys of data files no longer
//     in the table are dropped and the key columns (only those) of the data
//     files added are read, skipping rows their position deletes or
//     deletion vectors remove.
//   - A missing, unreadable or half-updated index (a crash during a catch-up)
//     is rebuilt from the table, and so is one whose snapshot is no longer
//     an ancestor of the table's current snapshot (a rollback: rows it
//     saw deleted may be live again).
//   - When a key has rows in several live data files (older rows deleted
//     only by equality deletes), the row of the highest data sequence number
//     wins: it is the key's live row if the key is live. An entry can thus
//     point at a row already deleted (by an equality delete, or by a
//     position delete another writer added to a file already indexed);
//     deleting that row again by position is harmless.
//   - Memory is bounded by [Config.CacheBytes] (Pebble's block cache and
//     memtables) plus, per open table, one small record per live data file.
//
// One Store serves every table of a process; each table's entries live
// under its table UUID, so a renamed table keeps its index and a table
// dropped and created again under the same name gets a new one. The
// store's directory belongs to one process at a time (Pebble locks it)
// and holds nothing else: a corrupt store is moved aside whole.
package keyindex

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"
)

// ErrUnreadable reports table content the index cannot read (a missing
// column, a deletion vector).
var ErrUnreadable = errors.New("keyindex: unreadable table content")

// ErrInUse reports an index that is open, which Drop does not remove.
var ErrInUse = errors.New("keyindex: the table's index is in use")

// DefaultCacheBytes is the default of Config.CacheBytes.
const DefaultCacheBytes = 64 << 20

// Config configures a Store.
type Config struct {
	// Dir is the directory of the store; created when missing.
	Dir string
	// CacheBytes bounds the memory of the store: Pebble's block cache gets
	// half of it and its memtables the other half. Default
	// DefaultCacheBytes; at least 4 MiB.
	CacheBytes int64
	// Logger receives rebuild and catch-up logs; nil means slog.Default().
	Logger *slog.Logger
}

// Store is the on-disk index of every table of a process.
type Store struct {
	db    *pebble.DB
	log   *slog.Logger
	mu    sync.Mutex
	open  map[string]*Index
	close sync.Once
}

// Open opens (or creates) the store in cfg.Dir, a directory of the index's
// own. A store Pebble finds corrupt is moved aside (renamed
// <dir>.corrupt-<UTC time>, kept for inspection, never removed) and
// created empty: the tables rebuild it. Any other failure (the directory
// locked by another process) is an error.
func Open(cfg Config) (*Store, error) {
	if cfg.Dir == "" {
		return nil, errors.New("keyindex: no directory (state-dir)")
	}
	if cfg.CacheBytes == 0 {
		cfg.CacheBytes = DefaultCacheBytes
	}
	if cfg.CacheBytes < 4<<20 {
		return nil, fmt.Errorf("keyindex: cache of %d bytes is below 4 MiB", cfg.CacheBytes)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the index directory: %w", err)
	}
	db, err := openDB(cfg)
	if err != nil {
		if !pebble.IsCorruptionError(err) {
			// A lock held by another process, a permission, a full
			// disk: never touch what may be another process's store.
			return nil, fmt.Errorf("opening the key index in %s: %w (a state-dir serves one ingest process; remove the directory to have it rebuilt from the tables)", cfg.Dir, err)
		}
		aside := cfg.Dir + ".corrupt-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if err := os.Rename(cfg.Dir, aside); err != nil {
			return nil, fmt.Errorf("moving the corrupt key index %s aside: %w", cfg.Dir, err)
		}
		cfg.Logger.Warn("the key index is corrupt; moved it aside (remove it once inspected) and created an empty one, every table rebuilds its index from the table",
			"dir", cfg.Dir, "moved_to", aside, "error", err.Error())
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating the index directory: %w", err)
		}
		if db, err = openDB(cfg); err != nil {
			return nil, fmt.Errorf("creating the key index in %s: %w", cfg.Dir, err)
		}
	}
	return &Store{db: db, log: cfg.Logger, open: map[string]*Index{}}, nil
}

func openDB(cfg Config) (*pebble.DB, error) {
	cache := pebble.NewCache(cfg.CacheBytes / 2)
	defer cache.Unref()
	mem := uint64(cfg.CacheBytes / 4)
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                mem,
		MemTableStopWritesThreshold: 2,
		Logger:                      pebbleLogger{cfg.Logger},
	}
	return pebble.Open(cfg.Dir, opts)
}

// Close closes the store; the Indexes it opened are unusable after.
// Closing twice is a no-op.
func (s *Store) Close() error {
	var err error
	s.close.Do(func() { err = s.db.Close() })
	return err
}

// Table returns the index of the table with UUID uuid, opening it on first
// use. The same Index is returned for the same uuid; it is meant for the
// one goroutine that commits to the table. name is the table's identifier
// (namespace levels and name) as the caller loaded it: it is recorded with
// the index, for [Store.Prune].
func (s *Store) Table(uuid string, name []string) (*Index, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.open[uuid]; ok {
		x.setName(name)
		return x, nil
	}
	// The prefix is the UUID's 16 bytes (short keys keep the store and
	// its batches small) and a separator, so the table's range ends below
	// uuid + "0".
	id, err := parseUUID(uuid)
	if err != nil {
		return nil, fmt.Errorf("keyindex: table uuid %q: %w", uuid, err)
	}
	x := &Index{db: s.db, log: s.log.With("table_uuid", uuid), prefix: append(id, '/')}
	if err := x.loadMeta(); err != nil {
		return nil, err
	}
	if err := x.setName(name); err != nil {
		return nil, err
	}
	s.open[uuid] = x
	return x, nil
}

// setName records the table's identifier with the index (written at once
// when the index has entries, else with its first).
func (x *Index) setName(name []string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if slices.Equal(x.meta.Name, name) {
		return nil
	}
	x.meta.Name = slices.Clone(name)
	if x.meta.Snapshot == 0 && len(x.files) == 0 {
		return nil
	}
	b := x.db.NewBatch()
	defer b.Close()
	if err := x.putMeta(b); err != nil {
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("writing the key index: %w", err)
	}
	return nil
}

// Indexed is a table the store holds an index of.
type Indexed struct {
	UUID string
	// Name is the table's identifier when the index was last opened (nil
	// for an index written before names were recorded).
	Name []string
}

// Tables lists the tables the store holds indexes of.
func (s *Store) Tables() ([]Indexed, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("reading the key index: %w", err)
	}
	defer it.Close()
	var out []Indexed
	for valid := it.First(); valid; {
		k := it.Key()
		if len(k) < 17 || k[16] != '/' {
			return out, fmt.Errorf("%w: key index entry %x outside any table", ErrUnreadable, k)
		}
		id := slices.Clone(k[:16])
		u, err := uuid.FromBytes(id)
		if err != nil {
			return out, err
		}
		t := Indexed{UUID: u.String()}
		if v, closer, err := s.db.Get(append(slices.Clip(id), '/', spaceMeta)); err == nil {
			var m meta
			if json.Unmarshal(v, &m) == nil {
				t.Name = m.Name
			}
			closer.Close()
		}
		out = append(out, t)
		valid = it.SeekGE(append(id, '/'+1))
	}
	return out, it.Error()
}

// Drop removes the index of the table with UUID id, which must not be
// open.
func (s *Store) Drop(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, open := s.open[id]; open {
		return fmt.Errorf("%w: table %s", ErrInUse, id)
	}
	b, err := parseUUID(id)
	if err != nil {
		return fmt.Errorf("keyindex: table uuid %q: %w", id, err)
	}
	start, end := append(slices.Clip(b), '/'), append(slices.Clip(b), '/'+1)
	if err := s.db.DeleteRange(start, end, pebble.Sync); err != nil {
		return fmt.Errorf("removing the key index of table %s: %w", id, err)
	}
	// Reclaim the space now rather than at some later compaction.
	if err := s.db.Compact(context.Background(), start, end, false); err != nil {
		s.log.Warn("compacting the key index after removing a table", "table_uuid", id, "error", err.Error())
	}
	return nil
}

// Prune removes the indexes of tables that are gone: for each index not in
// use that records its table's name, current says which UUID the table of
// that name has now (found false: no such table). An index whose name has
// another table (dropped and created again), or none, is removed; errors
// of current (a catalog that does not answer) keep the index. It returns
// the number of indexes removed.
func (s *Store) Prune(ctx context.Context, current func(ctx context.Context, name []string) (uuid string, found bool, err error)) (int, error) {
	tables, err := s.Tables()
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, t := range tables {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if len(t.Name) == 0 {
			continue
		}
		s.mu.Lock()
		_, open := s.open[t.UUID]
		s.mu.Unlock()
		if open {
			continue
		}
		now, found, err := current(ctx, t.Name)
		if err != nil {
			s.log.Debug("keeping the key index of a table the catalog did not answer for", "table", t.Name, "table_uuid", t.UUID, "error", err.Error())
			continue
		}
		if found && now == t.UUID {
			continue
		}
		if err := s.Drop(t.UUID); errors.Is(err, ErrInUse) {
			continue // opened meanwhile (a rename): its committer owns it now
		} else if err != nil {
			return removed, err
		}
		removed++
		s.log.Info("removed the key index of a table that no longer exists under its name", "table", t.Name, "table_uuid", t.UUID, "table_now", map[bool]string{true: now, false: "none"}[found])
	}
	return removed, nil
}

// parseUUID returns the 16 bytes of a UUID in its text form.
func parseUUID(s string) ([]byte, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return nil, err
	}
	return u[:], nil
}

// Key layout, under the table's prefix "<uuid:16>/":
//
//	m            meta (JSON)
//	f<id:8>      data file id → uvarint data sequence number + path
//	k<key>       encoded key → uvarint file id + uvarint row position
const (
	spaceMeta = 'm'
	spaceFile = 'f'
	spaceKey  = 'k'
)

type meta struct {
	// Snapshot is the snapshot the index reflects; 0: no snapshot.
	Snapshot int64 `json:"snapshot"`
	// Dirty is set during a catch-up: a store found dirty is rebuilt.
	Dirty    bool   `json:"dirty,omitempty"`
	NextFile uint64 `json:"next_file"`
	KeyIDs   []int  `json:"key_ids"`
	// Name is the table's identifier when the index was last opened.
	Name []string `json:"name,omitempty"`
}

type fileRec struct {
	id   uint64
	path string
	seq  int64
	df   iceberg.DataFile // nil until the table's manifests are read
	// live is the number of key entries naming the file, when counted:
	// for a file this process added (Apply, ApplyRewrite), whose removed
	// entries Apply is told of. Never less than the entries there are (an
	// entry overwritten unannounced, by a catch-up, leaves it higher).
	live    int64
	counted bool
}

// Index is one table's key index. Its methods are serialized (a table is
// committed to by one goroutine, but a Committer rebuilt during a rename
// may briefly overlap its predecessor).
type Index struct {
	mu     sync.Mutex
	db     *pebble.DB
	log    *slog.Logger
	prefix []byte
	meta   meta
	// files are the data files the index holds keys of; loaded is set once
	// they are matched against the table's manifests (their DataFiles
	// known).
	files  map[uint64]*fileRec
	byPath map[string]*fileRec
	// dvs are the table's live deletion vectors by data file path.
	dvs    map[string]iceberg.DataFile
	loaded bool
}

// Loc is where a key's row is: the data file (as in the table's manifests:
// its spec id and partition) and the row's position in it.
type Loc struct {
	File iceberg.DataFile
	Pos  int64
}

func (x *Index) key(space byte, rest ...[]byte) []byte {
	k := append(slices.Clip(x.prefix), space)
	for _, r := range rest {
		k = append(k, r...)
	}
	return k
}

func fileID(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// loadMeta reads the meta record and the file records; a table whose
// index is unreadable or was left half-updated is wiped (rebuilt by the
// next Sync).
func (x *Index) loadMeta() error {
	x.files, x.byPath, x.dvs, x.loaded = map[uint64]*fileRec{}, map[string]*fileRec{}, map[string]iceberg.DataFile{}, false
	v, closer, err := x.db.Get(x.key(spaceMeta))
	if errors.Is(err, pebble.ErrNotFound) {
		x.meta = meta{NextFile: 1}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the key index: %w", err)
	}
	var m meta
	jerr := json.Unmarshal(v, &m)
	closer.Close()
	if jerr != nil || m.Dirty {
		x.log.Warn("the key index of the table is incomplete or unreadable; rebuilding it from the table", "error", jerr)
		return x.wipe()
	}
	x.meta = m
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: x.key(spaceFile), UpperBound: x.key(spaceFile + 1)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		id := binary.BigEndian.Uint64(k[len(x.prefix)+1:])
		seq, n := binary.Uvarint(v)
		if n <= 0 {
			x.log.Warn("the key index of the table has an unreadable file record; rebuilding it from the table")
			return x.wipe()
		}
		f := &fileRec{id: id, seq: int64(seq), path: string(v[n:])}
		x.files[id], x.byPath[f.path] = f, f
	}
	return it.Error()
}

// wipe removes every entry of the table.
func (x *Index) wipe() error {
	end := append(slices.Clip(x.prefix[:len(x.prefix)-1]), x.prefix[len(x.prefix)-1]+1)
	if err := x.db.DeleteRange(x.prefix, end, pebble.Sync); err != nil {
		return fmt.Errorf("clearing the key index: %w", err)
	}
	x.meta = meta{NextFile: 1, Name: x.meta.Name}
	x.files, x.byPath, x.dvs, x.loaded = map[uint64]*fileRec{}, map[string]*fileRec{}, map[string]iceberg.DataFile{}, false
	return nil
}

func (x *Index) putMeta(b *pebble.Batch) error {
	v, err := json.Marshal(x.meta)
	if err != nil {
		return err
	}
	return b.Set(x.key(spaceMeta), v, nil)
}

// Snapshot returns the snapshot the index reflects (0: none, or not yet
// synced).
func (x *Index) Snapshot() int64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.meta.Snapshot
}

// Lookup returns where the row of the encoded key is, if the key has a
// live row. The index must be synced with the table being written.
func (x *Index) Lookup(key []byte) (Loc, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	v, closer, err := x.db.Get(x.key(spaceKey, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return Loc{}, false, nil
	}
	if err != nil {
		return Loc{}, false, fmt.Errorf("reading the key index: %w", err)
	}
	defer closer.Close()
	loc, err := x.loc(v)
	return loc, err == nil, err
}

// loc decodes a key entry: the data file (which the index must hold) and
// the row's position in it.
func (x *Index) loc(v []byte) (Loc, error) {
	id, n := binary.Uvarint(v)
	pos, m := binary.Uvarint(v[max(n, 0):])
	if n <= 0 || m <= 0 {
		return Loc{}, fmt.Errorf("%w: key index entry of %d bytes", ErrUnreadable, len(v))
	}
	f := x.files[id]
	if f == nil || f.df == nil {
		return Loc{}, fmt.Errorf("%w: key index entry names data file %d, which the index does not hold (sync first)", ErrUnreadable, id)
	}
	return Loc{File: f.df, Pos: int64(pos)}, nil
}

// LookupAll looks up many encoded keys at once: found[i] says whether
// keys[i] has a live row, at locs[i]. It seeks one iterator through the
// keys in order, which is much cheaper than a Lookup per key.
func (x *Index) LookupAll(keys [][]byte) (locs []Loc, found []bool, err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	locs, found = make([]Loc, len(keys)), make([]bool, len(keys))
	if len(keys) == 0 {
		return locs, found, nil
	}
	order := identity(len(keys))
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	err = x.eachEntry(keys, order, func(i int, v []byte) error {
		loc, err := x.loc(v)
		locs[i], found[i] = loc, err == nil
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return locs, found, nil
}

// eachEntry calls fn with the entry of each of keys[i] the index holds,
// taking i from order, which must visit the keys in ascending order: one
// iterator seeks forward through them (a Get per key would seek from the
// top of every level).
func (x *Index) eachEntry(keys [][]byte, order []int, fn func(i int, v []byte) error) (err error) {
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: x.key(spaceKey), UpperBound: x.key(spaceKey + 1)})
	if err != nil {
		return fmt.Errorf("reading the key index: %w", err)
	}
	defer func() {
		if cerr := it.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("reading the key index: %w", cerr)
		}
	}()
	buf := x.key(spaceKey)
	n := len(buf)
	for _, i := range order {
		buf = append(buf[:n], keys[i]...)
		if !it.SeekGE(buf) || !bytes.Equal(it.Key(), buf) {
			continue
		}
		if err := fn(i, it.Value()); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("reading the key index: %w", err)
	}
	return nil
}

// DV returns the live deletion vector of the data file at path, if it has
// one (format v3 tables): a new vector for the file must include its
// positions and replace it.
func (x *Index) DV(path string) (iceberg.DataFile, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	d, ok := x.dvs[path]
	return d, ok
}

func entry(id uint64, pos int64) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(nil, id), uint64(pos))
}

// Added is a data file a commit added, with the encoded key of each of its
// rows by position.
type Added struct {
	File iceberg.DataFile
	Keys [][]byte
}

// Apply records a commit of ours that landed as snapshot snap on top of
// the snapshot the index reflects: the keys deleted (their old rows were
// deleted by position; removedFrom counts, by data file path, the entries
// of those keys the commit found there), the data files added and the
// deletion vectors added (each replacing its data file's previous one). When snap's parent is not
// the snapshot the index reflects, Apply records nothing and the next Sync
// catches up from the table.
func (x *Index) Apply(snap *table.Snapshot, deleted [][]byte, removedFrom map[string]int, added []Added, dvs []iceberg.DataFile) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.follows(snap) {
		return nil
	}
	b := x.db.NewBatch()
	defer b.Close()
	set := make(map[string]struct{})
	for _, a := range added {
		for _, k := range a.Keys {
			set[string(k)] = struct{}{}
		}
	}
	for _, k := range deleted {
		if _, again := set[string(k)]; again {
			continue // overwritten below
		}
		if err := b.Delete(x.key(spaceKey, k), nil); err != nil {
			return err
		}
	}
	recs, err := x.commitAdded(b, snap, added)
	if err != nil {
		return err
	}
	for p, n := range removedFrom {
		if f := x.byPath[p]; f != nil && f.counted {
			f.live = max(f.live-int64(n), 0)
		}
	}
	for _, f := range recs {
		x.files[f.id], x.byPath[f.path] = f, f
	}
	for _, d := range dvs {
		if ref := d.ReferencedDataFile(); ref != nil {
			x.dvs[*ref] = d
		}
	}
	return nil
}

// ApplyRewrite records a rewrite of ours that landed as snapshot snap on
// top of the snapshot the index reflects: the data files removed (with
// the encoded keys of all their rows, dead ones included, in
// removedKeys), and the data files added with their rows' keys (the
// removed files' live rows, moved). A key of a removed file that the
// rewrite did not move keeps no entry there; so does the removed files'
// deletion vectors. When snap's parent is not the snapshot the index
// reflects, ApplyRewrite records nothing and the next Sync catches up
// from the table.
func (x *Index) ApplyRewrite(snap *table.Snapshot, removed []string, removedKeys [][]byte, added []Added) (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.follows(snap) {
		return false, nil
	}
	gone := map[uint64]*fileRec{}
	for _, p := range removed {
		if f := x.byPath[p]; f != nil {
			gone[f.id] = f
		}
	}
	moved := map[string]struct{}{}
	for _, a := range added {
		for _, k := range a.Keys {
			moved[string(k)] = struct{}{}
		}
	}
	// The removed files' keys that were not moved: those still naming a
	// removed file lose their entry.
	var stay [][]byte
	for _, k := range removedKeys {
		if _, ok := moved[string(k)]; !ok {
			stay = append(stay, k)
		}
	}
	slices.SortFunc(stay, bytes.Compare)
	b := x.db.NewBatch()
	defer b.Close()
	if len(gone) > 0 {
		err := x.eachEntry(stay, identity(len(stay)), func(i int, v []byte) error {
			if id, _ := binary.Uvarint(v); gone[id] != nil {
				return b.Delete(x.key(spaceKey, stay[i]), nil)
			}
			return nil
		})
		if err != nil {
			return false, err
		}
	}
	for id := range gone {
		if err := b.Delete(x.key(spaceFile, fileID(id)), nil); err != nil {
			return false, err
		}
	}
	recs, err := x.commitAdded(b, snap, added)
	if err != nil {
		return false, err
	}
	for id, f := range gone {
		delete(x.files, id)
		delete(x.byPath, f.path)
		delete(x.dvs, f.path)
	}
	for _, f := range recs {
		x.files[f.id], x.byPath[f.path] = f, f
	}
	return true, nil
}

// follows reports whether snap is a commit on top of the snapshot the
// index reflects (else the next Sync catches up from the table).
func (x *Index) follows(snap *table.Snapshot) bool {
	if snap == nil || !x.loaded {
		return false
	}
	var parent int64
	if snap.ParentSnapshotID != nil {
		parent = *snap.ParentSnapshotID
	}
	return parent == x.meta.Snapshot
}

// commitAdded adds to b the records of the data files added by snap and
// an entry for each of their rows' keys, and commits b with the index's
// meta moved to snap; the files' records are returned, counted (one entry
// per row), for the caller to hold once it has updated the rest. On an
// error the meta is left as it was.
func (x *Index) commitAdded(b *pebble.Batch, snap *table.Snapshot, added []Added) ([]*fileRec, error) {
	var recs []*fileRec
	next := x.meta.NextFile
	for _, a := range added {
		f := &fileRec{id: next, path: a.File.FilePath(), seq: snap.SequenceNumber, df: a.File, live: int64(len(a.Keys)), counted: true}
		next++
		if err := b.Set(x.key(spaceFile, fileID(f.id)), fileValue(f), nil); err != nil {
			return nil, err
		}
		for pos, k := range a.Keys {
			if err := b.Set(x.key(spaceKey, k), entry(f.id, int64(pos)), nil); err != nil {
				return nil, err
			}
		}
		recs = append(recs, f)
	}
	prev := x.meta
	x.meta.NextFile, x.meta.Snapshot = next, snap.SnapshotID
	if err := x.putMeta(b); err != nil {
		x.meta = prev
		return nil, err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		x.meta = prev
		return nil, fmt.Errorf("writing the key index: %w", err)
	}
	return recs, nil
}

// identity is the order 0, 1, …, n-1.
func identity(n int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	return order
}

// Unnamed reports whether no key entry of the index names the data file
// at path, as counted since this process added the file (false when not
// counted, or the index does not hold it). The file held one entry per
// row when added (Apply and ApplyRewrite are given every row's key), and
// an entry goes (removedFrom) only with a landed commit's position delete
// of its row: an unnamed file has every row deleted, and a rewrite that
// removes it need not read its keys to drop their entries.
func (x *Index) Unnamed(path string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	f := x.byPath[path]
	return f != nil && f.counted && f.live == 0
}

func fileValue(f *fileRec) []byte {
	return append(binary.AppendUvarint(nil, uint64(f.seq)), f.path...)
}

// Sync brings the index to tbl's current snapshot; see the package
// documentation. It reads the table's manifests on first use and whenever
// the snapshot differs from the one the index reflects.
func (x *Index) Sync(ctx context.Context, tbl *table.Table) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	var cur int64
	if s := tbl.CurrentSnapshot(); s != nil {
		cur = s.SnapshotID
	}
	keyIDs := tbl.Schema().IdentifierFieldIDs
	if len(keyIDs) == 0 {
		return fmt.Errorf("keyindex: table %v has no identifier fields", tbl.Identifier())
	}
	if x.loaded && x.meta.Snapshot == cur && slices.Equal(x.meta.KeyIDs, keyIDs) {
		return nil
	}
	if !slices.Equal(x.meta.KeyIDs, keyIDs) && len(x.files) > 0 {
		x.log.Info("the table's key columns changed; rebuilding its key index")
		if err := x.wipe(); err != nil {
			return err
		}
	}
	if x.meta.Snapshot != 0 && x.meta.Snapshot != cur && !descends(tbl, x.meta.Snapshot) {
		// A rollback, or a history the index cannot follow (expired):
		// rows the index forgot (deleted in snapshots no longer in the
		// table's history) may be live again. Only a rebuild is safe.
		x.log.Info("the table's current snapshot does not descend from the one the key index reflects (a rollback, or expired history); rebuilding it",
			"snapshot_id", cur, "index_snapshot_id", x.meta.Snapshot)
		if err := x.wipe(); err != nil {
			return err
		}
	}
	err := x.catchUp(ctx, tbl, cur, keyIDs)
	if err != nil {
		// Whatever was half done is redone from scratch on the next Sync.
		x.loaded = false
		return fmt.Errorf("catching the key index of %v up with snapshot %d: %w", tbl.Identifier(), cur, err)
	}
	return nil
}

// descends reports whether tbl's current snapshot has snapshot id among
// its retained ancestors.
func descends(tbl *table.Table, id int64) bool {
	s := tbl.CurrentSnapshot()
	for n := 0; s != nil && n < 1_000_000; n++ {
		if s.SnapshotID == id {
			return true
		}
		if s.ParentSnapshotID == nil {
			return false
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}

// LiveDVs returns the deletion vectors of tbl's current snapshot by the
// data file each applies to. It reads manifests only.
func LiveDVs(tbl *table.Table) (map[string]iceberg.DataFile, error) {
	_, _, dvs, err := liveFiles(tbl)
	return dvs, err
}

type liveFile struct {
	df  iceberg.DataFile
	seq int64
}

// LiveFiles returns the data files of tbl's current snapshot by path. It
// reads manifests only.
func LiveFiles(tbl *table.Table) (map[string]iceberg.DataFile, error) {
	live, _, _, err := liveFiles(tbl)
	if err != nil {
		return nil, err
	}
	out := make(map[string]iceberg.DataFile, len(live))
	for p, f := range live {
		out[p] = f.df
	}
	return out, nil
}

// liveFiles reads tbl's current manifests: its data files by path, its
// Parquet position-delete files, and its deletion vectors by the data file
// they apply to.
func liveFiles(tbl *table.Table) (map[string]liveFile, []iceberg.DataFile, map[string]iceberg.DataFile, error) {
	live, dvs := map[string]liveFile{}, map[string]iceberg.DataFile{}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return live, nil, dvs, nil
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		return nil, nil, nil, err
	}
	mfs, err := snap.Manifests(fsys)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading the manifest list: %w", err)
	}
	var dels []iceberg.DataFile
	for _, mf := range mfs {
		entries, err := mf.FetchEntries(fsys, true)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reading manifest %s: %w", mf.FilePath(), err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch df.ContentType() {
			case iceberg.EntryContentData:
				live[df.FilePath()] = liveFile{df: df, seq: e.SequenceNum()}
			case iceberg.EntryContentPosDeletes:
				if df.FileFormat() == iceberg.PuffinFile {
					ref := df.ReferencedDataFile()
					if ref == nil {
						return nil, nil, nil, fmt.Errorf("%w: deletion vector %s names no data file", ErrUnreadable, df.FilePath())
					}
					dvs[*ref] = df
					continue
				}
				dels = append(dels, df)
			case iceberg.EntryContentEqDeletes:
				// Resolved by sequence number: see the package doc.
			}
		}
	}
	return live, dels, dvs, nil
}

// flushEvery bounds the entries of one write batch.
const flushEvery = 50_000

func (x *Index) catchUp(ctx context.Context, tbl *table.Table, cur int64, keyIDs []int) error {
	live, dels, dvs, err := liveFiles(tbl)
	if err != nil {
		return err
	}
	x.dvs = dvs
	var removed []*fileRec
	for _, f := range x.files {
		if lf, ok := live[f.path]; ok {
			f.df = lf.df
		} else {
			removed = append(removed, f)
		}
	}
	var added []liveFile
	for p, lf := range live {
		if _, ok := x.byPath[p]; !ok {
			added = append(added, lf)
		}
	}
	if len(removed) == 0 && len(added) == 0 && x.meta.Snapshot == cur && slices.Equal(x.meta.KeyIDs, keyIDs) {
		x.loaded = true
		return nil
	}
	x.log.Info("catching the key index up with the table", "snapshot_id", cur, "from_snapshot_id", x.meta.Snapshot,
		"files_removed", len(removed), "files_added", len(added))

	// Mark the index dirty: a crash from here on leaves a half-updated
	// index, which the next start rebuilds.
	x.meta.Dirty, x.meta.KeyIDs = true, slices.Clone(keyIDs)
	if err := x.commit(func(b *pebble.Batch) error { return nil }); err != nil {
		return err
	}

	if len(removed) > 0 {
		if err := x.dropFiles(removed); err != nil {
			return err
		}
	}
	if len(added) > 0 {
		if err := x.addFiles(ctx, tbl, added, dels, dvs); err != nil {
			return err
		}
	}
	x.meta.Dirty, x.meta.Snapshot = false, cur
	if err := x.commit(func(b *pebble.Batch) error { return nil }); err != nil {
		return err
	}
	x.loaded = true
	return nil
}

// commit writes the meta record, after fn's writes, in one synced batch.
func (x *Index) commit(fn func(b *pebble.Batch) error) error {
	b := x.db.NewBatch()
	defer b.Close()
	if err := fn(b); err != nil {
		return err
	}
	if err := x.putMeta(b); err != nil {
		return err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("writing the key index: %w", err)
	}
	return nil
}

// dropFiles removes the keys and records of data files no longer in the
// table, with one pass over the table's keys.
func (x *Index) dropFiles(removed []*fileRec) error {
	gone := map[uint64]bool{}
	for _, f := range removed {
		gone[f.id] = true
	}
	it, err := x.db.NewIter(&pebble.IterOptions{LowerBound: x.key(spaceKey), UpperBound: x.key(spaceKey + 1)})
	if err != nil {
		return err
	}
	defer it.Close()
	b := x.db.NewBatch()
	defer func() { b.Close() }()
	for it.First(); it.Valid(); it.Next() {
		id, n := binary.Uvarint(it.Value())
		if n > 0 && !gone[id] {
			continue
		}
		if err := b.Delete(slices.Clone(it.Key()), nil); err != nil {
			return err
		}
		if b.Count() >= flushEvery {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = x.db.NewBatch()
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	for _, f := range removed {
		if err := b.Delete(x.key(spaceFile, fileID(f.id)), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return err
	}
	for _, f := range removed {
		delete(x.files, f.id)
		delete(x.byPath, f.path)
	}
	return nil
}

// addFiles reads the key columns of the added data files, in data sequence
// order, and indexes their rows that no position delete removes.
func (x *Index) addFiles(ctx context.Context, tbl *table.Table, added []liveFile, dels []iceberg.DataFile, dvs map[string]iceberg.DataFile) error {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	want := make(map[string]bool, len(added))
	for _, a := range added {
		want[a.df.FilePath()] = true
	}
	deleted := map[string]map[int64]struct{}{}
	for _, d := range dels {
		if ref := d.ReferencedDataFile(); ref != nil && !want[*ref] {
			continue
		}
		if err := readPositionDeletes(ctx, fsys, d, func(p string) bool { return want[p] }, deleted); err != nil {
			return err
		}
	}
	for p, d := range dvs {
		if !want[p] {
			continue
		}
		bm, err := dv.ReadDV(fsys, d)
		if err != nil {
			return fmt.Errorf("reading deletion vector %s: %w", d.FilePath(), err)
		}
		for pos := range bm.Positions() {
			add(deleted, func(string) bool { return true }, p, int64(pos))
		}
	}
	slices.SortStableFunc(added, func(a, b liveFile) int {
		if a.seq != b.seq {
			return int(min(max(a.seq-b.seq, -1), 1))
		}
		return 0
	})
	keyIDs := x.meta.KeyIDs
	for _, a := range added {
		keys, err := ReadKeys(ctx, fsys, a.df, keyIDs)
		if err != nil {
			return err
		}
		f := &fileRec{id: x.meta.NextFile, path: a.df.FilePath(), seq: a.seq, df: a.df}
		x.meta.NextFile++
		gone := deleted[f.path]
		b := x.db.NewIndexedBatch()
		for pos, k := range keys {
			if _, dead := gone[int64(pos)]; dead {
				continue
			}
			ik := x.key(spaceKey, k)
			if v, closer, err := b.Get(ik); err == nil {
				id, _ := binary.Uvarint(v)
				closer.Close()
				if old := x.files[id]; old != nil && old.seq > f.seq {
					continue // a newer row of the key
				}
			} else if !errors.Is(err, pebble.ErrNotFound) {
				b.Close()
				return err
			}
			if err := b.Set(ik, entry(f.id, int64(pos)), nil); err != nil {
				b.Close()
				return err
			}
			if b.Count() >= flushEvery {
				if err := b.Commit(pebble.NoSync); err != nil {
					b.Close()
					return err
				}
				b.Close()
				b = x.db.NewIndexedBatch()
			}
		}
		// The file record goes last: a file is held once all its keys are.
		if err := b.Set(x.key(spaceFile, fileID(f.id)), fileValue(f), nil); err != nil {
			b.Close()
			return err
		}
		err = b.Commit(pebble.NoSync)
		b.Close()
		if err != nil {
			return err
		}
		x.files[f.id], x.byPath[f.path] = f, f
	}
	return nil
}

// pebbleLogger routes Pebble's logs to slog.
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.log.Warn("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf is called by Pebble on an invariant violation, after which it
// must not continue: it logs and defers to Pebble's default (exit).
func (l pebbleLogger) Fatalf(format string, args ...any) {
	l.log.Error("pebble: " + fmt.Sprintf(format, args...))
	pebble.DefaultLogger.Fatalf(format, args...)
}

// pebbleFile matches the names of the files Pebble keeps in a store's
// directory (and only those: Adopt moves nothing else).
var pebbleFile = regexp.MustCompile(`^(LOCK|CURRENT|(MANIFEST|OPTIONS)-\d+|(CURRENT|temporary)\.\d+\.dbtmp|\d+(-\d+)?\.(sst|blob|log)|marker\.[a-z-]+\.\d+\.[A-Za-z0-9-]+)$`)

// holdsStore reports whether dir holds a Pebble store's files.
func holdsStore(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	options, current := false, false
	for _, e := range entries {
		n := e.Name()
		options = options || strings.HasPrefix(n, "OPTIONS-") && pebbleFile.MatchString(n)
		current = current || n == "CURRENT" || strings.HasPrefix(n, "marker.manifest.")
	}
	return options && current, nil
}

// Adopt moves a store that an earlier version kept directly in dir (a
// state-dir, which may hold files that are not the store's) into the
// directory into, where Open expects it: Pebble's files only, by name,
// each renamed. It does nothing when dir holds no store, and leaves dir
// as it is, with a warning, when into holds a store already. A store in
// use by another process is an error (ErrInUse). Should a rename fail
// half-way, Open finds the store in into corrupt, moves it aside and the
// tables rebuild it.
func Adopt(dir, into string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.Default()
	}
	found, err := holdsStore(dir)
	if err != nil || !found {
		return err
	}
	if there, err := holdsStore(into); err != nil || there {
		if there {
			logger.Warn("a key index of an earlier version is in the state-dir beside the one in use; remove its files (LOCK, CURRENT, MANIFEST-*, OPTIONS-*, marker.*, *.sst, *.log) from the state-dir",
				"dir", dir, "index", into)
		}
		return err
	}
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return fmt.Errorf("%w: the key index in %s is locked (another ingest process?): %w", ErrInUse, dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		_ = lock.Close()
		return err
	}
	if err := os.MkdirAll(into, 0o755); err != nil {
		_ = lock.Close()
		return fmt.Errorf("creating the index directory: %w", err)
	}
	var moved []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" || !pebbleFile.MatchString(e.Name()) {
			continue
		}
		if err := os.Rename(filepath.Join(dir, e.Name()), filepath.Join(into, e.Name())); err != nil {
			_ = lock.Close()
			return fmt.Errorf("moving the key index from %s into %s (moved %d files): %w", dir, into, len(moved), err)
		}
		moved = append(moved, e.Name())
	}
	if err := lock.Close(); err != nil {
		return fmt.Errorf("unlocking %s: %w", dir, err)
	}
	if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Warn("removing the old key index's lock file", "file", filepath.Join(dir, "LOCK"), "error", err.Error())
	}
	logger.Info("moved the key index an earlier version kept at the state-dir's root into its own directory", "from", dir, "to", into, "files", len(moved))
	return nil
}
