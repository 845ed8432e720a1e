package agentctl

// Ready is one batch of effects, to carry out in the order of its fields
// (see the package comment).
type Ready struct {
	// Close lists links to close.
	Close []uint64
	// Welcome, when set, is the first frame of a new link.
	Welcome *Welcome
	// Writes are rank exits to queue, in order.
	Writes []Write
	// Forget are exits written to a controller: a kept rank's records may
	// go.
	Forget []Exit
	// LinkChanged: whether a controller is connected may have changed.
	LinkChanged bool
}

// Empty reports whether the batch holds nothing to do.
func (r *Ready) Empty() bool {
	return len(r.Close) == 0 && r.Welcome == nil && len(r.Writes) == 0 && len(r.Forget) == 0 && !r.LinkChanged
}

// Write queues one rank exit on a link.
type Write struct {
	Link uint64
	Exit Exit
}

// Exit is a rank's end on its way to a controller. Job, Rank and PID name
// one run of one rank (two exits with the same three are the same);
// Report is the caller's whole report, carried as is.
type Exit struct {
	Job    int64
	Rank   int
	PID    int
	Report any
}

// Same reports whether o is the exit of the same run of the same rank.
func (x Exit) Same(o Exit) bool { return x.Job == o.Job && x.Rank == o.Rank && x.PID == o.PID }

// Rank names a rank and its process (0: still starting).
type Rank struct {
	Job     int64
	Rank    int
	PID     int
	Stopped bool
}

// Welcome answers a controller's hello: see Connect.
type Welcome struct {
	Link          uint64
	Jobs          []int64
	Ranks         []Rank // sorted by job, then rank
	Exits         []Exit // delivered ones first, then pending
	Incarnation   uint64
	Launched      []int64
	LaunchedFloor int64
	Keeps         bool
	// Handed is how many of Exits were pending (heard of by no
	// controller before).
	Handed int
}
