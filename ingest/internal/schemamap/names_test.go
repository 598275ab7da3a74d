package schemamap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/google/go-cmp/cmp"
)

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:5])
}

func TestNaturalName(t *testing.T) {
	cases := map[string]string{
		"orders":                        "orders",
		"Orders":                        "orders",
		"Order Items":                   "order_items",
		"Order-Items":                   "order_items",
		"orders-2024":                   "orders_2024",
		"_tmp_":                         "tmp",
		"über":                          "ber", // one character, one "_", then trimmed
		"a€b":                           "a_b", // by character, not by byte
		"日本":                            "t",   // nothing left
		"$":                             "t",   // nothing left
		"t_xdeadbeef00":                 "t_xdeadbeef00",
		"2024-sales":                    "2024_sales",
		strings.Repeat("A", 300):        strings.Repeat("a", 255),
		strings.Repeat("a", 254) + "_b": strings.Repeat("a", 254), // cut, then trimmed
	}
	for in, want := range cases {
		if got := NaturalName(in); got != want {
			t.Errorf("NaturalName(%q) = %q, want %q", in, got, want)
		}
		if got := NaturalName(in); !ValidName(got) {
			t.Errorf("NaturalName(%q) = %q is not a valid name", in, got)
		}
	}
}

func TestNamespaces(t *testing.T) {
	for _, tc := range []struct {
		n      Namer
		db     string
		wantNS string
	}{
		{Namer{}, "shop", "shop"},
		{Namer{}, "Shop-EU", "shop_eu"},
		{Namer{}, "aws_logs", "db_aws_logs"}, // S3 Tables refuses namespaces beginning with aws
		{Namer{}, "AWSome", "db_awsome"},
		{Namer{}, "laws", "laws"},
		{Namer{Prefix: "dbserver1", NamespaceWithPrefix: true}, "inventory", "dbserver1_inventory"},
		{Namer{Prefix: "aws1", NamespaceWithPrefix: true}, "shop", "db_aws1_shop"},
		{Namer{Prefix: "dbserver1"}, "inventory", "inventory"}, // the prefix only with NamespaceWithPrefix
		{Namer{Prefix: strings.Repeat("p", 200), NamespaceWithPrefix: true}, strings.Repeat("d", 200), strings.Repeat("p", 200) + "_" + strings.Repeat("d", 54)},
	} {
		got := tc.n.Ident(tc.db, "Orders")
		if got[0] != tc.wantNS || got[1] != "orders" {
			t.Errorf("%+v.Ident(%q, Orders) = %v, want {%s orders}", tc.n, tc.db, got, tc.wantNS)
		}
		if !ValidNamespace(got[0]) {
			t.Errorf("namespace %q is not valid", got[0])
		}
	}
}

func TestHashedAndSource(t *testing.T) {
	n := Namer{}
	if got, want := n.Hashed("a", "Orders"), (table.Identifier{"a", "orders_x" + hashOf("a.Orders")}); !cmp.Equal(got, want) {
		t.Errorf("Hashed = %v, want %v", got, want)
	}
	if cmp.Equal(n.Hashed("a", "Orders"), n.Hashed("a", "orders")) {
		t.Error("two source tables share a hashed name")
	}
	long := n.Hashed("a", strings.Repeat("x", 400))
	if len(long[1]) != maxNameLength || !ValidName(long[1]) {
		t.Errorf("long hashed name %q: %d bytes", long[1], len(long[1]))
	}
	for _, tc := range []struct {
		n       Namer
		db, tbl string
		want    string
	}{
		{Namer{}, "shop", "Orders", "shop.Orders"},
		{Namer{}, "my.db", "t", "`my.db`.t"},
		{Namer{}, "db", "a`b", "db.`a``b`"},
		{Namer{Prefix: "p"}, "db", "t", "db.t"},
		{Namer{Prefix: "p", NamespaceWithPrefix: true}, "db", "t", "p.db.t"},
	} {
		if got := tc.n.Source(tc.db, tc.tbl); got != tc.want {
			t.Errorf("Source(%q, %q) = %q, want %q", tc.db, tc.tbl, got, tc.want)
		}
	}
	// "a.b" + "c" and "a" + "b.c" are distinct sources.
	if n.Source("a.b", "c") == n.Source("a", "b.c") {
		t.Error("distinct sources share a Source value")
	}
}

