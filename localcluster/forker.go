package localcluster

import (
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// forker starts the agents of a temporary cluster (Options.Temporary)
// from one OS thread that it locks and keeps until close, so that their
// parent-death signal (SIGTERM) fires when the command that started them
// dies however it dies (a second signal, SIGKILL, a crash), and not
// before. Linux delivers Pdeathsig when the *thread* that forked a child
// exits, and the Go runtime retires threads (a goroutine that exits while
// locked takes its thread with it): forking from whatever thread a
// goroutine happens to run on could kill the agents mid-run.
//
// A forker is owned by its Cluster: close, once the agents are stopped,
// ends its goroutine and retires its thread (any agent still alive then
// gets SIGTERM, which is what stopping it meant).
type forker struct {
	reqs chan forkReq
	done chan struct{}
}

type forkReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func newForker() *forker {
	f := &forker{reqs: make(chan forkReq), done: make(chan struct{})}
	go f.loop()
	return f
}

func (f *forker) loop() {
	runtime.LockOSThread() // never unlocked: the agents' Pdeathsig is this thread's
	if unix.Gettid() == unix.Getpid() {
		// The process's main thread, which the runtime never ends (a
		// goroutine that exits locked to it wedges it instead), so close
		// would not signal the agents. Hand the loop to a goroutine on
		// another thread: this one stays locked until it has its own,
		// so it cannot be scheduled here.
		moved := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked, as above
			close(moved)
			f.serve()
		}()
		<-moved
		runtime.UnlockOSThread()
		return
	}
	f.serve()
}

// serve starts the requested commands on the locked thread until close.
func (f *forker) serve() {
	defer close(f.done)
	for r := range f.reqs {
		// Start forks on the calling thread, this one; it starts no
		// goroutine when the child's output goes to *os.File (launch's).
		r.reply <- r.cmd.Start()
	}
}

// start starts cmd from the forker's thread.
func (f *forker) start(cmd *exec.Cmd) error {
	reply := make(chan error, 1)
	f.reqs <- forkReq{cmd: cmd, reply: reply}
	return <-reply
}

// close ends the forker and waits for its goroutine; its thread goes with it.
func (f *forker) close() {
	close(f.reqs)
	<-f.done
}
