//go:build !binlake_broken_offsets

package commit

// offsetStoreDisabled is true only in the deliberately broken test build
// (tag binlake_broken_offsets, see offsets_broken.go).
const offsetStoreDisabled = false
