//go:build integration

package smoke

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/binlake/binlake/test/testenv"
)

// TestRegistryConfluentAPI registers an Avro schema through the registry's
// Confluent-compatible API, fetches it back by id and by subject, and checks
// that registering the same schema again returns the same id (which the
// Confluent wire format relies on) while an evolved schema gets a new one.
func TestRegistryConfluentAPI(t *testing.T) {
	url := testenv.RegistryURL(t)
	ctx := t.Context()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	subject := testenv.Unique(t, "smoke") + "-value"
	v1 := `{"type":"record","name":"Value","namespace":"smoke.db.t","fields":[{"name":"id","type":"int"},{"name":"name","type":["null","string"],"default":null}],"connect.name":"smoke.db.t.Value"}`
	v2 := `{"type":"record","name":"Value","namespace":"smoke.db.t","fields":[{"name":"id","type":"int"},{"name":"name","type":["null","string"],"default":null},{"name":"note","type":["null","string"],"default":null}],"connect.name":"smoke.db.t.Value"}`

	s1, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: v1, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("registering schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = cl.DeleteSubject(ctx, subject, sr.SoftDelete)
		_, _ = cl.DeleteSubject(ctx, subject, sr.HardDelete)
	})
	if s1.ID <= 0 {
		t.Fatalf("registry returned id %d", s1.ID)
	}

	byID, err := cl.SchemaByID(ctx, s1.ID)
	if err != nil {
		t.Fatalf("fetching schema %d: %v", s1.ID, err)
	}
	assertSameJSON(t, v1, byID.Schema)

	again, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: v1, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("registering the same schema again: %v", err)
	}
	if again.ID != s1.ID || again.Version != s1.Version {
		t.Fatalf("same schema registered as id %d version %d, first was id %d version %d", again.ID, again.Version, s1.ID, s1.Version)
	}

	s2, err := cl.CreateSchema(ctx, subject, sr.Schema{Schema: v2, Type: sr.TypeAvro})
	if err != nil {
		t.Fatalf("registering evolved schema: %v", err)
	}
	if s2.ID == s1.ID || s2.Version != s1.Version+1 {
		t.Fatalf("evolved schema got id %d version %d (first: id %d version %d)", s2.ID, s2.Version, s1.ID, s1.Version)
	}
	latest, err := cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		t.Fatalf("fetching latest version: %v", err)
	}
	if latest.ID != s2.ID {
		t.Fatalf("latest version has id %d, want %d", latest.ID, s2.ID)
	}
	assertSameJSON(t, v2, latest.Schema.Schema)
}

func assertSameJSON(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("registry returned invalid JSON %q: %v", got, err)
	}
	if !reflect.DeepEqual(w, g) {
		t.Fatalf("schema changed in the registry:\nwant %s\n got %s", want, got)
	}
}
