package signal

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestParse(t *testing.T) {
	const prefix = "dbserver1"
	for _, tc := range []struct {
		name        string
		key, value  string
		wantErr     error
		wantType    string
		wantID      string
		collections []string
		message     string
	}{
		{name: "execute-snapshot as Debezium documents it", key: prefix,
			value:    `{"id":"d139b9b7-7777-4547-917d-e1775ea61d41","type":"execute-snapshot","data":{"data-collections":["inventory.orders","inventory.products"],"type":"incremental"}}`,
			wantType: TypeExecuteSnapshot, wantID: "d139b9b7-7777-4547-917d-e1775ea61d41", collections: []string{"inventory.orders", "inventory.products"}},
		{name: "execute-snapshot type defaults to incremental", key: prefix,
			value:    `{"type":"execute-snapshot","data":{"data-collections":["db\\.t[0-9]+"]}}`,
			wantType: TypeExecuteSnapshot, collections: []string{`db\.t[0-9]+`}},
		{name: "type INCREMENTAL in upper case", key: prefix,
			value:    `{"type":"execute-snapshot","data":{"data-collections":["a.b"],"type":"INCREMENTAL"}}`,
			wantType: TypeExecuteSnapshot, collections: []string{"a.b"}},
		{name: "data as a JSON string (source channel form)", key: prefix,
			value:    `{"id":"x","type":"execute-snapshot","data":"{\"data-collections\":[\"a.b\"],\"type\":\"incremental\"}"}`,
			wantType: TypeExecuteSnapshot, wantID: "x", collections: []string{"a.b"}},
		{name: "stop-snapshot of everything", key: prefix, value: `{"type":"stop-snapshot","data":{"type":"incremental"}}`, wantType: TypeStopSnapshot},
		{name: "stop-snapshot of a table", key: prefix, value: `{"type":"stop-snapshot","data":{"data-collections":["a.b"],"type":"incremental"}}`,
			wantType: TypeStopSnapshot, collections: []string{"a.b"}},
		{name: "pause", key: prefix, value: `{"id":"p","type":"pause-snapshot"}`, wantType: TypePauseSnapshot, wantID: "p"},
		{name: "resume with empty data", key: prefix, value: `{"type":"resume-snapshot","data":{}}`, wantType: TypeResumeSnapshot},
		{name: "log", key: prefix, value: `{"type":"log","data":{"message":"hello"}}`, wantType: TypeLog, message: "hello"},

		{name: "another connector's signal", key: "other", value: `{"type":"execute-snapshot","data":{"data-collections":["a.b"]}}`, wantErr: ErrOtherConnector},
		{name: "no key", key: "", value: `{"type":"pause-snapshot"}`, wantErr: ErrOtherConnector},
		{name: "empty value", key: prefix, value: ``, wantErr: ErrInvalid},
		{name: "not JSON", key: prefix, value: `execute-snapshot db.t1`, wantErr: ErrInvalid},
		{name: "truncated JSON", key: prefix, value: `{"type":"execute-snapshot","data":{"data-coll`, wantErr: ErrInvalid},
		{name: "JSON array", key: prefix, value: `["execute-snapshot"]`, wantErr: ErrInvalid},
		{name: "no type", key: prefix, value: `{"id":"1","data":{}}`, wantErr: ErrInvalid},
		{name: "unknown type", key: prefix, value: `{"type":"schema-changes","data":{}}`, wantErr: ErrInvalid},
		{name: "blocking snapshot", key: prefix, value: `{"type":"execute-snapshot","data":{"data-collections":["a.b"],"type":"blocking"}}`, wantErr: ErrInvalid},
		{name: "no data-collections", key: prefix, value: `{"type":"execute-snapshot","data":{"type":"incremental"}}`, wantErr: ErrInvalid},
		{name: "empty data-collections", key: prefix, value: `{"type":"execute-snapshot","data":{"data-collections":[" "]}}`, wantErr: ErrInvalid},
		{name: "data-collections not an array", key: prefix, value: `{"type":"execute-snapshot","data":{"data-collections":"a.b"}}`, wantErr: ErrInvalid},
		{name: "bad regex", key: prefix, value: `{"type":"execute-snapshot","data":{"data-collections":["a.(b"]}}`, wantErr: ErrInvalid},
		{name: "data a number", key: prefix, value: `{"type":"execute-snapshot","data":42}`, wantErr: ErrInvalid},
		{name: "data a string that is not JSON", key: prefix, value: `{"type":"execute-snapshot","data":"a.b"}`, wantErr: ErrInvalid},
		{name: "additional-conditions", key: prefix,
			value: `{"type":"execute-snapshot","data":{"data-collections":["a.b"],"additional-conditions":[{"data-collection":"a.b","filter":"id>5"}]}}`, wantErr: ErrInvalid},
		{name: "surrogate-key", key: prefix, value: `{"type":"execute-snapshot","data":{"data-collections":["a.b"],"surrogate-key":"c"}}`, wantErr: ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(prefix, []byte(tc.key), []byte(tc.value))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Parse = %+v, %v; want %v", s, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if s.Type != tc.wantType || s.ID != tc.wantID || !slices.Equal(s.Collections, tc.collections) || s.Message != tc.message {
				t.Fatalf("Parse = %+v; want type %s id %q collections %v message %q", s, tc.wantType, tc.wantID, tc.collections, tc.message)
			}
		})
	}
}

