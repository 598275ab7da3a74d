package commit

import (
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
)

func pull2(seq func(func(arrow.RecordBatch, error) bool)) (func() (arrow.RecordBatch, error, bool), func()) {
	return iter.Pull2(iter.Seq2[arrow.RecordBatch, error](seq))
}
