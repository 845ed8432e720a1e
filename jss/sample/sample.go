// Package sample embeds the default workload of `cosched sim`: the first
// 5,000 jobs (77 days) of the KTH-SP2 log from the Parallel Workloads
// Archive, a 100-processor IBM SP2 whose users gave runtime estimates, so
// FCFS, EASY and conservative backfilling differ visibly. It is 71 KB
// compressed and simulates in milliseconds.
package sample

import (
	"bytes"
	"context"
	_ "embed"
	"io"

	"github.com/cosched/cosched/jss"
	"github.com/cosched/cosched/jss/swf"
)

//go:embed kth-sp2-5000.swf.gz
var kth []byte

// Name is how reports name the embedded trace.
const Name = "KTH-SP2 first 5,000 jobs (embedded sample)"

// KTH returns the embedded trace as a simulator input.
func KTH() jss.TraceInput {
	return jss.TraceInput{Name: Name, Open: func(_ context.Context, opts ...swf.Option) (*swf.Reader, io.Closer, error) {
		return swf.OpenReader(bytes.NewReader(kth), Name, opts...)
	}}
}