// TestValueRoundTrip checks that what capture snapshot writes is what
// capture reads, in Debezium's documented shape.
func TestValueRoundTrip(t *testing.T) {
	v, err := Value("id1", TypeExecuteSnapshot, []string{"db.t1", "db.t2"})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Collections []string `json:"data-collections"`
			Type        string   `json:"type"`
		} `json:"data"`
	}
	if err := json.Unmarshal(v, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != "id1" || doc.Type != "execute-snapshot" || doc.Data.Type != "incremental" || !slices.Equal(doc.Data.Collections, []string{"db.t1", "db.t2"}) {
		t.Fatalf("execute-snapshot value %s", v)
	}
	for _, typ := range []string{TypeExecuteSnapshot, TypeStopSnapshot, TypePauseSnapshot, TypeResumeSnapshot} {
		v, err := Value("id2", typ, []string{"db.t1"})
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse("p", []byte("p"), v)
		if err != nil || s.Type != typ || s.ID != "id2" {
			t.Fatalf("%s: Parse(%s) = %+v, %v", typ, v, s, err)
		}
	}
}

func TestMatcher(t *testing.T) {
	m, err := NewMatcher([]string{`db\.t[12]`, "other.x", "DB.UPPER"})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"db.t1", "db.t2", "db.t3", "db.t10", "db.upper", "xdb.t1"}
	var got []string
	for _, n := range names {
		if m.Match(n) {
			got = append(got, n)
		}
	}
	if want := []string{"db.t1", "db.t2", "db.upper"}; !slices.Equal(got, want) {
		t.Errorf("matched %v, want %v (whole names, case-insensitive)", got, want)
	}
	if miss := m.Unmatched(names); !slices.Equal(miss, []string{"other.x"}) {
		t.Errorf("unmatched %v, want [other.x]", miss)
	}
}

// FuzzParse: no input makes Parse panic, and an accepted signal is one
// capture acts on.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"1","type":"execute-snapshot","data":{"data-collections":["a.b"],"type":"incremental"}}`))
	f.Add([]byte(`{"type":"stop-snapshot","data":"{\"type\":\"incremental\"}"}`))
	f.Add([]byte(`{"type":"log","data":{"message":"m"}}`))
	f.Add([]byte(`{"type":"execute-snapshot","data":"`))
	f.Fuzz(func(t *testing.T, value []byte) {
		s, err := Parse("p", []byte("p"), value)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		switch s.Type {
		case TypeExecuteSnapshot:
			if len(s.Collections) == 0 {
				t.Fatal("execute-snapshot accepted without tables")
			}
			if _, err := NewMatcher(s.Collections); err != nil {
				t.Fatalf("accepted collections do not compile: %v", err)
			}
		case TypeStopSnapshot, TypePauseSnapshot, TypeResumeSnapshot, TypeLog:
		default:
			t.Fatalf("accepted type %q", s.Type)
		}
	})
}

// TestListEndsWaitsForNewTopic: listing a topic's end right after it was
// created can meet UNKNOWN_TOPIC_OR_PARTITION (capture exited on it at
// start in CI); listEnds waits until the topic is known.
func TestListEndsWaitsForNewTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_, _ = adm.CreateTopic(context.Background(), 1, 1, nil, "late-signal")
	}()
	ends, err := listEnds(t.Context(), adm, "late-signal")
	if err != nil {
		t.Fatalf("listEnds: %v", err)
	}
	if o, ok := ends.Lookup("late-signal", 0); !ok || o.Offset != 0 {
		t.Errorf("end of the new topic: %+v %v, want offset 0", o, ok)
	}
}