func TestLegacyName(t *testing.T) {
	cases := map[string]string{
		"orders":          "orders",
		"order_items_2":   "order_items_2",
		"Orders":          "orders_x" + hashOf("Orders"),
		"orders-2024":     "orders_2024_x" + hashOf("orders-2024"),
		"_tmp":            "tmp_x" + hashOf("_tmp"),
		"über":            "ber_x" + hashOf("über"),
		"aws_s3_metadata": "aws_s3_metadata_x" + hashOf("aws_s3_metadata"),
		"t_xdeadbeef00":   "t_xdeadbeef00_x" + hashOf("t_xdeadbeef00"),
		"$":               "t_x" + hashOf("$"),
	}
	for in, want := range cases {
		if got := LegacyName(in); got != want {
			t.Errorf("LegacyName(%q) = %q, want %q", in, got, want)
		}
	}
	n := Namer{Prefix: "dbserver1", NamespaceWithPrefix: true}
	if got := n.Legacy("inventory", "Orders"); got[0] != "dbserver1_inventory" || got[1] != LegacyName("Orders") {
		t.Errorf("Legacy = %v", got)
	}
}

// catalogOf is a Lookup over tables given by their properties.
type catalogOf map[string]map[string]string

func (c catalogOf) look(_ context.Context, id table.Identifier) (map[string]string, bool, error) {
	props, ok := c[strings.Join(id, ".")]
	return props, ok, nil
}

func TestResolve(t *testing.T) {
	n := Namer{}
	src := func(db, tbl string) map[string]string { return map[string]string{SourceProperty: n.Source(db, tbl)} }
	hashed := func(db, tbl string) string { return strings.Join(n.Hashed(db, tbl), ".") }
	legacy := func(db, tbl string) string { return strings.Join(n.Legacy(db, tbl), ".") }
	for _, tc := range []struct {
		name    string
		cat     catalogOf
		db, tbl string
		topic   string
		want    string
		exists  bool
		kind    NameKind
	}{
		{name: "new table: natural", cat: catalogOf{}, db: "a", tbl: "Orders", want: "a.orders", kind: NameNatural},
		{name: "its own natural table", cat: catalogOf{"a.orders": src("a", "Orders")}, db: "a", tbl: "Orders", want: "a.orders", exists: true, kind: NameNatural},
		{name: "natural name held by another source: hashed, to create", cat: catalogOf{"a.orders": src("a", "orders")},
			db: "a", tbl: "Orders", want: hashed("a", "Orders"), kind: NameHashed},
		{name: "natural name held by another source: hashed, existing", cat: catalogOf{"a.orders": src("a", "orders"), hashed("a", "Orders"): src("a", "Orders")},
			db: "a", tbl: "Orders", want: hashed("a", "Orders"), exists: true, kind: NameHashed},
		{name: "hashed table kept after the natural one is dropped", cat: catalogOf{hashed("a", "Orders"): src("a", "Orders")},
			db: "a", tbl: "Orders", want: hashed("a", "Orders"), exists: true, kind: NameHashed},
		{name: "the first source keeps its natural name", cat: catalogOf{"a.order_items": src("a", "Order-Items"), hashed("a", "order_items"): src("a", "order_items")},
			db: "a", tbl: "Order-Items", want: "a.order_items", exists: true, kind: NameNatural},
		{name: "legacy table without the property", cat: catalogOf{legacy("a", "Orders"): {}},
			db: "a", tbl: "Orders", want: legacy("a", "Orders"), exists: true, kind: NameLegacy},
		{name: "legacy table wins over a natural-name table of another source", cat: catalogOf{"a.orders": {}, legacy("a", "Orders"): {}},
			db: "a", tbl: "Orders", want: legacy("a", "Orders"), exists: true, kind: NameLegacy},
		{name: "a valid legacy name is the natural name", cat: catalogOf{"a.orders": {}},
			db: "a", tbl: "orders", want: "a.orders", exists: true, kind: NameNatural},
		{name: "a natural-name table without the property is another's", cat: catalogOf{"a.orders": {}},
			db: "a", tbl: "Orders", want: hashed("a", "Orders"), kind: NameHashed},
		{name: "a renamed legacy table holding the topic's offsets", cat: catalogOf{"a.orders": {"binlake.offsets.p.a.Orders": `{"0":5}`}},
			db: "a", tbl: "Orders", topic: "p.a.Orders", want: "a.orders", exists: true, kind: NameNatural},
		{name: "a legacy table another source's property names", cat: catalogOf{legacy("a", "Orders"): src("a", "x")},
			db: "a", tbl: "Orders", want: "a.orders", kind: NameNatural},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := n.Resolve(t.Context(), tc.db, tc.tbl, tc.topic, tc.cat.look)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Ident, ".") != tc.want || got.Exists != tc.exists || got.Kind != tc.kind {
				t.Errorf("Resolve = %v exists %v %s, want %s exists %v %s", got.Ident, got.Exists, got.Kind, tc.want, tc.exists, tc.kind)
			}
		})
	}

	// A hashed name another source holds cannot be given.
	cat := catalogOf{"a.orders": src("a", "orders"), hashed("a", "Orders"): src("a", "zzz")}
	if _, err := n.Resolve(t.Context(), "a", "Orders", "", cat.look); !errors.Is(err, ErrNameTaken) {
		t.Errorf("hashed name taken: error %v, want ErrNameTaken", err)
	}

	// A mapped name: used whatever the natural name's table, refused
	// when another source's table holds it.
	m, err := ParseNameMap([]string{"a.Orders=sales.orders"})
	if err != nil {
		t.Fatal(err)
	}
	mn := Namer{Map: m}
	got, err := mn.Resolve(t.Context(), "a", "Orders", "", catalogOf{"a.orders": src("a", "Orders")}.look)
	if err != nil || strings.Join(got.Ident, ".") != "sales.orders" || got.Exists || got.Kind != NameMapped {
		t.Errorf("mapped: %v %v %v", got, got.Kind, err)
	}
	if id := mn.Ident("a", "Orders"); strings.Join(id, ".") != "sales.orders" {
		t.Errorf("mapped Ident = %v", id)
	}
	got, err = mn.Resolve(t.Context(), "a", "Orders", "", catalogOf{"sales.orders": {}}.look)
	if err != nil || !got.Exists {
		t.Errorf("mapped onto a table without the property: %v %v", got, err)
	}
	_, err = mn.Resolve(t.Context(), "a", "Orders", "", catalogOf{"sales.orders": src("b", "orders")}.look)
	if !errors.Is(err, ErrNameTaken) || !strings.Contains(err.Error(), "table-name-map") || !strings.Contains(err.Error(), "b.orders") {
		t.Errorf("mapped onto another source's table: error %v", err)
	}
}

