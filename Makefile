# shepherd: coordination on Apache ZooKeeper.
GO       ?= go
PKGS     ?= ./...
TESTFLAGS ?=

.PHONY: all setup setup-bench test test-short lint demo bench bench-quick chaos build fuzz consumercheck

all: lint test

setup:
	@scripts/setup.sh

setup-bench:
	@scripts/setup.sh bench

build:
	$(GO) build ./...

## test: install what is missing, then run the whole suite with the race detector.
test: setup-bench lint
	$(GO) test -race -count=1 -timeout 20m $(TESTFLAGS) $(PKGS)
	@$(MAKE) --no-print-directory fuzz

test-short: setup
	$(GO) test -race -short -count=1 $(PKGS)

## consumercheck: a fresh module outside this one depends on shepherd through a
## file module proxy holding this tree (no replace, no go.work): it builds,
## vets and runs a lock, a lease and an election; `go install` of the CLI too.
consumercheck: setup
	@scripts/consumercheck.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## demo: install what is missing, start a local ZooKeeper, run the main job.
demo: setup
	$(GO) run ./cmd/shepherd-demo

## bench: shepherd against Curator, Kazoo and go-zookeeper on one ZooKeeper.
bench: setup-bench
	$(GO) run ./bench/cmd/zkbench

bench-quick: setup-bench
	$(GO) run ./bench/cmd/zkbench -quick

## chaos: randomized soak of every recipe under random faults (SEED= to replay).
CHAOS_DURATION ?= 10m
SEED ?= 0
chaos: setup
	$(GO) test -race -count=1 -timeout 60m -run TestChaosSoak -v ./chaos -args -chaos.duration=$(CHAOS_DURATION) -chaos.seed=$(SEED)

## fuzz: the name parser and path validation, briefly. A count, not a
## duration: Go 1.26's fuzz coordinator can fail a duration-bounded run with a
## spurious "context deadline exceeded" (golang/go#75804).
FUZZTIME ?= 500000x
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseName -fuzztime $(FUZZTIME) ./recipe
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime $(FUZZTIME) ./internal/zkpath
