//go:build binlake_broken_offsets

package commit

// offsetStoreDisabled makes [Offsets] ignore the offsets stored in the
// table, so that ingest re-applies what it already committed after every
// restart. It exists only for test/e2e's TestIngestKillBrokenOffsets,
// which proves the lake validator catches exactly that; never build a
// release with this tag.
const offsetStoreDisabled = true
