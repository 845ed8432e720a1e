package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/cosched/cosched/api"
	"github.com/cosched/cosched/comm/relay"
	"github.com/cosched/cosched/node/journal"
	"github.com/cosched/cosched/strobe"
	"github.com/cosched/cosched/telemetry"
)

// registerMetrics exposes the agent's counters on /metrics. Values are
// read when scraped, from the follower's and controller's own state, so
// there is one source of truth and no metric to keep in step.
func (a *Agent) registerMetrics() {
	r := a.metrics
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	labels := prometheus.Labels{"node": a.cfg.Name}
	counter := func(name, help string, f func(strobe.Stats) uint64) {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_" + name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f(a.follower.Stats())) }))
	}
	gauge := func(name, help string, f func() float64) {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cosched_" + name, Help: help, ConstLabels: labels}, f))
	}
	a.authFailures = prometheus.NewCounter(prometheus.CounterOpts{Name: "cosched_api_unauthenticated_total",
		Help: "API requests refused 401: no, malformed, expired or forged credential.", ConstLabels: labels})
	a.authDenials = prometheus.NewCounter(prometheus.CounterOpts{Name: "cosched_api_forbidden_total",
		Help: "API requests refused 403: another user's job, or a user this agent cannot run jobs for.", ConstLabels: labels})
	a.controllersRemoved = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cosched_controllers_removed_total",
		Help: "Controllers this agent, leading, removed from the raft group (by: operator, remove-peer; autopilot, --dead-controller-after).", ConstLabels: labels}, []string{"by"})
	r.MustRegister(a.authFailures, a.authDenials, a.controllersRemoved)
	for _, l := range []struct {
		link string
		f    func() uint64
	}{{"control", a.ctlAuth.refusals}, {"relay", func() uint64 { return a.relay.Stats().Refused }}} {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_connections_refused_total",
			Help:        "Connections from other nodes refused: the peer did not prove it holds the cluster key (link: control or relay).",
			ConstLabels: prometheus.Labels{"node": a.cfg.Name, "link": l.link}}, func() float64 { return float64(l.f()) }))
	}
	counter("strobes_applied_total", "Strobes this agent applied (row switches).", func(s strobe.Stats) uint64 { return s.Applied })
	counter("strobes_lost_total", "Strobes never received (gaps in the slice sequence).", func(s strobe.Stats) uint64 { return s.Lost })
	counter("strobes_late_total", "Strobes received out of order or twice, dropped.", func(s strobe.Stats) uint64 { return s.Late })
	counter("packets_malformed_total", "Strobe or heartbeat packets that did not decode, dropped.", func(s strobe.Stats) uint64 { return s.Malformed + s.Unknown })
	for _, kind := range []string{"strobe", "heartbeat"} {
		kindLabels := prometheus.Labels{"node": a.cfg.Name, "kind": kind}
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_packets_forged_total", ConstLabels: kindLabels,
			Help: "Strobe or heartbeat packets not sealed with the cluster key (forged, tampered with, or from an agent without the key), dropped; kind is the socket they came to."},
			func() float64 {
				s := a.follower.Stats()
				return float64(map[string]uint64{"strobe": s.StrobesForged, "heartbeat": s.HeartbeatsForged}[kind])
			}))
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_packets_replayed_total", ConstLabels: kindLabels,
			Help: "Strobes or heartbeats sealed with the cluster key but replayed (a sequence number seen before or too old), dropped."},
			func() float64 {
				s := a.follower.Stats()
				return float64(map[string]uint64{"strobe": s.StrobesReplayed, "heartbeat": s.HeartbeatsReplayed}[kind])
			}))
	}
	counter("heartbeats_sent_total", "Heartbeats sent to other agents.", func(s strobe.Stats) uint64 { return s.HeartbeatsSent })
	counter("heartbeats_received_total", "Heartbeats received from other agents.", func(s strobe.Stats) uint64 { return s.HeartbeatsReceived })
	secs := func(d time.Duration) float64 { return d.Seconds() }
	gauge("strobe_to_switch_p50_seconds", "Median time from the controller sending a strobe to this agent finishing the switch (recent slices).",
		func() float64 { return secs(a.follower.Stats().Latency.P50) })
	gauge("strobe_to_switch_p99_seconds", "99th percentile strobe-to-switch latency (recent slices).",
		func() float64 { return secs(a.follower.Stats().Latency.P99) })
	gauge("switch_cost_p50_seconds", "Median time spent stopping and continuing ranks at a switch (recent slices).",
		func() float64 { return secs(a.follower.Stats().SwitchCost.P50) })
	gauge("switch_cost_p99_seconds", "99th percentile switch cost (recent slices).",
		func() float64 { return secs(a.follower.Stats().SwitchCost.P99) })
	gauge("jobs_local", "Jobs with ranks on this agent.", func() float64 { return float64(len(a.sw.jobIDs())) })
	r.MustRegister(newCgroupCollector(a.cg, a.cfg.Name))
	relayCounter := func(name, help string, f func(relay.Stats) uint64) {
		r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_relay_" + name, Help: help, ConstLabels: labels},
			func() float64 { return float64(f(a.relay.Stats())) }))
	}
	relayCounter("sent_total", "Messages the local ranks handed to the relay.", func(s relay.Stats) uint64 { return s.Sent })
	relayCounter("sent_bytes_total", "Payload bytes the local ranks handed to the relay.", func(s relay.Stats) uint64 { return s.SentBytes })
	relayCounter("delivered_total", "Messages delivered to local ranks.", func(s relay.Stats) uint64 { return s.Delivered })
	relayCounter("forwarded_total", "Messages sent to other agents' relays.", func(s relay.Stats) uint64 { return s.Forwarded })
	relayCounter("received_total", "Messages received from other agents' relays.", func(s relay.Stats) uint64 { return s.Received })
	relayCounter("dropped_total", "Messages dropped: for ended jobs, unknown ranks, or beyond the hold limit.", func(s relay.Stats) uint64 { return s.Dropped })
	relayCounter("slice_transfers_deferred_total", "BCS slices whose transfer left messages for later slices (h_max).", func(s relay.Stats) uint64 { return s.Deferred })
	relayCounter("heartbeat_timeouts_total", "BCS transfers started without every peer's heartbeat.", func(s relay.Stats) uint64 { return s.HeartbeatWaits })
	relayCounter("ranks_refused_total", "Rank connections refused: the process runs as another user than the job's ranks.", func(s relay.Stats) uint64 { return s.RanksRefused })
	relayCounter("barriers_total", "Barriers released by this relay.", func(s relay.Stats) uint64 { return s.Barriers })
	r.MustRegister(newRelayJobCollector(a.relay, labels))
	gauge("relay_outbox", "BCS messages waiting for a slice transfer.", func() float64 { return float64(a.relay.Stats().Outbox) })
	gauge("ranks_blocked", "Local ranks blocked in communication.", func() float64 { return float64(a.relay.Stats().Blocked) })
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_slot_reuses_total", Help: "Ranks continued in another row's slice because that slice's rank was blocked (BCS process-level slot reuse).", ConstLabels: labels},
		func() float64 { return float64(a.sw.slotReuses()) }))
	r.MustRegister(leaderCollector{a: a, desc: prometheus.NewDesc("cosched_controller_leader_info",
		"The agent whose controller leads (label leader; this agent's view; absent while none is known).", []string{"leader"}, labels)})
	if !a.cfg.Controller {
		return
	}
	journalStat := func(f func(journal.Stats) float64) func() float64 {
		return func() float64 {
			st, ok := a.journalStats()
			if !ok {
				return 0
			}
			return f(st)
		}
	}
	gauge("controller_leading", "1 while this agent's controller leads the controllers' group, else 0.",
		func() float64 {
			if a.controller() != nil {
				return 1
			}
			return 0
		})
	gauge("journal_bytes", "Size of this controller's journal on disk (log and snapshots).",
		journalStat(func(s journal.Stats) float64 { return float64(s.LogBytes + s.SnapshotBytes) }))
	gauge("journal_last_index", "Index of the last entry in this controller's journal.",
		journalStat(func(s journal.Stats) float64 { return float64(s.LastIndex) }))
	gauge("controller_term", "The controllers' raft term (grows with every election).",
		journalStat(func(s journal.Stats) float64 { return float64(s.Term) }))
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_controller_failovers_total",
		Help: "Leader changes this controller has seen since it started (the first leader is not one).", ConstLabels: labels},
		journalStat(func(s journal.Stats) float64 { return float64(s.Failovers) })))
	ctrlStat := func(f func(api.ClusterStats) float64) func() float64 {
		return func() float64 {
			c := a.controller()
			if c == nil {
				return 0
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			s, err := c.Stats(ctx)
			if err != nil {
				return 0
			}
			return f(s)
		}
	}
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_strobes_sent_total", Help: "Slices the controller started (strobes sent).", ConstLabels: labels},
		ctrlStat(func(s api.ClusterStats) float64 { return float64(s.Ticks.Ticks) })))
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_slice_overruns_total", Help: "Slices whose strobe went out more than a tenth of a slice late.", ConstLabels: labels},
		ctrlStat(func(s api.ClusterStats) float64 { return float64(s.Ticks.Overruns) })))
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_slices_skipped_total", Help: "Slice deadlines skipped because the controller overran a whole slice.", ConstLabels: labels},
		ctrlStat(func(s api.ClusterStats) float64 { return float64(s.Ticks.Skipped) })))
	skewStat := func(f func(strobe.SkewStats) time.Duration) func() float64 {
		return func() float64 { return secs(f(a.skew.Stats())) }
	}
	r.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cosched_skew_slices_total", Help: "Slices whose switch skew was measured from heartbeats (two or more agents heard from).", ConstLabels: labels},
		func() float64 { return float64(a.skew.Stats().Slices) }))
	gauge("switch_skew_p50_seconds", "Median switch skew across agents: latest minus earliest switch of a slice, from heartbeats (recent slices; one host only, clocks differ across hosts).",
		skewStat(func(s strobe.SkewStats) time.Duration { return s.Skew.P50 }))
	gauge("switch_skew_p99_seconds", "99th percentile switch skew across agents (recent slices).",
		skewStat(func(s strobe.SkewStats) time.Duration { return s.Skew.P99 }))
	gauge("switch_skew_max_seconds", "Largest switch skew across agents (recent slices).",
		skewStat(func(s strobe.SkewStats) time.Duration { return s.Skew.Max }))
	gauge("processors_online", "Processors of the agents in service.", ctrlStat(func(s api.ClusterStats) float64 { return float64(s.Online) }))
}

