package pmi

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
)

// Bounds on what a job may store, so no rank can make its agent or the
// controller allocate without limit. A barrier's puts travel in one
// control frame (1 MiB).
const (
	// MaxBarrierBytes bounds the keys and values a whole job puts between
	// two barriers.
	MaxBarrierBytes = 512 << 10
	// MaxJobBytes bounds a job's key-value space.
	MaxJobBytes = 8 << 20
)

// JobConfig describes one job's PMI on one agent.
type JobConfig struct {
	KVSName string // the job's key-value space name (get_my_kvsname)
	Size    int    // ranks in the whole job
	Local   []int  // the ranks this agent serves
	// Preset holds keys every rank can get from the start, such as
	// PMI_process_mapping (see ProcessMapping).
	Preset map[string]string
}

// Job is one job's PMI state on one agent: the key-value space its ranks
// see, and the barrier they are in. It is a pure state machine: Handle
// takes a rank's command and returns what to answer and what to tell the
// other agents; BarrierDone delivers the end of a barrier. Not safe for
// concurrent use.
type Job struct {
	cfg     JobConfig
	ranks   map[int]*rankState
	kv      map[string]string // visible to every rank: presets and puts of past barriers
	fresh   map[string]string // this agent's ranks' puts since the last barrier
	bytes   int               // of kv and fresh
	epoch   uint64            // the barrier being gathered
	entered int               // local ranks inside it
}

// Snapshot is what a job's PMI on an agent holds between two barriers
// once its ranks' own commands are left out: the number of barriers that
// ended and the key-value space they made visible. An agent that keeps
// its ranks across restarts records it after each barrier (Hooks.Ended),
// and its next life starts the job from it (Server.RestoreJob); the
// ranks' commands since that barrier come again from their keepers.
type Snapshot struct {
	Epoch uint64            `msgpack:"epoch"`
	KV    map[string]string `msgpack:"kv"`
}

type rankState struct {
	inBarrier bool
	finalized bool
}

// Output is what handling one command produced.
type Output struct {
	// Reply goes back to the rank that sent the command (nil: no reply).
	Reply []byte
	// Barrier, when set, means every local rank has entered the barrier:
	// the agent forwards it to the gatherer (Gather) and later calls
	// BarrierDone with the whole job's result.
	Barrier *Barrier
	// Abort is set when the rank called PMI_Abort.
	Abort *Abort
	// Err is a protocol violation: the job must end with this reason.
	Err error
	// Finalized is set when the rank called PMI_Finalize.
	Finalized bool
}

// Barrier is one agent's contribution to a barrier, or (from Gather) the
// whole job's: the keys put since the previous barrier.
type Barrier struct {
	Epoch uint64
	Puts  map[string]string
}

// Abort is a rank's PMI_Abort.
type Abort struct {
	Rank int
	Code int
}

// Reply is a line for one rank.
type Reply struct {
	Rank int
	Line []byte
}

// NewJob starts a job's PMI state.
func NewJob(cfg JobConfig) *Job {
	j := &Job{cfg: cfg, ranks: map[int]*rankState{}, kv: maps.Clone(cfg.Preset), fresh: map[string]string{}}
	if j.kv == nil {
		j.kv = map[string]string{}
	}
	for _, r := range cfg.Local {
		j.ranks[r] = &rankState{}
	}
	for k, v := range j.kv {
		j.bytes += len(k) + len(v)
	}
	return j
}

// restore starts the job at snapshot sn: epoch sn.Epoch, its KVS sn.KV
// (which already holds the presets).
func (j *Job) restore(sn Snapshot) {
	j.epoch = sn.Epoch
	j.kv = maps.Clone(sn.KV)
	if j.kv == nil {
		j.kv = map[string]string{}
	}
	j.bytes = 0
	for k, v := range j.kv {
		j.bytes += len(k) + len(v)
	}
}

// Snapshot is the job's state as of its last barrier.
func (j *Job) Snapshot() Snapshot { return Snapshot{Epoch: j.epoch, KV: maps.Clone(j.kv)} }

