# cosched — see README.md. Every target works on a fresh clone with only Go installed.
GO ?= go

.PHONY: all build test lint bench demo fuzz clean

all: build

build:
	$(GO) build -o bin/cosched ./cmd/cosched

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

# Until the runtime exists, the simulator's two default comparisons: the
# queue policies on the embedded KTH-SP2 sample, then backfilling (bf),
# backfilling gang scheduling (bgs) and buffered coscheduling (bcs) on the
# non-blocking benchmark workloads at load 0.8 (a second or two in all).
demo: build
	./bin/cosched sim
	@echo
	./bin/cosched sim sweep --mode bf,bgs,bcs --mpl 3 --load 0.8 --workload w1,w3,w4

# Longer fuzzing of the SWF reader than the seed corpus `make test` runs.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime 60s ./jss/swf/

clean:
	rm -rf bin