// leaderCollector exposes the leader's name as a label.
type leaderCollector struct {
	a    *Agent
	desc *prometheus.Desc
}

func (c leaderCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c leaderCollector) Collect(ch chan<- prometheus.Metric) {
	name := c.a.leaderName()
	if name == "" {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, name)
}

// relayJobCollector exports the relay's per-job traffic (relay.Stats'
// Jobs: running jobs and those ended in the last minutes), labelled by
// job.
type relayJobCollector struct {
	relay    *relay.Relay
	counters []relayJobCounter
	descs    []*prometheus.Desc
}

// relayJobCounter is one of relayJobCollector's metrics and its value.
type relayJobCounter struct {
	name, help string
	value      func(telemetry.RelayJobStats) uint64
}

func newRelayJobCollector(r *relay.Relay, labels prometheus.Labels) relayJobCollector {
	c := relayJobCollector{relay: r, counters: []relayJobCounter{
		{"cosched_relay_job_sent_total", "Messages a job's local ranks handed to the relay.", func(s telemetry.RelayJobStats) uint64 { return s.Sent }},
		{"cosched_relay_job_sent_bytes_total", "Payload bytes a job's local ranks handed to the relay.", func(s telemetry.RelayJobStats) uint64 { return s.SentBytes }},
		{"cosched_relay_job_delivered_total", "Messages delivered to a job's local ranks.", func(s telemetry.RelayJobStats) uint64 { return s.Delivered }},
		{"cosched_relay_job_delivered_bytes_total", "Payload bytes delivered to a job's local ranks.", func(s telemetry.RelayJobStats) uint64 { return s.DeliveredBytes }},
		{"cosched_relay_job_channel_bytes_total", "Payload bytes a job's local ranks sent over same-node channels the relay granted (part of sent_bytes).",
			func(s telemetry.RelayJobStats) uint64 { return s.ChannelBytes }},
		{"cosched_relay_job_collectives_total", "Collectives a job's local ranks announced (one per rank per collective; cosched's MPI library).",
			func(s telemetry.RelayJobStats) uint64 { return s.Collectives }},
	}}
	for _, m := range c.counters {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, []string{"job"}, labels))
	}
	return c
}

