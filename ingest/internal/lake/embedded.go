package lake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// The embedded catalog is what ingest uses without catalog-uri: iceberg-go's
// SQL catalog on a SQLite file and a warehouse on the local filesystem, both
// in the state directory. It is for trying ingest, one node and tests: no
// other host can reach it, and S3 Tables is always a REST catalog.
//
// Layout of a state directory that holds it (the key index moves into a
// directory of its own, so that removing a corrupt index can never remove
// the catalog or the tables):
//
//	<state-dir>/catalog.db   the SQLite catalog (with -wal and -shm beside it)
//	<state-dir>/warehouse/   the tables' data and metadata (unless warehouse names another directory)
//	<state-dir>/keyindex/    the key index of delete-mode auto, position and dv
const (
	embeddedCatalogFile  = "catalog.db"
	embeddedWarehouseDir = "warehouse"
	embeddedIndexDir     = "keyindex"
	// embeddedCatalogName is the catalog_name of every row the SQL catalog
	// writes: fixed, so that a changed catalog-name (a name in logs) does
	// not hide the tables.
	embeddedCatalogName = "binlake"
	// sqliteBusyTimeoutMS is how long a statement waits for the lock of
	// another connection or process (ingest status, ingest maintain)
	// before it fails with SQLITE_BUSY.
	sqliteBusyTimeoutMS = 10_000
)

// Embedded reports whether the settings name no REST catalog, so that the
// embedded catalog is used.
func (c *CatalogConfig) Embedded() bool { return c.CatalogURI == "" }

// validateEmbedded checks the settings of the embedded catalog: a kept
// state-dir (a temporary one would lose the catalog at exit), a local
// warehouse, and none of the REST catalog's settings, which it would
// silently ignore.
func (c *CatalogConfig) validateEmbedded() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if strings.TrimSpace(c.StateDir) == "" {
		bad("no catalog: set catalog-uri (INGEST_CATALOG_URI) to an Iceberg REST catalog, " +
			"or state-dir (INGEST_STATE_DIR) to a kept directory for the embedded catalog (SQLite <state-dir>/catalog.db, tables in <state-dir>/warehouse)")
	}
	if c.Warehouse != "" {
		if _, err := localWarehouse(c.Warehouse); err != nil {
			bad("warehouse: %v", err)
		}
	}
	if c.SigV4 {
		bad("sigv4 signs the requests of a REST catalog: set catalog-uri, or unset sigv4 to use the embedded catalog")
	}
	if c.CatalogCredential != "" || c.CatalogToken != "" {
		bad("INGEST_CATALOG_CREDENTIAL and INGEST_CATALOG_TOKEN are for a REST catalog: set catalog-uri, or unset them to use the embedded catalog")
	}
	return errs
}

// localWarehouse returns the file:// location of a warehouse given as a
// local path (made absolute) or a file:// URI; any other location is
// refused.
func localWarehouse(w string) (string, error) {
	path := w
	if u, err := url.Parse(w); err == nil && u.Scheme != "" {
		if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return "", fmt.Errorf("%q is not a local directory: the embedded catalog (no catalog-uri) keeps its tables on the local filesystem; "+
				"set catalog-uri for a catalog on S3 or S3 Tables", w)
		}
		path = u.Path
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%q: %w", w, err)
	}
	return fileURI(abs), nil
}

// fileURI is the file:// URI of an absolute path.
func fileURI(abs string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
}

// embeddedPaths are the absolute locations of the embedded catalog of a
// state directory.
type embeddedPaths struct {
	CatalogFile string // the SQLite file
	Warehouse   string // file:// location of the warehouse
}

func (c *CatalogConfig) embeddedPaths() (embeddedPaths, error) {
	dir, err := filepath.Abs(c.StateDir)
	if err != nil {
		return embeddedPaths{}, fmt.Errorf("state-dir %q: %w", c.StateDir, err)
	}
	p := embeddedPaths{CatalogFile: filepath.Join(dir, embeddedCatalogFile), Warehouse: fileURI(filepath.Join(dir, embeddedWarehouseDir))}
	if c.Warehouse != "" {
		if p.Warehouse, err = localWarehouse(c.Warehouse); err != nil {
			return embeddedPaths{}, err
		}
	}
	return p, nil
}