// Handle answers one command line (without its newline) from rank.
func (j *Job) Handle(rank int, line []byte) Output {
	rs, ok := j.ranks[rank]
	if !ok {
		return Output{Err: fmt.Errorf("rank %d is not served here", rank)}
	}
	c, err := Parse(line)
	if err != nil {
		return Output{Err: fmt.Errorf("rank %d sent a malformed PMI command: %w", rank, err)}
	}
	switch c.Name {
	case "init":
		if c.Args["pmi_version"] != "1" {
			// MPICH falls back or fails cleanly on rc≠0; PMI-2's wire
			// (fullinit) is not served.
			return Output{Reply: Encode("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "-1")}
		}
		return Output{Reply: Encode("response_to_init", "pmi_version", "1", "pmi_subversion", "1", "rc", "0")}
	case "get_maxes":
		return Output{Reply: Encode("maxes", "rc", "0", "kvsname_max", itoa(MaxKVSName), "keylen_max", itoa(MaxKey), "vallen_max", itoa(MaxValue))}
	case "get_appnum":
		return Output{Reply: Encode("appnum", "rc", "0", "appnum", "0")}
	case "get_my_kvsname":
		return Output{Reply: Encode("my_kvsname", "rc", "0", "kvsname", j.cfg.KVSName)}
	case "get_universe_size":
		return Output{Reply: Encode("universe_size", "rc", "0", "size", itoa(j.cfg.Size))}
	case "put":
		return Output{Reply: j.put(c)}
	case "get":
		return Output{Reply: j.get(c)}
	case "barrier_in":
		return j.barrierIn(rank, rs)
	case "finalize":
		rs.finalized = true
		return Output{Reply: Encode("finalize_ack", "rc", "0"), Finalized: true}
	case "publish_name", "unpublish_name", "lookup_name":
		// MPI's name service (MPI_Publish_name, MPI_Lookup_name) spans
		// jobs, which cosched does not serve: the rank hears a failure it
		// can handle (MPICH checks info=ok), as from a server without one,
		// and the job runs on.
		result := strings.TrimSuffix(c.Name, "_name") + "_result"
		return Output{Reply: Encode(result, "rc", "-1", "info", "unsupported", "msg", "cosched_serves_no_name_service")}
	case "abort":
		code, err := strconv.Atoi(c.Args["exitcode"])
		if err != nil {
			code = 1
		}
		return Output{Abort: &Abort{Rank: rank, Code: code}}
	}
	return Output{Err: fmt.Errorf("rank %d sent PMI command %q, which cosched does not serve", rank, truncate([]byte(c.Name)))}
}

func (j *Job) put(c Command) []byte {
	fail := func(msg string) []byte { return Encode("put_result", "rc", "-1", "msg", msg) }
	key, value := c.Args["key"], c.Args["value"]
	switch {
	case c.Args["kvsname"] != j.cfg.KVSName:
		return fail("unknown_kvsname")
	case key == "":
		return fail("no_key")
	case len(key) > MaxKey:
		return fail("key_too_long")
	case len(value) > MaxValue:
		return fail("value_too_long")
	}
	if _, dup := j.kv[key]; dup {
		return fail("duplicate_key")
	}
	if _, dup := j.fresh[key]; dup {
		return fail("duplicate_key")
	}
	if j.bytes+len(key)+len(value) > MaxJobBytes || j.freshBytes()+len(key)+len(value) > MaxBarrierBytes {
		return fail("key_value_space_full")
	}
	j.fresh[key] = value
	j.bytes += len(key) + len(value)
	return Encode("put_result", "rc", "0", "msg", "success")
}

func (j *Job) freshBytes() int {
	n := 0
	for k, v := range j.fresh {
		n += len(k) + len(v)
	}
	return n
}

func (j *Job) get(c Command) []byte {
	key := c.Args["key"]
	if c.Args["kvsname"] != j.cfg.KVSName {
		return Encode("get_result", "rc", "-1", "msg", "unknown_kvsname")
	}
	if v, ok := j.kv[key]; ok {
		return Encode("get_result", "rc", "0", "msg", "success", "value", v)
	}
	if v, ok := j.fresh[key]; ok {
		return Encode("get_result", "rc", "0", "msg", "success", "value", v)
	}
	return Encode("get_result", "rc", "-1", "msg", "key_not_found")
}

func (j *Job) barrierIn(rank int, rs *rankState) Output {
	if rs.inBarrier {
		return Output{Err: fmt.Errorf("rank %d entered PMI barrier %d twice", rank, j.epoch)}
	}
	rs.inBarrier = true
	j.entered++
	if j.entered < len(j.ranks) {
		return Output{}
	}
	return Output{Barrier: &Barrier{Epoch: j.epoch, Puts: maps.Clone(j.fresh)}}
}

// BarrierDone ends the barrier being gathered: the job's puts (from every
// agent) become visible and every local rank gets barrier_out.
func (j *Job) BarrierDone(b Barrier) ([]Reply, error) {
	if b.Epoch != j.epoch || j.entered < len(j.ranks) {
		return nil, fmt.Errorf("end of PMI barrier %d, but barrier %d is open with %d of %d local ranks in", b.Epoch, j.epoch, j.entered, len(j.ranks))
	}
	for k := range j.fresh {
		delete(j.fresh, k)
	}
	j.bytes = 0
	for k, v := range b.Puts {
		j.kv[k] = v
	}
	for k, v := range j.kv {
		j.bytes += len(k) + len(v)
	}
	if j.bytes > MaxJobBytes {
		return nil, fmt.Errorf("key-value space of %d bytes: more than %d", j.bytes, MaxJobBytes)
	}
	j.epoch++
	j.entered = 0
	var out []Reply
	for _, r := range j.cfg.Local {
		j.ranks[r].inBarrier = false
		out = append(out, Reply{Rank: r, Line: Encode("barrier_out", "rc", "0")})
	}
	return out, nil
}