func (c relayJobCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c relayJobCollector) Collect(ch chan<- prometheus.Metric) {
	for _, js := range c.relay.Stats().Jobs {
		job := strconv.FormatInt(js.Job, 10)
		for i, m := range c.counters {
			ch <- prometheus.MustNewConstMetric(c.descs[i], prometheus.CounterValue, float64(m.value(js)), job)
		}
	}
}

// metricsServer serves /metrics alone on a listener of its own
// (Config.MetricsListen), without authentication: Prometheus scrapes
// with static credentials or none, so the operator puts this listener on
// a trusted network instead. Its methods accept a nil receiver (none).
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

func listenMetrics(addr string, reg *prometheus.Registry) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("node: metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &metricsServer{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// serve runs until close.
func (m *metricsServer) serve(log *zap.Logger) {
	if m == nil {
		return
	}
	if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("metrics server", zap.Error(err))
	}
}

func (m *metricsServer) close() {
	if m == nil {
		return
	}
	m.srv.Close()
	m.ln.Close() // if Serve never ran, the server does not know it

}

// MetricsAddr is the address of the /metrics listener of its own
// (Config.MetricsListen), or "" without one.
func (a *Agent) MetricsAddr() string {
	if a.metricsSrv == nil {
		return ""
	}
	return a.metricsSrv.ln.Addr().String()
}
