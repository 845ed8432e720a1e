# cosched — see README.md. Every target works on a fresh clone with only Go installed.
GO ?= go

.PHONY: all build test lint bench demo fuzz pgo clean

all: build

# bin/cosched, the light CLI (the simulator and the client commands start
# in a few milliseconds), and beside it bin/cosched-full, every command
# with the heavy libraries (agent, cluster, bench, ui, sim plot), which
# bin/cosched executes for those; lib/cosched/cosched-rank: the small rank shim
# and keeper the agent starts every rank through (cmd/cosched-rank; without
# it the agent re-executes bin/cosched, slower to start and larger to keep);
# lib/cosched/libmpich.so.12 (and libmpi.so.12):
# cosched's MPI library for --mpi cosched (mpi/build.sh; needs gcc and
# MPICH's mpi.h, else it says so and is skipped: the agent then fails
# --mpi cosched jobs naming where it looked); and lib/cosched/cosched-pmix,
# the PMIx helper for --mpi pmix (pmix/build.sh; needs libpmix-dev, else
# skipped the same way).
#
# bin/cosched is linked statically (CGO_ENABLED=0: Go's own DNS resolver and
# user database): a dynamically linked program starts in the C loader and
# C library first, which cost 1.2–1.4 ms of a 4 ms `cosched --version`
# (docs/performance.md). Its build is profile-guided by
# cmd/cosched/default.pgo (`make pgo` refreshes it).
build:
	CGO_ENABLED=0 $(GO) build -o bin/ ./cmd/cosched
	$(GO) build -o bin/ ./cmd/cosched-full
	$(GO) build -o lib/cosched/cosched-rank ./cmd/cosched-rank
	sh mpi/build.sh lib/cosched || [ $$? -eq 3 ]
	sh pmix/build.sh lib/cosched || [ $$? -eq 3 ]

# All tests, with the race detector. Tests that read ../shared (real traces,
# scheduling oracles) skip with a message when it is absent.
test:
	$(GO) test -race -count=1 ./...

lint:
	@unformatted=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Speed and memory goals live here, never in tests: each benchmark family
# includes its own baseline (e.g. read-only) for ratios.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The main job on a built-in default: calibrate the simulator against a
# local cluster (about 15 s), then replay 20 jobs of workload w3 on a local
# cluster of 4 agents under bcs, gang and space in turn (about three
# minutes; no process is left behind), each measured and simulated side by
# side with the calibrated profile. It ends with a table and a verdict
# (which mode won on what, by how much, and whether the simulator agrees);
# the results, report.md and its figures go to demo-results/.
demo: build
	mkdir -p demo-results
	./bin/cosched bench calibrate --out demo-results/profile.json
	./bin/cosched bench run --jobs 20 --profile demo-results/profile.json --out demo-results

# Refresh the light binary's profile for profile-guided optimisation,
# cmd/cosched/default.pgo, which go build uses on its own: a CPU profile of
# the simulator as `cosched sim` runs it (EASY on the KTH trace, the
# decision check on and off, then every policy once), merged. Needs the
# KTH trace in ../shared/traces beside the clone.
pgo:
	@test -f ../shared/traces/KTH-SP2-1996-2.swf || { echo "make pgo: ../shared/traces/KTH-SP2-1996-2.swf is absent"; exit 1; }
	d=$$(mktemp -d) && \
	$(GO) test ./jss -run '^$$' -bench 'SimCommand' -benchtime 200x -o $$d/jss.test -cpuprofile $$d/sim.pprof >/dev/null && \
	$(GO) test ./jss -run '^$$' -bench 'KTH/' -benchtime 10x -o $$d/jss.test -cpuprofile $$d/kth.pprof >/dev/null && \
	$(GO) tool pprof -proto $$d/sim.pprof $$d/kth.pprof > cmd/cosched/default.pgo && rm -r $$d

# Longer fuzzing of the SWF reader and the credential and packet parsers
# than the seed corpora `make test` runs.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime 60s ./jss/swf/
	$(GO) test -run '^$$' -fuzz FuzzVerifyToken -fuzztime 30s ./clusterkey/
	$(GO) test -run '^$$' -fuzz FuzzOpen -fuzztime 30s ./clusterkey/
	$(GO) test -run '^$$' -fuzz FuzzWire -fuzztime 60s ./mpi/

clean:
	rm -rf bin lib
