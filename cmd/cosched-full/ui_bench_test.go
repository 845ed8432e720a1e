package main

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/localcluster"
	"github.com/cosched/cosched/strobe"
	"github.com/cosched/cosched/ui"
)

// uiBenchPages is how many pages the loaded windows hold open (issue 24:
// "many open pages, say 50").
const uiBenchPages = 50

// uiBenchWindow is how long each window measures (1000 slices at 10 ms).
const uiBenchWindow = 10 * time.Second

// BenchmarkUIPagesSkew: does a crowd of open web pages delay a strobe? A
// 3-agent gang cluster (`cosched cluster up`, real processes) at 10 ms
// slices and MPL 2 time-shares two jobs; the switch skew across the
// agents (p50/p99 of every slice, from their slice records as `cosched
// bench strobe` computes it) and the CPU of agent a1 (whose API serves the
// pages) are measured over windows with no page and with 50 authenticated
// event streams on a1 read continuously (and with one), and with no page
// but the statistics reading of a page's hub on its own, as it was before
// since= and as it is now: alternating 0, full, since, 1, 50 twice. Run
// without -race:
//
//	go test -run '^$' -bench UIPagesSkew -benchtime 1x ./cmd/cosched
func BenchmarkUIPagesSkew(b *testing.B) {
	dir, run := clusterCLI(b, "-N", "3", "--mode", "gang", "--slice", "10ms", "--mpl", "2")
	var ids []string
	for i := range 2 {
		ids = append(ids, strings.TrimSpace(run("submit", "--parsable", "-n", "3", "-t", "30", "-J", "job"+strconv.Itoa(i), "--", "sleep", "3600")))
	}
	lc, err := localcluster.Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	key, err := clusterkey.Load(localcluster.KeyFile(dir))
	if err != nil {
		b.Fatal(err)
	}
	var served localcluster.Agent
	clients := map[string]*api.Client{}
	var others []int
	for _, a := range lc.Agents {
		clients[a.Name] = lc.ClientFor(a.API)
		if a.Name == "a1" {
			served = a
		} else {
			others = append(others, a.PID)
		}
	}
	if served.PID == 0 {
		b.Fatalf("no agent a1 in %+v", lc.Agents)
	}
	pids := append([]int{served.PID}, others...) // a1 first
	ctx := context.Background()
	ctl := lc.ClientFor(lc.API)
	waitRunning(b, ctl, ids)
	time.Sleep(time.Second) // past the jobs' start

	// Each page logs in on its own (a login link spent for a session
	// cookie), as a browser would.
	tokenClient := api.NewClient(served.API)
	tokenClient.Token = func() (string, error) {
		return key.Mint(uint32(os.Geteuid()), uint32(os.Getegid()), time.Now(), clusterkey.DefaultTTL, crand.Reader)
	}
	noRedirect := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cookies := make([]string, uiBenchPages)
	for i := range cookies {
		cookies[i] = uiSession(b, ctx, tokenClient, noRedirect, served.API)
	}

	type totals struct {
		records map[string][]strobe.SliceRecord
		cpu     time.Duration // a1's
		all     time.Duration // the agents'
		wall    time.Duration
	}
	// One page too: what any open page costs apart from what each page
	// adds. And no page but the statistics reading an open page's hub
	// makes every 5 s (GET /v1/nodes?stats=1 on a1), as it was before
	// since= (every agent's whole history, "full") and as it is now (the
	// records after the last reading's, "since"): what that reading costs
	// on its own, before and after, in the same run.
	type window struct {
		name   string
		pages  int
		reader string // "", "full" or "since"
	}
	kinds := []window{{"0pages", 0, ""}, {"full-reading", 0, "full"}, {"since-reading", 0, "since"}, {"1pages", 1, ""}, {"50pages", uiBenchPages, ""}}
	sum := map[string]*totals{}
	for _, k := range kinds {
		sum[k.name] = &totals{records: map[string][]strobe.SliceRecord{}}
	}
	b.ResetTimer()
	for range b.N {
		for _, w := range slices.Concat(kinds, kinds) {
			stop := openPages(b, ctx, served.API, cookies[:w.pages])
			stopReader := statsReader(ctx, clients["a1"], w.reader)
			time.Sleep(time.Second) // the streams' first events sent
			recs, cpus, wall := measureWindow(b, ctx, clients, pids, uiBenchWindow)
			cpu, all := cpus[0], time.Duration(0) // a1's, the cluster's
			for _, c := range cpus {
				all += c
			}
			read := stop()
			got := stopReader()
			sk := strobe.Skew(recs)
			b.Logf("window %s: skew p50 %v p99 %v over %d slices, CPU %.2f%% of a core for a1, %.2f%% for the 3 agents, %d KB read by the pages, %d KB by the reader; strobe-to-switch p99 %s",
				w.name, sk.Skew.P50, sk.Skew.P99, sk.Slices, 100*float64(cpu)/float64(wall), 100*float64(all)/float64(wall), read>>10, got>>10, latencyP99(recs))
			t := sum[w.name]
			for name, rs := range recs {
				t.records[name] = append(t.records[name], rs...)
			}
			t.cpu += cpu
			t.all += all
			t.wall += wall
		}
	}
	b.StopTimer()
	// What one statistics reading costs the agents, in CPU time (not
	// wall time: other work on the host does not change it), full and with
	// a cursor 500 slices back (the 5 s between two readings at 10 ms);
	// after the windows, when every agent keeps its 4096 records.
	perReading := map[string]time.Duration{}
	for _, how := range []string{"full", "since"} {
		cpu, size := readingCost(b, ctx, clients, pids, how, 20)
		perReading[how] = cpu
		b.ReportMetric(float64(cpu)/float64(time.Millisecond), "agents-cpu-ms/"+how+"-reading")
		b.ReportMetric(float64(size)/1024, "KB/"+how+"-reading")
		b.Logf("one %s reading: %v of the agents' CPU, %d KB to the reader", how, cpu, size>>10)
	}
	b.ReportMetric(float64(perReading["full"])/float64(perReading["since"]), "agents-cpu-ratio-full/since-reading")
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	p50, p99, cpu, all := map[string]time.Duration{}, map[string]time.Duration{}, map[string]float64{}, map[string]float64{}
	for _, w := range kinds {
		t := sum[w.name]
		sk := strobe.Skew(t.records)
		if sk.Slices == 0 {
			b.Fatalf("%s: no slice seen by two agents", w.name)
		}
		p50[w.name], p99[w.name] = sk.Skew.P50, sk.Skew.P99
		cpu[w.name] = 100 * float64(t.cpu) / float64(t.wall)
		all[w.name] = 100 * float64(t.all) / float64(t.wall)
		b.ReportMetric(us(p50[w.name]), "skew-p50-us/"+w.name)
		b.ReportMetric(us(p99[w.name]), "skew-p99-us/"+w.name)
		b.ReportMetric(cpu[w.name], "a1-cpu-%/"+w.name)
		b.ReportMetric(all[w.name], "agents-cpu-%/"+w.name)
		b.Logf("%s: %d slices, skew p50 %v p99 %v max %v, CPU %.2f%% of a core for a1, %.2f%% for the agents", w.name, sk.Slices, sk.Skew.P50, sk.Skew.P99, sk.Skew.Max, cpu[w.name], all[w.name])
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	b.ReportMetric(ratio(float64(p50["50pages"]), float64(p50["0pages"])), "skew-p50-ratio-50/0")
	b.ReportMetric(ratio(cpu["50pages"], cpu["0pages"]), "a1-cpu-ratio-50/0")
	for _, w := range kinds[1:] {
		b.ReportMetric(ratio(all[w.name], all["0pages"]), "agents-cpu-ratio-"+w.name+"/0")
	}
	for _, w := range kinds[1:] {
		b.ReportMetric(ratio(float64(p99[w.name]), float64(p99["0pages"])), "skew-p99-ratio-"+w.name+"/0")
	}
}

// readingCost makes n statistics readings through agent a1 back to back
// and returns the CPU time the agents (pids) spent per reading, and the
// size of a reading's report: "full" as the hub read before since=, or
// "since" with a cursor 500 slices behind each agent's newest.
func readingCost(b *testing.B, ctx context.Context, agents map[string]*api.Client, pids []int, how string, n int) (time.Duration, int64) {
	b.Helper()
	cursor := api.Cursor{}
	for name, c := range agents {
		st, err := c.LocalStats(ctx, ^uint64(0))
		if err != nil {
			b.Fatalf("agent %s's stats: %v", name, err)
		}
		cursor[name] = api.RecordID{Epoch: st.Strobe.Epoch, Seq: st.Strobe.LastSeq - min(st.Strobe.LastSeq, 500)}
	}
	var cpu time.Duration
	for _, pid := range pids {
		cpu -= procCPU(b, pid)
	}
	var size int64
	for range n {
		var rep api.NodesReport
		var err error
		if how == "full" {
			rep, err = agents["a1"].NodesRecords(ctx, ui.TimelineSlices)
		} else {
			rep, err = agents["a1"].NodesSince(ctx, ui.TimelineSlices, cursor)
		}
		if err != nil {
			b.Fatalf("%s reading: %v", how, err)
		}
		j, _ := json.Marshal(rep)
		size = int64(len(j))
	}
	for _, pid := range pids {
		cpu += procCPU(b, pid)
	}
	return cpu / time.Duration(n), size
}

// statsReader reads GET /v1/nodes?stats=1 through c every 5 s (an open
// page's hub's statistics reading, ui.DefaultHubConfig's StatsEvery) until
// stop, which says how many bytes of JSON it got: "full" asks for every
// agent's last ui.TimelineSlices records every time (as the hub did
// before since=), "since" for the records after the last reading's
// cursor, "" reads nothing. It returns after the first reading; stop's
// count leaves it out.
func statsReader(ctx context.Context, c *api.Client, how string) (stop func() int64) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var got atomic.Int64
	var once sync.Once
	first := make(chan struct{}) // closed after the first reading (a full one either way): before the window
	wg.Go(func() {
		defer once.Do(func() { close(first) })
		var cursor api.Cursor
		for i := 0; how != ""; i++ {
			var rep api.NodesReport
			var err error
			if how == "full" {
				rep, err = c.NodesRecords(ctx, ui.TimelineSlices)
			} else {
				rep, err = c.NodesSince(ctx, ui.TimelineSlices, cursor)
				if err == nil {
					cursor, _ = api.ParseCursor(rep.Cursor)
				}
			}
			if b, _ := json.Marshal(rep); err == nil && i > 0 {
				got.Add(int64(len(b))) // about what came over the wire
			}
			once.Do(func() { close(first) })
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
			}
		}
	})
	<-first
	return func() int64 {
		cancel()
		wg.Wait()
		return got.Load()
	}
}

