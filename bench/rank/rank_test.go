package rank

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cosched/cosched/bench"
	"github.com/cosched/cosched/comm"
)

// recorder is an injected compute function that does no work and records
// the phases it was asked for.
type recorder struct {
	mu     sync.Mutex
	phases map[int][]time.Duration // by rank
}

func (r *recorder) computeFor(rank int) computeFunc {
	return func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.phases == nil {
			r.phases = map[int][]time.Duration{}
		}
		r.phases[rank] = append(r.phases[rank], d)
		return ctx.Err()
	}
}

// runJob runs every rank of w as a goroutine; the first error cancels the
// others.
func runJob(ctx context.Context, w *world, cfg Config, compute func(rank int) computeFunc) ([]*fakeComm, []comm.Stats, error) {
	fcs := make([]*fakeComm, w.size)
	stats := make([]comm.Stats, w.size)
	g, ctx := errgroup.WithContext(ctx)
	for r := range w.size {
		fcs[r] = w.comm(r)
		g.Go(func() error {
			var err error
			stats[r], err = run(ctx, fcs[r], cfg, compute(r))
			return err
		})
	}
	return fcs, stats, g.Wait()
}

// expectedLog is what rank r of a job of n ranks must call in iteration i.
func expectedLog(t bench.Template, r, n, i, size int) []call {
	var want []call
	steps := bench.Steps(t.Pattern, r, n)
	switch {
	case t.Pattern == bench.Barrier:
		want = append(want, call{"barrier", -1, -1, 0})
	case t.Sync == bench.Blocking:
		for _, s := range steps {
			want = append(want, call{"send", s.To, i, size}, call{"recv", s.From, i, size})
		}
	default:
		for _, s := range steps {
			want = append(want, call{"irecv", s.From, i, 0})
		}
		for _, s := range steps {
			want = append(want, call{"isend", s.To, i, size})
		}
		want = append(want, call{"barrier", -1, -1, 0})
		if len(steps) > 0 {
			want = append(want, call{"waitall", -1, -1, 2 * len(steps)})
		}
	}
	return want
}

