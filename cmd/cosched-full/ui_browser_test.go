package main

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/clusterkey"
	"github.com/cosched/cosched/internal/testuser"
	"github.com/cosched/cosched/localcluster"
)

// chromium is the browser the page's tests drive (Debian's chromium
// package; .ci/run installs it): its path, or the test is skipped.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the web page's browser tests skip")
	return ""
}

// browser starts a headless chromium with a fresh profile and returns its
// context. When the test ends the browser is closed and the test fails if
// any process of that profile is left.
func browser(t *testing.T) context.Context {
	t.Helper()
	exe := chromium(t)
	profile := t.TempDir()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(profile), chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		// This machine's network is closed: without these chromium's own
		// background connections are refused and it stalls.
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		eventually(t, 30*time.Second, func() error {
			if pids := processesWith(profile); len(pids) > 0 {
				return fmt.Errorf("chromium processes of profile %s left: %v", profile, pids)
			}
			return nil
		})
	})
	// The first run starts the browser, with ctx itself: a deadline on it
	// would close the browser when it passes.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return ctx
}

// processesWith lists the processes whose command line mentions s.
func processesWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// matrixView is what a test reads of the page: which rows each job's cells
// are in, the rows of the cells marked current, the slice counter, the
// queue's length.
type matrixView struct {
	Jobs    map[string][]string `json:"jobs"`
	Current []string            `json:"current"`
	Slice   int                 `json:"slice"`
	Queue   int                 `json:"queue"`
	Cells   int                 `json:"cells"`
}

const readMatrix = `(() => {
  const m = document.querySelector('[data-testid="matrix"]');
  const jobs = {};
  const cells = m ? [...m.querySelectorAll('td[data-node][data-row]')] : [];
  for (const c of cells) {
    const j = c.getAttribute('data-job');
    if (!j) continue;
    (jobs[j] ||= []);
    if (!jobs[j].includes(c.dataset.row)) jobs[j].push(c.dataset.row);
  }
  const current = [...new Set(cells.filter(c => c.getAttribute('data-current') === 'true').map(c => c.dataset.row))];
  const s = document.querySelector('[data-testid="slice"]');
  return {jobs, current, cells: cells.length, slice: parseInt(s ? s.textContent : '') || 0,
    queue: document.querySelectorAll('[data-testid="queue"] tbody tr').length};
})()`