// latencyP99 is each agent's strobe-to-switch p99 over recs: which agent
// the skew's tail comes from.
func latencyP99(recs map[string][]strobe.SliceRecord) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(recs)) {
		var lat []time.Duration
		for _, r := range recs[name] {
			lat = append(lat, time.Duration(r.SwitchedMono-r.SentMono))
		}
		slices.Sort(lat)
		if len(lat) > 0 {
			out = append(out, fmt.Sprintf("%s %v", name, lat[len(lat)*99/100]))
		}
	}
	return strings.Join(out, ", ")
}

// waitRunning waits until every job of ids runs.
func waitRunning(b *testing.B, c *api.Client, ids []string) {
	b.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		jobs, err := c.Jobs(context.Background(), true)
		running := 0
		for _, j := range jobs {
			for _, id := range ids {
				if strconv.FormatInt(j.ID, 10) == id && j.State == api.Running {
					running++
				}
			}
		}
		if err == nil && running == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("jobs %v not all running after 60s (%d running, %v)", ids, running, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// uiSession is a session cookie of the page of the agent at addr: a login
// link (cosched ui --url's) spent.
func uiSession(b *testing.B, ctx context.Context, c *api.Client, hc *http.Client, addr string) string {
	b.Helper()
	l, err := c.UILogin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := hc.Get(l.URL)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == ui.CookieName(addr) {
			return ck.Value
		}
	}
	b.Fatalf("login link %s: %s and no session cookie", l.URL, resp.Status)
	return ""
}

// openPages opens an event stream per cookie on the agent at addr, each
// read continuously until stop; it returns once every stream has its
// first bytes. stop says how many bytes the pages read in all.
func openPages(b *testing.B, ctx context.Context, addr string, cookies []string) (stop func() int64) {
	b.Helper()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var read atomic.Int64
	started := make(chan error, len(cookies))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: -1}}
	for _, ck := range cookies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/ui/events", nil)
			req.AddCookie(&http.Cookie{Name: ui.CookieName(addr), Value: ck})
			resp, err := hc.Do(req)
			if err != nil {
				started <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				started <- fmt.Errorf("GET /ui/events: %s", resp.Status)
				return
			}
			buf := make([]byte, 32<<10)
			n, err := resp.Body.Read(buf)
			started <- err
			m, _ := io.CopyBuffer(io.Discard, resp.Body, buf) // until stop
			read.Add(int64(n) + m)
		}()
	}
	stop = func() int64 {
		cancel()
		wg.Wait()
		return read.Load()
	}
	for range cookies {
		if err := <-started; err != nil {
			stop()
			b.Fatal(err)
		}
	}
	return stop
}

