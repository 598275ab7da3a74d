package branch_test

import (
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/binlake/binlake/ingest/internal/branch"
	"github.com/binlake/binlake/ingest/internal/commit"
)

// TestRetarget checks that a commit made on main becomes one on the
// branch: main's ref requirement and ref update name the branch, other
// refs and updates pass, and ingest's bookkeeping keys are left out.
func TestRetarget(t *testing.T) {
	id := int64(42)
	reqs := []table.Requirement{
		table.AssertRefSnapshotID(table.MainBranch, &id),
		table.AssertRefSnapshotID("other", nil),
		table.AssertCurrentSchemaID(3),
	}
	updates := []table.Update{
		table.NewSetSnapshotRefUpdate(table.MainBranch, 7, table.BranchRef, 0, 0, 0),
		table.NewSetPropertiesUpdate(iceberg.Properties{
			commit.OffsetsKeyPrefix + "t": `{"0":5}`, commit.CommitIDKey: "c", commit.TruncateWatermarkKey: "9",
			"write.delete.mode": "merge-on-read",
		}),
		table.NewSetPropertiesUpdate(iceberg.Properties{commit.OffsetsKeyPrefix + "t": `{"0":5}`}),
		table.NewRemovePropertiesUpdate([]string{commit.TruncateWatermarkKey, "write.delete.mode"}),
		table.NewRemovePropertiesUpdate([]string{commit.CommitIDKey}),
	}
	r, u, err := branch.Retarget(reqs, updates, "fix")
	if err != nil {
		t.Fatal(err)
	}
	got := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wantR := []string{
		`{"type":"assert-ref-snapshot-id","ref":"fix","snapshot-id":42}`,
		`{"type":"assert-ref-snapshot-id","ref":"other","snapshot-id":null}`,
		`{"type":"assert-current-schema-id","current-schema-id":3}`,
	}
	if len(r) != len(wantR) {
		t.Fatalf("requirements %s", got(r))
	}
	for i, w := range wantR {
		if g := got(r[i]); g != w {
			t.Errorf("requirement %d: %s, want %s", i, g, w)
		}
	}
	wantU := []string{
		`{"action":"set-snapshot-ref","ref-name":"fix","type":"branch","snapshot-id":7}`,
		`{"action":"set-properties","updates":{"write.delete.mode":"merge-on-read"}}`,
		`{"action":"remove-properties","removals":["write.delete.mode"]}`,
	}
	if len(u) != len(wantU) {
		t.Fatalf("updates %s", got(u))
	}
	for i, w := range wantU {
		if g := got(u[i]); g != w {
			t.Errorf("update %d: %s, want %s", i, g, w)
		}
	}
}