// waitPage evaluates readMatrix until ok accepts it (a generous deadline:
// no fixed sleep decides anything).
func waitPage(t *testing.T, ctx context.Context, what string, ok func(matrixView) bool) matrixView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var v matrixView
	for {
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		got, err := chromedp.Run(ectx, chromedp.Evaluate[matrixView](readMatrix))
		cancel()
		v = got
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("page: waited 60s for %s; last view %+v (%v)", what, v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The page of a running gang cluster, in a real browser opened with
// cosched ui --url: both jobs in the matrix in different rows, the current
// row moving between them, the slice counter rising, a job's own details
// and output on its page, and a cancelled job leaving the matrix.
func TestUIBrowserMatrix(t *testing.T) {
	chromium(t)
	_, run := clusterCLI(t, "-N", "2", "--mode", "gang", "--slice", "100ms", "--mpl", "2")
	id1 := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "first", "--", "sh", "-c", "echo hello from rank $COSCHED_RANK; exec sleep 600"))
	id2 := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "second", "--", "sleep", "600"))
	t.Cleanup(func() { coschedCmd("cancel", id1, id2).Run() }) // cluster down ends them anyway
	link := strings.TrimSpace(run("ui", "--url"))
	if !strings.Contains(link, "/ui/login?token=") {
		t.Fatalf("cosched ui --url printed %q", link)
	}

	ctx := browser(t)
	nctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(nctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`[data-testid="matrix"]`))); err != nil {
		t.Fatal(err)
	}

	v := waitPage(t, ctx, "both jobs in the matrix", func(v matrixView) bool { return len(v.Jobs[id1]) > 0 && len(v.Jobs[id2]) > 0 })
	if len(v.Jobs[id1]) != 1 || len(v.Jobs[id2]) != 1 || v.Jobs[id1][0] == v.Jobs[id2][0] || v.Cells != 4 {
		t.Fatalf("jobs %s and %s should each fill one row of a 2×2 matrix, different rows: %+v", id1, id2, v)
	}
	first := v.Slice
	seen := map[string]bool{}
	waitPage(t, ctx, "the current row to move to both rows and the slice counter to rise", func(v matrixView) bool {
		if len(v.Current) > 1 {
			t.Fatalf("cells of two rows marked current at once: %+v", v)
		}
		for _, r := range v.Current {
			seen[r] = true
		}
		return seen[v.Jobs[id1][0]] && seen[v.Jobs[id2][0]] && v.Slice > first
	})
	// The timeline: each node's lane shows both rows, and the skew band.
	const readTimeline = `(() => {
	  const tl = document.querySelector('[data-testid="timeline"]');
	  const lanes = {};
	  for (const g of tl ? tl.querySelectorAll('g[data-node]') : []) lanes[g.dataset.node] = [...new Set([...g.querySelectorAll('rect[data-row]')].map(r => r.dataset.row))].sort();
	  return {lanes, band: tl ? tl.querySelectorAll('[data-testid="skew-band"] polyline').length : 0};
	})()`
	type timelineView struct {
		Lanes map[string][]string `json:"lanes"`
		Band  int                 `json:"band"`
	}
	waitJS(t, ctx, "the timeline to show rows 0 and 1 on both nodes", readTimeline, func(v timelineView) bool {
		return len(v.Lanes) == 2 && slices.Equal(v.Lanes["a0"], []string{"0", "1"}) && slices.Equal(v.Lanes["a1"], []string{"0", "1"}) && v.Band == 1
	})
	screenshot(t, ctx, "ui-matrix.png")
	// The timeline event drawn and its slices: later events are deltas,
	// checked below (two of them, 5 s apart, by the test's end).
	const readDrawn = `(() => { const tl = document.querySelector('[data-testid="timeline"]'); return {n: +(tl.dataset.n || 0), slices: +(tl.dataset.slices || 0), fetches: +(tl.dataset.fetches || 0)}; })()`
	type drawnView struct{ N, Slices, Fetches int }
	drawn := waitJS(t, ctx, "the timeline's event number", readDrawn, func(v drawnView) bool { return v.N > 0 && v.Slices > 0 })

	// A job's page: its command, since it is ours.
	if err := run2(ctx, chromedp.Click(chromedp.CSS(`td[data-job="`+id1+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-command"]`))); err != nil {
		t.Fatal(err)
	}
	// (Read in the page: the job's part is redrawn at every state event.)
	waitJS(t, ctx, "the job's command on its page", `(() => { const c = document.querySelector('[data-testid="job-command"]'); return c ? c.textContent : ''; })()`,
		func(command string) bool { return strings.Contains(command, "exec sleep 600") })
	// Its ranks' output, rank 1's from the other node.
	deadline := time.Now().Add(60 * time.Second)
	for {
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := chromedp.Run(ectx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-testid="output"]')].map(p => p.textContent).join("|")`))
		cancel()
		if err == nil && strings.Contains(out, "hello from rank 0") && strings.Contains(out, "hello from rank 1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job page output %q (%v), want both ranks' lines", out, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Its ranks now, slice by slice: with two rows each reading finds
	// them running or stopped, and the readings find both; its cgroups'
	// CPU and memory on each node.
	type liveView struct {
		Ranks  int      `json:"ranks"`
		States []string `json:"states"`
		Cgroup []string `json:"cgroup"`
		Memory []int64  `json:"memory"`
		CPU    []int64  `json:"cpu"`
	}
	const readLive = `(() => {
	  const rows = [...document.querySelectorAll('[data-testid="rank-states"] tr[data-rank]')];
	  const use = [...document.querySelectorAll('[data-testid="job-usage"] tr[data-node]')];
	  return {ranks: rows.length, states: [...new Set(rows.flatMap(r => [...r.querySelectorAll('.strip i')].map(i => i.className)))],
	    cgroup: use.map(u => u.dataset.cgroup || ''), memory: use.map(u => +(u.dataset.memory || 0)), cpu: use.map(u => +(u.dataset.cpuNs || 0))};
	})()`
	lv := waitJS(t, ctx, "both ranks seen running and stopped slice by slice, and each node's cgroup figures", readLive, func(v liveView) bool {
		return v.Ranks == 2 && slices.Contains(v.States, "st-running") && slices.Contains(v.States, "st-stopped") && len(v.Cgroup) == 2
	})
	for i, cg := range lv.Cgroup {
		switch {
		case cg == "false":
			t.Logf("node %d runs without cgroups: no CPU or memory figures", i)
		case lv.Memory[i] <= 0 || lv.CPU[i] <= 0:
			t.Errorf("node %d: job's memory %d bytes, CPU %d ns: want both above 0 (the ranks' shell ran)", i, lv.Memory[i], lv.CPU[i])
		}
	}
	screenshot(t, ctx, "ui-job.png")

	run("cancel", id2)
	waitPage(t, ctx, "the cancelled job to leave the matrix and the queue", func(v matrixView) bool {
		return len(v.Jobs[id2]) == 0 && len(v.Jobs[id1]) > 0 && v.Queue == 1
	})
	// Two timeline deltas later the page drew more slices (at 100 ms
	// slices the timeline's 1200 take two minutes to fill).
	grown := waitJS(t, ctx, "the timeline to grow across two more events", readDrawn, func(v drawnView) bool {
		return v.N >= drawn.N+2 && v.Slices > drawn.Slices
	})
	t.Logf("timeline: event %d with %d slices, then %d with %d; full forms fetched after a gap: %d", drawn.N, drawn.Slices, grown.N, grown.Slices, grown.Fetches)
}

// run2 runs actions with a generous deadline (a loaded host: only a
// failure waits this long).
func run2(ctx context.Context, actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// screenshot saves the page to $COSCHED_UI_SCREENSHOTS/name when that is
// set (how docs/ui-*.png are made).
func screenshot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("COSCHED_UI_SCREENSHOTS")
	if dir == "" {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cosched ui --results on a small sweep's folder: its first line is the
// address; the page draws a plot per metric, each with a line per mode;
// a legend click hides a mode; SIGINT stops it promptly and cleanly.
func TestUIBrowserResults(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	if out, err := coschedCmd("sim", "sweep", "--load", "0.2:1.0:0.2", "--jobs", "100", "--parallel", "1", "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("sim sweep: %v\n%s", err, out)
	}
	cmd := coschedCmd("ui", "--results", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		// Drain and wait: the test never leaves the server behind.
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("first line %q (%v), want the page's address", line, err)
	}
	addr := strings.TrimSpace(line)

	ctx := browser(t)
	if err := run2(ctx, chromedp.Navigate(addr), chromedp.WaitVisible(chromedp.CSS(`[data-testid="plot"] svg path`))); err != nil {
		t.Fatal(err)
	}
	type view struct {
		Plots  int      `json:"plots"`
		Series []string `json:"series"`
		Paths  int      `json:"paths"`
	}
	const read = `(() => {
	  const plots = [...document.querySelectorAll('[data-testid="plot"]')];
	  const first = plots[0];
	  return {plots: plots.length,
	    series: first ? [...first.querySelectorAll('g[data-series]')].map(g => g.dataset.series) : [],
	    paths: first ? first.querySelectorAll('g[data-series] path').length : 0};
	})()`
	wait := func(what string, ok func(view) bool) view {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
			v, err := chromedp.Run(ectx, chromedp.Evaluate[view](read))
			cancel()
			if err == nil && ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("results page: waited 60s for %s; last %+v (%v)", what, v, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	v := wait("four plots with a line per mode", func(v view) bool { return v.Plots >= 4 && len(v.Series) == 3 && v.Paths == 3 })
	if !slices.Equal(slices.Sorted(slices.Values(v.Series)), []string{"bcs", "gang", "space"}) {
		t.Errorf("series %v, want bcs, gang, space", v.Series)
	}
	screenshot(t, ctx, "ui-results.png")
	if err := run2(ctx, chromedp.Click(chromedp.CSS(`[data-testid="plot"] g[data-legend="gang"]`))); err != nil {
		t.Fatal(err)
	}
	wait("gang hidden by its legend", func(v view) bool { return len(v.Series) == 2 && !slices.Contains(v.Series, "gang") })

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the clean-up
		if err != nil {
			t.Errorf("ui --results after SIGINT: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ui --results still serving 30 s after SIGINT")
	}
}

// waitJS evaluates js until ok accepts its value (a generous deadline: no
// fixed sleep decides anything).
func waitJS[T any](t *testing.T, ctx context.Context, what, js string, ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a loaded host: only a failure waits this long
	for {
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		v, err := chromedp.Run(ectx, chromedp.Evaluate[T](js))
		cancel()
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("page: waited 2m for %s; last %+v (%v)", what, v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browseUI logs a browser in through cosched ui --url (run is clusterCLI's)
// and waits for the matrix.
func browseUI(t *testing.T, run func(args ...string) string, args ...string) context.Context {
	t.Helper()
	link := strings.TrimSpace(run(append([]string{"ui", "--url"}, args...)...))
	if !strings.Contains(link, "/ui/login?token=") {
		t.Fatalf("cosched ui --url printed %q", link)
	}
	ctx := browser(t)
	if err := run2(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`[data-testid="matrix"]`))); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// Under BCS a job whose ranks block in every exchange lends their
// processors to the other row's job: the page marks the cells that lent
// (data-lent="true", in the blocking job's row, on its cells).
func TestUIBrowserSlotReuse(t *testing.T) {
	chromium(t)
	_, run := clusterCLI(t, "-N", "2", "--mode", "bcs", "--slice", "20ms", "--mpl", "2")
	blocking := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "exchange",
		"--bench", "5ms,2ms,transpose,B", "--iterations", "100000", "--work", "wall"))
	computing := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "compute",
		"--bench", "20ms,0ms,barrier,NB", "--iterations", "100000", "--work", "wall"))
	t.Cleanup(func() { coschedCmd("cancel", blocking, computing).Run() }) // cluster down ends them anyway
	ctx := browseUI(t, run)
	type cell struct {
		Job  string `json:"job"`
		Row  string `json:"row"`
		Lent bool   `json:"lent"`
	}
	const read = `[...document.querySelectorAll('[data-testid="matrix"] td[data-lends]')].map(c =>
	  ({job: c.getAttribute('data-job'), row: c.dataset.row, lent: c.getAttribute('data-lent') === 'true'}))`
	cells := waitJS(t, ctx, "a cell of the blocking job marked as having lent its processor", read, func(cs []cell) bool {
		return slices.ContainsFunc(cs, func(c cell) bool { return c.Job == blocking && c.Lent })
	})
	screenshot(t, ctx, "ui-bcs.png")
	t.Logf("cells that lent: %+v", cells)
}

// A page left open on a compute agent through a controller failover: the
// leader (a controller-only agent) is killed; the page stays connected,
// shows the new leader, keeps the job in the matrix and the slices
// counting.
func TestUIBrowserFailover(t *testing.T) {
	chromium(t)
	dir, run := clusterCLI(t, "--timeout", "2m", "-N", "2", "--controllers", "3", "--mode", "gang", "--slice", "100ms", "--mpl", "2")
	lc, err := localcluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var a0 localcluster.Agent
	for _, a := range lc.Agents {
		if a.Name == "a0" {
			a0 = a
		}
	}
	if a0.API == "" {
		t.Fatalf("no agent a0 in %+v", lc.Agents)
	}
	id := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "survivor", "--", "sleep", "600"))
	t.Cleanup(func() { coschedCmd("cancel", id).Run() })
	ctx := browseUI(t, run, "--addr", a0.API)

	type view struct {
		Leader string `json:"leader"`
		Job    bool   `json:"job"`
		Slice  int    `json:"slice"`
		Conn   string `json:"conn"`
		Stale  bool   `json:"stale"`
	}
	read := `(() => {
	  const lead = [...document.querySelectorAll('[data-testid="nodes"] tbody tr')].find(r => r.cells[2] && r.cells[2].textContent.includes('leader'));
	  const s = document.querySelector('[data-testid="slice"]');
	  return {leader: lead ? lead.dataset.node : '', job: !!document.querySelector('[data-testid="matrix"] td[data-job="` + id + `"]'),
	    slice: parseInt(s ? s.textContent : '') || 0, conn: document.getElementById('conn').textContent,
	    stale: !document.getElementById('stale').hidden};
	})()`
	before := waitJS(t, ctx, "the job in the matrix and a leader among the nodes", read, func(v view) bool {
		return v.Job && strings.HasPrefix(v.Leader, "c") && v.Slice > 0 && v.Conn == "live"
	})
	var victim localcluster.Agent
	for _, a := range lc.Agents {
		if a.Name == before.Leader {
			victim = a
		}
	}
	if victim.PID == 0 {
		t.Fatalf("leader %s is not in the record %+v", before.Leader, lc.Agents)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Through the failover: another leader, the job still placed, the
	// slices counting again (twice, so the counter moves under the new
	// leader), the stream of a0 still live.
	after := waitJS(t, ctx, "another leader shown, the job still in the matrix, the page live and current", read, func(v view) bool {
		return v.Leader != "" && v.Leader != before.Leader && v.Job && v.Conn == "live" && !v.Stale && v.Slice != before.Slice
	})
	waitJS(t, ctx, "the slice counter moving under the new leader", read, func(v view) bool {
		return v.Slice != after.Slice && v.Job && v.Leader == after.Leader
	})
	screenshot(t, ctx, "ui-failover.png")
	t.Logf("leader %s killed; %s leads; slice %d then %d", before.Leader, after.Leader, before.Slice, after.Slice)
}

// Another Unix user's page: root's job is in the matrix and the queue,
// but its page shows neither its command nor its output, only why.
func TestUIBrowserAnotherUser(t *testing.T) {
	chromium(t)
	u := testuser.Add(t, "cui")
	dir, run := clusterCLI(t, "-N", "2", "--mode", "gang", "--slice", "100ms", "--mpl", "2")
	id := strings.TrimSpace(run("submit", "--parsable", "-n", "2", "-t", "10", "-J", "roots", "--",
		"sh", "-c", "echo secret-output-$COSCHED_RANK; exec sleep 600 # secret-command"))
	t.Cleanup(func() { coschedCmd("cancel", id).Run() })
	lc, err := localcluster.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	key, err := clusterkey.Load(localcluster.KeyFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	// The user's own login link, with a token of theirs (what `cosched ui
	// --url` gets when they run it).
	cl := api.NewClient(lc.API)
	cl.Token = func() (string, error) {
		return key.Mint(u.UID, u.GID, time.Now(), clusterkey.DefaultTTL, crand.Reader)
	}
	lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	login, err := cl.UILogin(lctx)
	if err != nil {
		t.Fatal(err)
	}
	ctx := browser(t)
	if err := run2(ctx, chromedp.Navigate(login.URL), chromedp.WaitVisible(chromedp.CSS(`[data-testid="matrix"]`))); err != nil {
		t.Fatal(err)
	}
	type view struct {
		Me     string `json:"me"`
		Cells  int    `json:"cells"`
		Queued bool   `json:"queued"`
	}
	waitJS(t, ctx, "root's job placed in the matrix and queued, on "+u.Name+"'s page", `(() => ({
	  me: document.getElementById('me').textContent,
	  cells: document.querySelectorAll('[data-testid="matrix"] td[data-job="`+id+`"]').length,
	  queued: !!document.querySelector('[data-testid="queue"] tbody tr[data-job="`+id+`"]')}))()`,
		func(v view) bool { return v.Me == u.Name && v.Cells >= 2 && v.Queued })
	if err := run2(ctx, chromedp.Click(chromedp.CSS(`td[data-job="`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-denied"]`))); err != nil {
		t.Fatal(err)
	}
	type jobView struct {
		Denied  string `json:"denied"`
		Command int    `json:"command"`
		Output  int    `json:"output"`
		Secret  bool   `json:"secret"`
	}
	v := waitJS(t, ctx, "the job page's denial", `(() => ({
	  denied: document.querySelector('[data-testid="job-denied"]').textContent,
	  command: document.querySelectorAll('[data-testid="job-command"]').length,
	  output: document.querySelectorAll('[data-testid="output"], [data-testid="rank-states"]').length,
	  secret: document.documentElement.outerHTML.includes('secret-')}))()`,
		func(v jobView) bool { return v.Denied != "" })
	if !strings.Contains(v.Denied, "root") || v.Command != 0 || v.Output != 0 || v.Secret {
		t.Errorf("%s's page of root's job: %+v, want a denial naming root and no command, output or ranks", u.Name, v)
	}
	screenshot(t, ctx, "ui-other-user.png")
}
