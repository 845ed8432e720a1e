#!/usr/bin/env python3
# alternate.py N label1 "cmd1" label2 "cmd2" ...: whole processes run in
# turn, N rounds (the order rotated each round, so none always finds the
# caches warm), each from posix_spawn to exit with its output discarded.
# Prints per command the medians and quartiles of wall time, CPU time
# (user + system of the child, from wait4) and minor page faults, and
# the median over rounds of the first command's time over this one's
# (paired: both ran within the same second of the host's load).
import os, sys, time, shlex, statistics
n = int(sys.argv[1]); args = sys.argv[2:]
cmds = [(args[i], shlex.split(args[i+1])) for i in range(0, len(args), 2)]
res = {l: ([], [], []) for l, _ in cmds}
devnull = os.open(os.devnull, os.O_WRONLY)
for r in range(n):
    order = cmds[r % len(cmds):] + cmds[:r % len(cmds)]
    for label, argv in order:
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
        _, status, ru = os.wait4(pid, 0)
        w = time.perf_counter() - t0
        if status != 0: print("FAIL", label, status); sys.exit(1)
        res[label][0].append(w*1e3); res[label][1].append((ru.ru_utime+ru.ru_stime)*1e3); res[label][2].append(ru.ru_minflt)
def q(x):
    s = sorted(x); return s[len(s)//4], statistics.median(s), s[(3*len(s))//4]
first = cmds[0][0]
print(f"medians of {n} alternated rounds, load {os.getloadavg()[0]:.1f}; [p25 p75]; paired = median over rounds of {first}/this")
print(f"{'':14} {'wall ms':>22} {'cpu ms':>22} {'faults':>7} {'paired wall':>11} {'paired cpu':>10}")
for label, _ in cmds:
    (w25, w, w75), (c25, c, c75) = q(res[label][0]), q(res[label][1])
    f = statistics.median(res[label][2])
    pw = statistics.median([a/b for a, b in zip(res[first][0], res[label][0])])
    pc = statistics.median([a/b for a, b in zip(res[first][1], res[label][1])])
    print(f"{label:14} {w:6.1f} [{w25:5.1f} {w75:5.1f}]   {c:6.1f} [{c25:5.1f} {c75:5.1f}]   {f:7.0f} {pw:10.2f}x {pc:9.2f}x")
