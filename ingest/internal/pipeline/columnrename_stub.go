package pipeline

import "github.com/binlake/binlake/ingest/internal/decode"

// noteColumnRenames is replaced by the colrename branch.
func (p *Pipeline) noteColumnRenames(string, *decode.SchemaChange) {}
