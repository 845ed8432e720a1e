package ui

import (
	"fmt"
	"io"
	"testing"
)

// BenchmarkHubFanout is the cost of one slice event for every open page:
// the hub encodes it once and offers the same bytes to each page, whose
// stream takes and writes it (to io.Discard here). pages=0 is the
// baseline (the event encoded, nobody to send it to); the per-page cost is
// (pages=N − pages=0)/N.
func BenchmarkHubFanout(b *testing.B) {
	for _, pages := range []int{0, 1, 50} {
		b.Run(fmt.Sprintf("pages=%d", pages), func(b *testing.B) {
			h := NewHub(&fakeSource{}, HubConfig{})
			subs := make([]*Sub, pages)
			for i := range subs {
				s, leave := h.Subscribe()
				defer leave()
				subs[i] = s
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				h.publish(event("slice", fmt.Appendf(nil, `{"seq":%d,"row":%d}`, i, i%2)), nil)
				for _, s := range subs {
					<-s.Wake()
					for _, ev := range s.Take() {
						_, _ = io.Discard.Write(ev)
					}
				}
			}
		})
	}
}