func TestRunPatterns(t *testing.T) {
	const iters = 3
	for _, tmpl := range []string{"50ms,25ms,barrier,B", "50ms,25ms,barrier,NB", "10ms,20ms,news,B", "10ms,20ms,news,NB", "40ms,0ms,transpose,B", "40ms,10ms,transpose,NB"} {
		tp, err := bench.ParseTemplate(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		// 2: news east and west are the same rank; 4: 2×2, north is south;
		// 6: 2×3; 9: 3×3; 7: 1×7 (prime).
		for _, n := range []int{1, 2, 3, 4, 6, 7, 9} {
			for _, size := range []int{0, HeaderSize, 1000} {
				t.Run(fmt.Sprintf("%s/n=%d/size=%d", tmpl, n, size), func(t *testing.T) {
					cfg := Config{Template: tp, Iterations: iters, Seed: 0xfeed + uint64(n), MessageSize: size}
					wantSize := size
					if size == 0 {
						wantSize = bench.DefaultMessageSize
					}
					w := newWorld(n)
					var rec recorder
					fcs, stats, err := runJob(context.Background(), w, cfg, rec.computeFor)
					if err != nil {
						t.Fatal(err)
					}
					if u := w.undelivered(); u != 0 {
						t.Errorf("%d messages sent but never received", u)
					}
					for r, fc := range fcs {
						// The calls, iteration by iteration.
						var want []call
						for i := range iters {
							want = append(want, expectedLog(tp, r, n, i, wantSize)...)
						}
						if !slices.Equal(fc.log, want) {
							t.Errorf("rank %d calls:\n%v\nwant\n%v", r, fc.log, want)
						}
						// Counted independently of Steps: MessagesPerIteration
						// messages out and in per iteration, never to itself.
						perIter := bench.MessagesPerIteration(tp.Pattern, r, n)
						for i := range iters {
							sent, recvd := 0, 0
							for _, c := range fc.log {
								if c.tag != i {
									continue
								}
								switch c.op {
								case "send", "isend":
									sent++
									if c.peer == r || c.size != wantSize {
										t.Errorf("rank %d iteration %d: %v", r, i, c)
									}
								case "recv", "irecv":
									recvd++
								}
							}
							if sent != perIter || recvd != perIter {
								t.Errorf("rank %d iteration %d: %d sent, %d received, want %d each", r, i, sent, recvd, perIter)
							}
						}
						// The drawn compute times, exactly.
						var draws []time.Duration
						var sum time.Duration
						for i := range iters {
							d := tp.Compute(cfg.Seed, r, i)
							draws = append(draws, d)
							sum += d
						}
						if got := rec.phases[r]; !slices.Equal(got, draws) {
							t.Errorf("rank %d compute phases %v, want %v", r, got, draws)
						}
						st := stats[r]
						if st.Iterations != iters || st.Compute != int64(sum) {
							t.Errorf("rank %d stats %+v, want %d iterations and compute %d", r, st, iters, sum)
						}
						if st.CommWait < 0 || st.Wall < st.CommWait {
							t.Errorf("rank %d stats %+v: comm wait outside [0, wall]", r, st)
						}
					}
				})
			}
		}
	}
}

// The neighbours of the news pattern on a torus: each rank sends to and
// receives from exactly its torus neighbours (a check of the routing that
// does not go through Steps).
func TestRunNewsNeighbours(t *testing.T) {
	tp, _ := bench.ParseTemplate("1ms,0,news,NB")
	w := newWorld(9) // 3×3
	fcs, _, err := runJob(context.Background(), w, Config{Template: tp, Iterations: 1}, (&recorder{}).computeFor)
	if err != nil {
		t.Fatal(err)
	}
	// Rank 4 is the centre: north 1, south 7, west 3, east 5.
	var to, from []int
	for _, c := range fcs[4].log {
		switch c.op {
		case "isend":
			to = append(to, c.peer)
		case "irecv":
			from = append(from, c.peer)
		}
	}
	slices.Sort(to)
	slices.Sort(from)
	if want := []int{1, 3, 5, 7}; !slices.Equal(to, want) || !slices.Equal(from, want) {
		t.Errorf("rank 4 sends to %v and receives from %v, want %v", to, from, want)
	}
}

func TestRunDetectsWrongMessages(t *testing.T) {
	header := func(b []byte, off int, v uint32) []byte {
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	for _, c := range []struct {
		name    string
		corrupt func(src, dst, tag int, data []byte) []byte
		want    string
	}{
		{"sender", func(src, dst, tag int, b []byte) []byte {
			if src == 1 && dst == 0 && tag == 1 {
				return header(b, 8, 2)
			}
			return b
		}, "header says iteration 1, rank 2"},
		{"iteration", func(src, dst, tag int, b []byte) []byte {
			if src == 1 && dst == 0 && tag == 1 {
				binary.LittleEndian.PutUint64(b, 7)
			}
			return b
		}, "header says iteration 7, rank 1"},
		{"step", func(src, dst, tag int, b []byte) []byte {
			if src == 1 && dst == 0 && tag == 1 {
				return header(b, 12, 9)
			}
			return b
		}, "step 9"},
		{"size", func(src, dst, tag int, b []byte) []byte {
			if src == 1 && dst == 0 && tag == 1 {
				return b[:100]
			}
			return b
		}, "100 bytes instead of 4096"},
		{"too short for a header", func(src, dst, tag int, b []byte) []byte {
			if src == 1 && dst == 0 && tag == 1 {
				return b[:3]
			}
			return b
		}, "3 bytes instead of 4096"},
	} {
		for _, tmpl := range []string{"1ms,1ms,transpose,B", "1ms,1ms,transpose,NB", "1ms,1ms,news,B", "1ms,1ms,news,NB"} {
			t.Run(c.name+"/"+tmpl, func(t *testing.T) {
				tp, _ := bench.ParseTemplate(tmpl)
				w := newWorld(4)
				w.corrupt = c.corrupt
				_, stats, err := runJob(context.Background(), w, Config{Template: tp, Iterations: 3}, (&recorder{}).computeFor)
				if err == nil {
					t.Fatal("the wrong message went unnoticed")
				}
				for _, want := range []string{"bench rank 0: iteration 1", "wrong message where rank 1's of iteration 1", c.want} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if stats[0].Iterations != 1 {
					t.Errorf("rank 0 completed %d iterations, want 1", stats[0].Iterations)
				}
			})
		}
	}
}

// A rank whose peers never come stops when its context is cancelled,
// wherever it waits.
func TestRunCancelledWhileCommunicating(t *testing.T) {
	for _, tmpl := range []string{"1ms,0,barrier,B", "1ms,0,transpose,B", "1ms,0,news,NB"} {
		t.Run(tmpl, func(t *testing.T) {
			tp, _ := bench.ParseTemplate(tmpl)
			w := newWorld(4) // only rank 0 runs
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			var st comm.Stats
			var err error
			fc := w.comm(0)
			go func() {
				defer close(done)
				st, err = run(ctx, fc, Config{Template: tp, Iterations: 5}, (&recorder{}).computeFor(0))
			}()
			time.Sleep(20 * time.Millisecond) // rank 0 is blocked by now (if not, it is cancelled earlier)
			cancel()
			<-done
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled", err)
			}
			if st.Iterations != 0 {
				t.Errorf("%d iterations completed without peers", st.Iterations)
			}
		})
	}
}

// Cancelling stops a compute phase too, for both kinds of work.
func TestRunCancelledWhileComputing(t *testing.T) {
	tp, _ := bench.ParseTemplate("1h,0,barrier,NB")
	for _, work := range []Work{CPU, Wall} {
		t.Run(work.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			st, err := Run(ctx, newWorld(1).comm(0), Config{Template: tp, Iterations: 1, Work: work})
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "iteration 0: compute") {
				t.Fatalf("error %v, want the compute phase's context.DeadlineExceeded", err)
			}
			if st.Iterations != 0 || st.Compute != 0 {
				t.Errorf("stats %+v after an interrupted phase", st)
			}
		})
	}
}

