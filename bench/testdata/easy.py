#!/usr/bin/env python3
"""A straightforward EASY backfilling simulator: the reference that
`cosched sim --trace T --policy easy` is timed against (docs/performance.md).

Usage: easy.py TRACE.swf   prints the job count and the mean wait (s).

Jobs as cosched sim reads them: processors requested (field 8, else 5),
run time (field 4), estimate the requested time (field 9, else the run
time) raised to the run time when a job overruns it (--overrun extend);
jobs without processors or run time, or wider than the machine
(MaxProcs header), are dropped. EASY: first come first served; when the
head of the queue does not fit, it gets a reservation at the earliest
time enough processors free up by the running jobs' estimates (the
shadow time), and any later job that fits now starts if it ends by the
shadow time or uses only processors the head will not need.
"""
import heapq
import sys


def read(path):
    machine, jobs = 0, []
    with open(path) as f:
        for line in f:
            if line.startswith(";"):
                if "MaxProcs:" in line:
                    machine = int(line.split(":")[1])
                continue
            x = line.split()
            if len(x) < 18:
                continue
            submit, run = float(x[1]), float(x[3])
            procs = int(x[7]) if int(x[7]) > 0 else int(x[4])
            est = float(x[8]) if float(x[8]) > 0 else run
            if procs <= 0 or run < 0 or (machine and procs > machine):
                continue
            jobs.append((submit, procs, run, max(est, run)))
    jobs.sort(key=lambda j: j[0])
    return machine, jobs


def easy(machine, jobs):
    free = machine
    queue = []  # waiting jobs: (submit, procs, run, est), in arrival order
    running = {}  # id -> (estimated end, procs)
    ends = []  # heap of (actual end, id, procs)
    waits = []
    i, nid = 0, 0

    def start(j, now):
        nonlocal free, nid
        free -= j[1]
        nid += 1
        running[nid] = (now + j[3], j[1])
        heapq.heappush(ends, (now + j[2], nid, j[1]))
        waits.append(now - j[0])

    while i < len(jobs) or queue or ends:
        now = min(jobs[i][0] if i < len(jobs) else float("inf"), ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] <= now:
            _, jid, p = heapq.heappop(ends)
            free += p
            del running[jid]
        while i < len(jobs) and jobs[i][0] <= now:
            queue.append(jobs[i])
            i += 1
        while queue and queue[0][1] <= free:
            start(queue.pop(0), now)
        if not queue:
            continue
        head = queue[0]
        avail, shadow, extra = free, float("inf"), 0
        for end, p in sorted(running.values()):
            avail += p
            if avail >= head[1]:
                shadow, extra = end, avail - head[1]
                break
        rest = []
        for j in queue[1:]:
            if j[1] <= free and (now + j[3] <= shadow or j[1] <= extra):
                if now + j[3] > shadow:
                    extra -= j[1]
                start(j, now)
            else:
                rest.append(j)
        queue[1:] = rest
    return waits


if __name__ == "__main__":
    machine, jobs = read(sys.argv[1])
    waits = easy(machine, jobs)
    print(f"jobs {len(waits)} mean wait {sum(waits) / len(waits):.0f} s")