func TestHolds(t *testing.T) {
	n := Namer{}
	if !n.Holds(map[string]string{SourceProperty: "a.Orders"}, "a", "Orders", "", table.Identifier{"a", "orders"}) {
		t.Error("own table not held")
	}
	if n.Holds(map[string]string{SourceProperty: "a.orders"}, "a", "Orders", "", table.Identifier{"a", "orders"}) {
		t.Error("another source's table held")
	}
}

func TestParseNameMap(t *testing.T) {
	got, err := ParseNameMap([]string{"shop.Orders=sales.orders", " `my.db`.t = ns.t2 ", "", "db.`a``b`=ns.ab"})
	if err != nil {
		t.Fatal(err)
	}
	want := NameMap{
		{"shop", "Orders"}: {"sales", "orders"},
		{"my.db", "t"}:     {"ns", "t2"},
		{"db", "a`b"}:      {"ns", "ab"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	for in, wantErr := range map[string]string{
		"shop.Orders":                                    "want <db>.<table>=<namespace>.<table>",
		"Orders=sales.orders":                            "is not <db>.<table>",
		"a.b.c=sales.orders":                             "is not <db>.<table>",
		"`a.b=sales.orders":                              "is not <db>.<table>",
		"shop.Orders=sales.Orders":                       "is not <namespace>.<table>",
		"shop.Orders=orders":                             "is not <namespace>.<table>",
		"shop.Orders=aws_x.orders":                       "namespace not beginning with aws",
		"shop.Orders=sales._orders":                      "is not <namespace>.<table>",
		"shop.Orders=sales.or-ders":                      "is not <namespace>.<table>",
		"shop.Orders=sales.a.b":                          "is not <namespace>.<table>",
		"shop.Orders=" + "s." + strings.Repeat("a", 256): "is not <namespace>.<table>",
	} {
		if _, err := ParseNameMap([]string{in}); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("ParseNameMap(%q) error %v, want one containing %q", in, err, wantErr)
		}
	}
	if _, err := ParseNameMap([]string{"a.t=ns.t", "a.t=ns.u"}); err == nil || !strings.Contains(err.Error(), "mapped twice") {
		t.Errorf("a source mapped twice: %v", err)
	}
	if _, err := ParseNameMap([]string{"a.t=ns.t", "b.t=ns.t"}); err == nil || !strings.Contains(err.Error(), "both mapped to ns.t") {
		t.Errorf("two sources to one table: %v", err)
	}
}

// TestPlaced: a table belongs to the deployment whose naming settings
// give its SourceProperty and its identifier; another deployment writing
// the same catalog (a namespace with the prefix) does not own it, even
// for the same source table. Source values round-trip through their
// quoting.
func TestPlaced(t *testing.T) {
	plain := Namer{Prefix: "p"}
	prefixed := Namer{Prefix: "p", NamespaceWithPrefix: true}
	for _, tc := range []struct {
		n       Namer
		db, tbl string
	}{
		{plain, "shop", "Orders"}, {plain, "my.db", "a`b"}, {plain, "db", "x.y"},
		{prefixed, "shop", "Orders"}, {prefixed, "my.db", "a`b"},
		{Namer{Prefix: "odd.prefix", NamespaceWithPrefix: true}, "db", "t"},
	} {
		src := tc.n.Source(tc.db, tc.tbl)
		for _, id := range tc.n.Candidates(tc.db, tc.tbl) {
			if !tc.n.Placed(id, src) {
				t.Errorf("%+v: %v with source %q is not its own", tc.n, id, src)
			}
		}
		other := plain
		if !tc.n.NamespaceWithPrefix {
			other = prefixed
		}
		for _, id := range tc.n.Candidates(tc.db, tc.tbl) {
			if other.Placed(id, src) {
				t.Errorf("%+v claims %v (source %q) of %+v", other, id, src, tc.n)
			}
		}
	}
	if plain.Placed(table.Identifier{"elsewhere", "orders"}, plain.Source("shop", "Orders")) {
		t.Error("a table in another namespace is placed by this namer")
	}
	for _, bad := range []string{"", "t", "db.", ".t", "`db.t", "d`b.t", "`db`x.t"} {
		if plain.Placed(table.Identifier{"db", "t"}, bad) {
			t.Errorf("source %q accepted", bad)
		}
	}
}

// TestResolveOtherSource is issue 29 item 4: without NamespaceWithPrefix
// two sources' a.orders resolve to one table; the table's
// SourcePrefixProperty tells them apart. Another source's table stops
// resolving (ErrOtherSource) unless MergeSources; a table naming no
// source (an older binlake's) is this source's.
func TestResolveOtherSource(t *testing.T) {
	east := map[string]string{SourceProperty: "a.orders", SourcePrefixProperty: "east"}
	old := map[string]string{SourceProperty: "a.orders"}
	for _, tc := range []struct {
		name  string
		namer Namer
		props map[string]string
		want  error
	}{
		{"own source", Namer{Prefix: "east"}, east, nil},
		{"another source", Namer{Prefix: "west"}, east, ErrOtherSource},
		{"another source, merged", Namer{Prefix: "west", MergeSources: true}, east, nil},
		{"a table naming no source is adopted", Namer{Prefix: "west"}, old, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.namer.Resolve(t.Context(), "a", "orders", "", catalogOf{"a.orders": tc.props}.look)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Resolve: error %v, want %v", err, tc.want)
			}
			if err != nil {
				for _, s := range []string{`"west"`, `"east"`, "--namespace-with-prefix", "--table-name-map", "--merge-sources"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the error does not name %s: %v", s, err)
					}
				}
				return
			}
			if strings.Join(got.Ident, ".") != "a.orders" || !got.Exists {
				t.Errorf("Resolve = %v exists %v, want the existing a.orders", got.Ident, got.Exists)
			}
		})
	}
	// The mapped name is checked too.
	m, err := ParseNameMap([]string{"a.orders=sales.orders"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Namer{Prefix: "west", Map: m}).Resolve(t.Context(), "a", "orders", "", catalogOf{"sales.orders": east}.look); !errors.Is(err, ErrOtherSource) {
		t.Errorf("mapped onto another source's table: error %v, want ErrOtherSource", err)
	}
}