// A real run with real (short) work: Run's own compute functions.
func TestRunRealWork(t *testing.T) {
	tp, _ := bench.ParseTemplate("2ms,2ms,transpose,NB")
	for _, work := range []Work{CPU, Wall} {
		t.Run(work.String(), func(t *testing.T) {
			w := newWorld(3)
			_, stats, err := runJob(context.Background(), w, Config{Template: tp, Iterations: 4, Seed: 3, Work: work}, func(int) computeFunc { return work.phase() })
			if err != nil {
				t.Fatal(err)
			}
			for r, st := range stats {
				var sum time.Duration
				for i := range 4 {
					sum += tp.Compute(3, r, i)
				}
				if st.Iterations != 4 || st.Compute != int64(sum) {
					t.Errorf("rank %d: %+v, want 4 iterations and compute %v", r, st, sum)
				}
				// Without stops a phase lasts at least its time (lower bound only).
				if work == Wall && st.Wall < int64(sum) {
					t.Errorf("rank %d: wall %v shorter than its compute %v", r, time.Duration(st.Wall), sum)
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Template: bench.Template{Grain: time.Millisecond, Pattern: bench.News, Sync: bench.Blocking}, Iterations: 1}
	if err := good.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		mod  func(*Config)
		want []string
	}{
		{func(c *Config) { c.Template.Grain = 0 }, []string{"template: grain 0s must be positive"}},
		{func(c *Config) { c.Template.Pattern = "ring" }, []string{`unknown pattern "ring"`}},
		{func(c *Config) { c.Iterations = 0 }, []string{"iterations 0: must be at least 1"}},
		{func(c *Config) { c.Work = 7 }, []string{"work 7: want CPU or Wall"}},
		{func(c *Config) { c.MessageSize = HeaderSize - 1 }, []string{"message size 15: must be between 16 and 4194304"}},
		{func(c *Config) { c.MessageSize = comm.MaxMessage + 1 }, []string{"message size 4194305"}},
		{func(c *Config) { c.Iterations, c.MessageSize = -1, -1 }, []string{"iterations -1", "message size -1"}},
	} {
		cfg := good
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil {
			t.Errorf("%+v accepted", cfg)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", cfg, err, w)
			}
		}
		// Run refuses it before communicating.
		fc := newWorld(1).comm(0)
		if _, err := Run(context.Background(), fc, cfg); err == nil || len(fc.log) != 0 {
			t.Errorf("Run(%+v) = %v after %d calls", cfg, err, len(fc.log))
		}
	}
}

func TestRunBadRank(t *testing.T) {
	tp, _ := bench.ParseTemplate("1ms,0,barrier,B")
	for _, fc := range []*fakeComm{newWorld(2).comm(2), newWorld(2).comm(-1), newWorld(0).comm(0)} {
		if _, err := Run(context.Background(), fc, Config{Template: tp, Iterations: 1}); err == nil || !strings.Contains(err.Error(), "not a rank of the job") {
			t.Errorf("rank %d of %d: %v", fc.rank, fc.w.size, err)
		}
	}
}

func TestParseWork(t *testing.T) {
	for _, w := range []Work{CPU, Wall} {
		if got, err := ParseWork(strings.ToUpper(w.String())); err != nil || got != w {
			t.Errorf("ParseWork(%q) = %v, %v", w, got, err)
		}
	}
	if _, err := ParseWork("gpu"); err == nil || !strings.Contains(err.Error(), `work "gpu": want cpu or wall`) {
		t.Errorf("ParseWork(gpu): %v", err)
	}
}
