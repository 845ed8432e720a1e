// Package rank is the agent's rank process manager: it launches a job's
// ranks on this node, stops and continues them as the cluster switches time
// slices (SIGSTOP/SIGCONT to each rank's process group), kills them, reaps
// them and reports how they ended. Linux only.
//
// # Lifecycle
//
//	m, err := rank.NewManager(rank.Config{Shim: []string{exe, "__rank-exec"}, Log: log})
//	pid, err := m.Start(rank.Spec{Job: 7, Rank: 0, Size: 4, Argv: argv, LogDir: dir, CPU: -1, Stopped: true})
//	m.Cont(7) … m.Stop(7) … m.Cont(7)     // every slice switch
//	m.Kill(7)                             // cancellation
//	for e := range m.Exits() { … }        // one Exit per Start, in the order ranks end
//	m.Close()                             // agent shutdown: kill all, reap all
//
// A rank is one process group (Setpgid; pgid = pid) created with
// Pdeathsig=SIGKILL, stdin /dev/null, stdout and stderr appended to
// LogDir/rank-<rank>.out and .err, the agent's environment plus Spec.Env plus
// COSCHED_JOB, COSCHED_RANK and COSCHED_SIZE. Stop, Cont, Kill and Signal
// address whole groups, so they reach whatever the rank forked.
//
// Start with Stopped=false forks and execs the program directly. Start with
// Stopped=true runs "Shim... -- program args..." instead: the shim (ShimMain,
// that is node/rank/shim.Main, which cmd/cosched-rank is and cmd/cosched
// exposes as a hidden subcommand) resolves the program,
// stops itself, and once continued execs the program. It directs its SIGSTOP
// at the thread that will call execve (tgkill): a SIGSTOP sent to the whole
// process may be taken by another thread while this one races on into
// execve, and the stop is lost (observed about one time in three when
// ShimMain does not run on the process's first thread). Start returns
// only after the shim is known to be stopped, so the program has executed no
// instruction, and a Cont issued after Start returns cannot be lost. Start
// learns this from waitid(WSTOPPED|WEXITED|WNOWAIT) on the pid, in the
// goroutine that later reaps it, rather than by polling /proc/<pid>/stat: it
// is an event from the kernel (no polling interval, no parsing), it is raised
// only when every thread of the shim has stopped, and it also reports a shim
// that exits instead of stopping (then Start fails and the Exit carries Err).
// The wait is bounded by Config.StartTimeout, after which the shim is
// killed; its error says how long it ran and waited for a processor, to
// tell a starved shim from a stuck one.
// SIGSTOP/SIGCONT that arrive while a Stopped rank is still starting are
// folded into one "continue when stopped" flag (the last wins) that Start
// applies; other signals are delivered as they come.
//
// A rank ends when its leader (the pid Start returned) exits. Whatever is
// left of its group is then SIGKILLed before the leader is reaped, so a rank
// leaves nothing behind; descendants that moved to another process group or
// session escape this (see Limits).
//
// # Threading: which goroutine owns what
//
//   - The spawner goroutine (one per Manager) forks every rank. It locks its
//     OS thread and never unlocks it: Linux sends Pdeathsig when the thread
//     that forked a child exits, and the Go runtime retires threads (for
//     instance one whose goroutine exited while locked), which would kill
//     ranks at random. The thread ends only in Close, after every rank has
//     been reaped. Pinned ranks inherit the CPU mask the spawner sets on its
//     own thread just around the fork (restored after), so even the shim's
//     start-up runs on the rank's CPU; the runtime never clones threads from
//     a locked thread, so the mask does not leak.
//   - One reaper goroutine per forked process owns that pid: it waits for it
//     (waitid on that pid only, never -1, so other children of the agent are
//     not stolen), reports the shim's stop to Start, kills the group's
//     leftovers, reaps with wait4 (status and rusage) and queues the Exit. It
//     exits after queueing. A blocked reaper holds an OS thread.
//   - The forwarder goroutine moves queued Exits to the Exits channel, so
//     reaping never waits for the reader (the queue is unbounded). It closes
//     the channel and exits once Close has finished and every Exit has been
//     received: the owner of the Manager must drain Exits.
//   - Caller goroutines run Start (validation, path resolution, log files,
//     then a request to the spawner, then the wait for a shim's stop),
//     Signal/Stop/Cont/Kill (kill(2) under the manager's mutex), Ranks and
//     Close. Concurrent Starts are fine: only the forks are serialized
//     (a fork+exec takes a few hundred microseconds), the shims' start-up
//     proceeds in parallel.
//
// The table of ranks is guarded by one mutex. A group is signalled only under
// that mutex and only while its leader has not been seen exiting; the reaper
// marks it exiting under the same mutex before it reaps, so a recycled pid is
// never signalled.
//
// # Guarantees
//
//   - A rank started Stopped runs no instruction of its program before Cont
//     (or a SIGCONT from outside the manager).
//   - A rank is never left stopped by Kill or Close (SIGKILL, then SIGCONT).
//   - A rank dies when its agent dies, however it dies (Pdeathsig=SIGKILL,
//     delivered when the spawner thread exits, i.e. when the process exits;
//     re-armed by the shim on its exec'ing thread).
//   - Every Start not refused with ErrClosed yields exactly one Exit; every
//     forked process is reaped (no zombies); Close returns after every rank
//     has been reaped and the spawner has exited.
//
// # Limits
//
// Descendants of a rank do not inherit Pdeathsig: if the agent is SIGKILLed
// the rank's leader dies but processes it forked keep running (unless they
// were stopped: the kernel sends SIGHUP and SIGCONT to the group it
// orphans, and SIGHUP kills by default). Processes that leave the rank's
// group (setsid, setpgid) escape Stop, Cont and Kill. A cgroup closes these
// gaps: with Spec.Cgroup set the rank is born in its job's cgroup (the
// spawner enters it around the fork), and the agent kills and freezes the
// whole cgroup (node/jobcg). Release continues only ranks never continued
// (their start-up shims), for suspension without signals. The agent must not set
// SIGCHLD to SIG_IGN (the kernel would reap ranks itself and their statuses
// would be lost; such Exits carry Err). CPUs are numbered below 1024.
//
// # Keepers
//
// With Config.KeepDir every rank starts under a keeper (ShimMain with
// "--keep"): a process in a session of its own, leader of the rank's group,
// started without a parent-death signal: it arms SIGUSR2 itself once it
// catches it (armed at the fork, it would kill a keeper whose runtime has not
// started), which tells it the agent died; a time-shared keeper then stops
// its group. It stops itself like
// the shim, then forks the program (Pdeathsig=SIGKILL: the program never
// outlives its keeper), waits for it and writes its exit record; the
// manager's Exit carries the program's status from that record. The
// manager records every keeper (pid and /proc start time) in KeepDir; a
// later manager's Adopt takes the live ones back (watching each through a
// pidfd, since it is not their parent) and reports the ones that ended
// meanwhile. The records stay after an Exit until the agent calls Forget
// (it has delivered the Exit), so an Exit the agent never delivered is
// reported again by its next life. A keeper that dies without a record (killed from outside)
// gives an Exit with Err. The Pdeathsig guarantee above does not hold for
// kept ranks: that is their point. A keeper whose environment has
// shim.EnvPMIResume also holds the program's PMI connection (the first
// extra file): the program talks to the keeper, which relays to the agent
// and, when the agent dies, resumes the connection with its next life
// (package pmi, "resume").
//
// # Testing with the test binary as the shim
//
// A package's tests cannot rely on the cosched binary being built, so they
// use the test binary itself as the shim: TestMain checks an environment
// variable and becomes the shim when it is set:
//
//	func TestMain(m *testing.M) {
//		if os.Getenv("COSCHED_RANK_SHIM") == "1" {
//			os.Exit(rank.ShimMain(os.Args[1:]))
//		}
//		os.Exit(m.Run())
//	}
//
// with Config.Shim = []string{os.Args[0]} and "COSCHED_RANK_SHIM=1" in each
// Stopped Spec's Env (the variable reaches the program too; it is harmless).
package rank