// measureWindow waits d and returns every agent's slice records of that
// window (the current controller epoch's), and the CPU time each process
// of pids used meanwhile, over the wall time it was read across.
func measureWindow(b *testing.B, ctx context.Context, agents map[string]*api.Client, pids []int, d time.Duration) (map[string][]strobe.SliceRecord, []time.Duration, time.Duration) {
	b.Helper()
	since := map[string]uint64{}
	epoch := map[string]uint64{}
	for name, c := range agents {
		st, err := c.LocalStats(ctx, ^uint64(0)) // no records: where they are
		if err != nil {
			b.Fatalf("agent %s's stats: %v", name, err)
		}
		since[name], epoch[name] = st.Strobe.LastSeq, st.Strobe.Epoch
	}
	cpu := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu[i] = -procCPU(b, pid)
	}
	t0 := time.Now()
	time.Sleep(d)
	t1 := time.Now()
	for i, pid := range pids {
		cpu[i] += procCPU(b, pid)
	}
	recs := map[string][]strobe.SliceRecord{}
	for name, c := range agents {
		st, err := c.LocalStats(ctx, since[name])
		if err != nil {
			b.Fatalf("agent %s's stats: %v", name, err)
		}
		for _, r := range st.Records {
			if r.Epoch == epoch[name] && r.Seq > since[name] {
				recs[name] = append(recs[name], r)
			}
		}
	}
	return recs, cpu, t1.Sub(t0)
}

// procCPU is the user and system CPU time process pid used so far
// (/proc/PID/stat, in clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command (which may hold spaces), from the state (3).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, raw)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