// openEmbedded opens (creating it on first use) the embedded catalog of
// the state directory.
func openEmbedded(ctx context.Context, cfg CatalogConfig, logger *slog.Logger) (catalog.Catalog, error) {
	p, err := cfg.embeddedPaths()
	if err != nil {
		return nil, err
	}
	whDir, err := url.Parse(p.Warehouse)
	if err != nil {
		return nil, fmt.Errorf("parsing the warehouse location %s: %w", p.Warehouse, err)
	}
	for _, dir := range []string{filepath.Dir(p.CatalogFile), filepath.FromSlash(whDir.Path)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s for the embedded catalog (check state-dir and warehouse): %w", dir, err)
		}
	}
	// WAL lets ingest status and ingest maintain read and write the
	// catalog while ingest runs; the busy timeout makes a writer wait for
	// another's transaction instead of failing at once. Both keys are
	// understood by either driver sqliteshim picks.
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(p.CatalogFile),
		RawQuery: fmt.Sprintf("_busy_timeout=%d&_journal_mode=WAL", sqliteBusyTimeoutMS)}).String()
	props := iceberg.Properties{
		"type":            "sql",
		"uri":             dsn,
		sqlcat.DriverKey:  sqliteshim.ShimName,
		sqlcat.DialectKey: string(sqlcat.SQLite),
		"warehouse":       p.Warehouse,
	}
	cat, err := catalog.Load(ctx, embeddedCatalogName, props)
	if err != nil {
		return nil, fmt.Errorf("opening the embedded catalog %s (check state-dir, or set catalog-uri): %w", p.CatalogFile, err)
	}
	sc, ok := cat.(*sqlcat.Catalog)
	if !ok {
		_ = closeQuietly(cat)
		return nil, fmt.Errorf("opening the embedded catalog %s: iceberg-go returned a %T, not its SQL catalog", p.CatalogFile, cat)
	}
	logger.Info("no catalog-uri: using the embedded catalog, iceberg-go's SQL catalog on a SQLite file with the tables on the local filesystem; "+
		"for trying ingest, one node and tests, not for a catalog shared with other hosts (set catalog-uri for a REST catalog or S3 Tables)",
		"catalog_file", p.CatalogFile, "warehouse", p.Warehouse)
	return &sqlCatalog{Catalog: sc, props: props}, nil
}

func closeQuietly(cat catalog.Catalog) error {
	if c, ok := cat.(catalog.Closer); ok {
		return c.Close()
	}
	return nil
}

// sqlCatalog is iceberg-go's SQL catalog with one difference: a commit
// whose requirements the current table fails (a base another writer has
// moved past) is table.ErrCommitFailed, as the REST catalog's HTTP 409
// is. iceberg-go's SQL catalog returns such a failure as a plain error,
// which ingest's committer could only treat as an ambiguous outcome and
// ingest maintain as a failed step; a failed requirement is no ambiguity:
// nothing was written. Tables it loads or creates commit through it.
type sqlCatalog struct {
	*sqlcat.Catalog
	props iceberg.Properties
}

var _ catalog.Catalog = (*sqlCatalog)(nil)

// CommitTable checks reqs against the current table first: one that fails
// is a conflict (table.ErrCommitFailed). A writer that commits between the
// check and the SQL catalog's own still fails there, with its plain error
// (an ambiguous outcome to the committer, which then finds no commit of
// its own and retries).
func (c *sqlCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	cur, err := c.Catalog.LoadTable(ctx, ident)
	switch {
	case err == nil:
		for _, r := range reqs {
			if err := r.Validate(cur.Metadata()); err != nil {
				return nil, "", fmt.Errorf("%w: %s: %w", table.ErrCommitFailed, strings.Join(ident, "."), err)
			}
		}
	case !errors.Is(err, catalog.ErrNoSuchTable):
		return nil, "", err
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// own makes tbl commit and refresh through c.
func (c *sqlCatalog) own(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		icebergio.LoadFSFunc(c.props, tbl.MetadataLocation()), c)
}

// LoadTable is the SQL catalog's, committing through c.
func (c *sqlCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return c.own(tbl), nil
}

// CreateTable is the SQL catalog's, committing through c.
func (c *sqlCatalog) CreateTable(ctx context.Context, ident table.Identifier, sch *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.CreateTable(ctx, ident, sch, opts...)
	if err != nil {
		return nil, err
	}
	return c.own(tbl), nil
}

// RenameTable is the SQL catalog's, committing through c.
func (c *sqlCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.RenameTable(ctx, from, to)
	if err != nil {
		return nil, err
	}
	return c.own(tbl), nil
}

// Close releases what a catalog holds, when it holds something (the
// embedded catalog's SQLite connections).
func Close(cat catalog.Catalog, logger *slog.Logger) {
	c, ok := cat.(catalog.Closer)
	if !ok {
		return
	}
	if err := c.Close(); err != nil {
		logger.Warn("closing the catalog", "error", err.Error())
	}
}

// IndexBase is the directory of the key index: <state-dir>/keyindex ("":
// a temporary one), a directory of its own, so that nothing done to the
// index (a corrupt one is moved aside) touches the rest of state-dir. A
// state-dir holding an embedded catalog is refused as the state-dir of a
// REST-catalog ingest: two ingest processes would share it.
func (c *CatalogConfig) IndexBase() (string, error) {
	if c.StateDir == "" {
		return "", nil
	}
	if c.Embedded() {
		return filepath.Join(c.StateDir, embeddedIndexDir), nil
	}
	file := filepath.Join(c.StateDir, embeddedCatalogFile)
	if _, err := os.Stat(file); err == nil {
		return "", fmt.Errorf("state-dir %s holds an embedded catalog (%s): with catalog-uri set, give the key index another state-dir, or unset catalog-uri to use that catalog", c.StateDir, file)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("checking state-dir %s: %w", c.StateDir, err)
	}
	return filepath.Join(c.StateDir, embeddedIndexDir), nil
}

// LegacyIndexDir is where versions before the index had a directory of its
// own kept it: state-dir itself, with a REST catalog ("" otherwise).
func (c *CatalogConfig) LegacyIndexDir() string {
	if c.StateDir == "" || c.Embedded() {
		return ""
	}
	return c.StateDir
}
