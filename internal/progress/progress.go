// Package progress reports how far a long command is: a progress bar on a
// terminal, lines that a log keeps otherwise.
package progress

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Bar reports the items done of a long command on w: a progress bar on a
// terminal, otherwise a line at about every 10% of the items.
type Bar struct {
	w     io.Writer
	name  string // the command, before each line
	items string // what is counted ("points")
	total int
	bar   *progressbar.ProgressBar
	start time.Time
	next  int // (no bar) the tenth to report next
}

// New reports on w the progress of name through total items.
func New(w io.Writer, name, items string, total int) *Bar {
	p := &Bar{w: w, name: name, items: items, total: total, start: time.Now(), next: 1}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) && total > 0 {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(name),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(items),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetRenderBlankState(true),
			progressbar.OptionSetWidth(30),
		)
	}
	return p
}

// Update reports done of total items; it must not be called concurrently.
func (p *Bar) Update(done, total int) {
	if p.bar != nil {
		_ = p.bar.Set(done)
		return
	}
	if total == 0 || done*10 < p.next*total {
		return
	}
	for done*10 >= p.next*total {
		p.next++
	}
	elapsed := time.Since(p.start).Round(100 * time.Millisecond)
	fmt.Fprintf(p.w, "%s: %d/%d %s (%d%%), %v\n", p.name, done, total, p.items, done*100/total, elapsed)
}

// Finish closes the bar: completed, or left where it stopped.
func (p *Bar) Finish(ok bool) {
	if p.bar == nil {
		return
	}
	if ok {
		_ = p.bar.Finish()
	} else {
		_ = p.bar.Exit()
	}
	fmt.Fprintln(p.w)
}
