# The provisioner. `make test` is the one command that runs every test.
GO ?= go
# bash for pipefail: a benchmark piped into tee still fails its target.
SHELL := /bin/bash
# Fuzz budgets are counts of inputs, not durations: with a duration, Go
# 1.26's fuzz coordinator may fail a target with "context deadline exceeded"
# as the time runs out (golang/go#75804, fixed in 1.27) though it found
# nothing; a count has no deadline to race.
FUZZTIME ?= 150000x
PKGS = ./...

.PHONY: build test bench bench-peer lint run fuzz fuzz-bus dot chaos

build:
	$(GO) build ./...

test:
	$(GO) vet ./...
	$(GO) test -race -timeout 12m ./...
	@# Under -race quietconn reads and writes through syscall.Read/Write; its
	@# raw system calls, what the daemon runs, are built only without it.
	$(GO) test -count=1 ./cmd/internal/quietconn
	$(MAKE) --no-print-directory fuzz FUZZTIME=60000x
	$(MAKE) --no-print-directory fuzz-bus FUZZTIME=5000x

# The chaos run (cmd/internal/chaos, docs/RELIABILITY.md): SEEDS seeds from
# SEED on, each a schedule of about MINUTES of churn and faults, then the
# check that every node caught up. `make test` runs the short one (its
# regression seeds and one random seed, about ten seconds of schedule
# each). A failure prints the seed and the schedule: replay it with
# `make chaos SEED=<seed> STEPS=<steps>` (STEPS, when given, wins over
# MINUTES: 580 steps drawn a minute).
SEED ?= 1
SEEDS ?= 1
MINUTES ?= 5
STEPS ?= 0
chaos:
	$(GO) test -race -count=1 -v -run '^TestChaos$$' -timeout 0 ./cmd/internal/chaos \
		-chaos.seed $(SEED) -chaos.seeds $(SEEDS) -chaos.minutes $(MINUTES) -chaos.steps $(STEPS)

# Engine and node-kind benchmarks run long enough to be steady; the daemon's
# (embedded NATS, mesh-fill, dev vault), mesh-fill's writes and the server's
# sweep of 100,000 needs once each.
# Their cold starts make tens of thousands of files, which on a journal-less
# ext4 is slow for a minute or more after as many are deleted nearby; so no
# benchmark deletes its files (BENCH_KEEP=1): they all go in one temp dir,
# removed once every benchmark has run (see docs/PERFORMANCE.md). A sync
# before and after writes out the inode tables of what was deleted, which
# ends the slow minutes after a deletion sooner (5 more while dirty).
# The table lands in docs/PERFORMANCE.md, even when a benchmark failed;
# then make bench fails after writing it.
bench:
	@sync; tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"; sync' EXIT && export TMPDIR="$$tmp" BENCH_KEEP=1 && \
	set -o pipefail && st=0 && : > bench.out && \
	{ $(GO) test -run '^$$' -bench . -benchmem ./graph ./nodes | tee -a bench.out || st=1; } && \
	{ $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 30m ./cmd/internal/daemon | tee -a bench.out || st=1; } && \
	{ $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 10m ./outputs/fill | tee -a bench.out || st=1; } && \
	{ $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 10m ./cmd/internal/server | tee -a bench.out || st=1; } && \
	$(GO) run ./cmd/internal/benchtable -doc docs/PERFORMANCE.md < bench.out && \
	if [ $$st != 0 ]; then echo "make bench: a benchmark failed (FAIL lines in bench.out); the table was written all the same" >&2; exit 1; fi

# Our client beside consul-template on the same node (500 modules of one
# file), in one run on this machine: BenchmarkPeer in cmd/internal/daemon,
# with consul-template v0.41.1 installed into a temp dir for the run
# (nothing of it is kept). Both sides' files go to tmpfs when there is
# one, so neither measures this disk. The table lands in
# docs/PERFORMANCE.md (its own section, beside make bench's).
CONSUL_TEMPLATE ?= github.com/hashicorp/consul-template@v0.41.1
bench-peer:
	@tmp=$$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	GOBIN="$$tmp/bin" $(GO) install $(CONSUL_TEMPLATE) && \
	export TMPDIR="$$tmp" BENCH_CONSUL_TEMPLATE="$$tmp/bin/consul-template" && \
	set -o pipefail && st=0 && \
	{ $(GO) test -run '^$$' -bench '^BenchmarkPeer$$' -benchtime 1x -timeout 20m ./cmd/internal/daemon | tee bench-peer.out || st=1; } && \
	$(GO) run ./cmd/internal/benchtable -name bench-peer -doc docs/PERFORMANCE.md < bench-peer.out && \
	if [ $$st != 0 ]; then echo "make bench-peer: the benchmark failed (bench-peer.out); the table was written all the same" >&2; exit 1; fi

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt -l:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fuzz:
	$(GO) test ./nodes/spec -run '^$$' -fuzz '^FuzzDecodeToken$$' -fuzztime $(FUZZTIME)
	$(GO) test ./nodes -run '^$$' -fuzz '^FuzzParseTemplate$$' -fuzztime $(FUZZTIME)
	$(GO) test ./nodes -run '^$$' -fuzz '^FuzzParseAssignment$$' -fuzztime $(FUZZTIME)
	$(GO) test ./inputs/archive -run '^$$' -fuzz '^FuzzReadArchive$$' -fuzztime $(FUZZTIME)

# What others write on the bus, read by the client and the server: bound
# entries, offers, registry entries, any key and value of a watched bucket,
# the vault's reply, prov.ask's request, the verb's request and the entries
# it answers. Slower an input than the four above (a graph, a sealed box):
# `make test` runs each for 5,000 inputs (~50 s in all).
FUZZ_BUS = nodes:FuzzParseBoundEntry nodes:FuzzParseOffers nodes:FuzzParseBindings \
	nodes:FuzzRegistryMismatch nodes:FuzzKeyedSecret nodes:FuzzNodeGraphPut \
	inputs/vault:FuzzReadReply inputs/vault:FuzzChangedName outputs/ask:FuzzAnswer \
	cmd/internal/server:FuzzParseRequest cmd/internal/server:FuzzBucketEntry \
	cmd/internal/server:FuzzClientValuesAreInShape
fuzz-bus:
	@set -e; for t in $(FUZZ_BUS); do \
		echo "fuzz $${t#*:} (./$${t%%:*})"; \
		$(GO) test ./$${t%%:*} -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME); \
	done

# Built, then run as make's own child: under `go run` a Ctrl-C made go exit
# 1 (and make print "Error 1") though the lab stopped cleanly with 0.
# ARGS are the lab's flags: make run ARGS='--port 0'.
ARGS ?=
run:
	$(GO) build -o mesh-lab ./cmd/mesh-lab
	exec ./mesh-lab $(ARGS)

# The graph of the lab's node ace (CONTROL=… for another client's socket).
CONTROL ?= .lab/ace/control.sock
dot:
	set -o pipefail; $(GO) run ./cmd/mesh-provisioner-client graph dot --control $(CONTROL) | dot -Tsvg > graph.svg
