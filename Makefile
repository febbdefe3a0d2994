# shepherd: coordination on Apache ZooKeeper.
GO       ?= go
PKGS     ?= ./...
TESTFLAGS ?=

.PHONY: all setup setup-bench test test-short test-one test-mingo lint lint-static demo bench bench-quick bench-fence bench-start chaos interop build fuzz consumercheck alerts contrib

# The oldest Go release the code needs (go.mod's go line); make test builds and
# runs the fast tests with it (fetched through the module proxy).
MIN_GO ?= go1.24.0

all: test test-mingo

setup:
	@scripts/setup.sh

setup-bench:
	@scripts/setup.sh bench

build:
	$(GO) build ./...

## test: install what is missing (scripts/test.sh runs scripts/setup.sh bench
## beside the first compile), then run the whole suite with the race detector
## and go vet (every check, inside go test: see scripts/test.sh), against
## upstream go-zookeeper, the consumer check, the fuzzers briefly and
## promtool's tests of the alert rules; the chaos package runs beside the rest
## (see scripts/test.sh). The oldest Go release go.mod allows is checked by
## go vet's stdversion (a standard library symbol newer than go.mod's go line
## fails it) and by the compiler (so does newer syntax); test-mingo, which
## builds and runs the examples with that release itself, runs in CI after
## make test (.ci/run).
test: lint-static
	@GO=$(GO) TESTFLAGS='$(TESTFLAGS)' MAKE='$(MAKE)' MAKE_AFTER='consumercheck fuzz alerts contrib' scripts/test.sh

## test-mingo: vet (which compiles every package and test) and the runnable
## examples with $(MIN_GO), against upstream go-zookeeper: the code builds and
## its main paths run on the oldest Go release go.mod allows. Not in make test:
## it compiles the standard library and every package again with another
## toolchain, 127 CPU-s from a cold cache, an eighth of make test's CPU on a
## fresh machine, to prove what make test's vet (stdversion) and the
## compiler already reject at go.mod's go line, save how the examples run on
## that release. CI runs it after make test (.ci/run). The examples run in
## the packages that have some.
test-mingo:
	@echo "== go vet and the examples with $(MIN_GO)"
	GOTOOLCHAIN=$(MIN_GO) GOWORK=off $(GO) version
	GOTOOLCHAIN=$(MIN_GO) GOWORK=off $(GO) vet ./...
	@examples=$$(GOWORK=off $(GO) list -f '{{.Dir}}' ./... | while read -r dir; do \
	  grep -qs '^func Example' "$$dir"/*_test.go && echo "$$dir"; done); \
	  [ -n "$$examples" ] || { echo "test-mingo: no package has an example"; exit 1; }; \
	  echo "GOTOOLCHAIN=$(MIN_GO) GOWORK=off $(GO) test -short -count=1 -run '^Example' $$examples"; \
	  GOTOOLCHAIN=$(MIN_GO) GOWORK=off $(GO) test -short -count=1 -run '^Example' $$examples

test-short: setup
	GOWORK=off $(GO) test -race -short -count=1 $(TESTFLAGS) $(PKGS)

## test-one: one package's tests, or those RUN matches, with the race detector
## and -v, installing only what they need (ZooKeeper; PostgreSQL for the
## fences): make test-one PKG=./mutex RUN='TestLockUnlock$$'
PKG ?= ./mutex
RUN ?= .
test-one: setup
	GOWORK=off $(GO) test -race -count=1 -v $(TESTFLAGS) -run '$(RUN)' $(PKG)

## contrib: vet and test the contrib modules (contrib/gocron: gocron's
## Elector and Locker on shepherd), each a module of its own, through
## contrib/go.work, which uses this tree's main module (not the version
## their go.mod requires: consumercheck builds that one). Their tests start
## their own ZooKeeper and helper processes; about 30 s.
contrib: setup
	@want=$$(awk '$$1 == "github.com/shepherdzk/shepherd" {print $$2}' contrib/gocron/go.mod); \
	grep -q "^replace github.com/shepherdzk/shepherd $$want => " contrib/go.work || \
	{ echo "contrib/go.work: its replace must name the version of the main module that contrib/gocron/go.mod requires ($$want)"; exit 1; }
	cd contrib && GOWORK=$(CURDIR)/contrib/go.work $(GO) vet ./gocron/...
	cd contrib && GOWORK=$(CURDIR)/contrib/go.work $(GO) test -race -count=1 -timeout 3m ./gocron/...

## consumercheck: a fresh module outside this one depends on shepherd through a
## file module proxy holding this tree (no replace, no go.work): it builds,
## vets and runs a lock, a lease and an election; `go install` of the CLI too.
consumercheck: setup
	@scripts/consumercheck.sh

## alerts: promtool checks observe/prometheus/alerts.yaml, runs its unit tests
## (alerts_test.yaml) and parses every query of dashboard.json (made recording
## rules by internal/dashrules). promtool is Prometheus's, never a dependency
## of this module: Debian's (package prometheus, installed by setup-bench, a
## few seconds), or any other: PROMTOOL='GOWORK=off go run
## github.com/prometheus/prometheus/cmd/promtool@v0.316.0' builds it from the
## module proxy (about 6 minutes on 2 cores the first time).
PROMTOOL ?= promtool
alerts: setup-bench
	$(PROMTOOL) check rules observe/prometheus/alerts.yaml
	cd observe/prometheus && $(PROMTOOL) test rules alerts_test.yaml
	@rules=$$(mktemp) && trap 'rm -f '$$rules EXIT && \
	  GOWORK=off $(GO) run ./internal/dashrules observe/prometheus/dashboard.json >$$rules && \
	  echo "== the queries of observe/prometheus/dashboard.json" && $(PROMTOOL) check rules $$rules

## lint: lint-static, then go vet, every check, on every package. make test
## runs lint-static and vets inside go test (-vet=all), on the packages as
## the race detector builds them: a vet of its own compiled every package a
## second time, without -race (about 100 CPU-s and a minute before the first
## test on a fresh machine).
lint: lint-static
	GOWORK=off $(GO) vet ./...

## lint-static: no replace or exclude in a go.mod; gofmt.
lint-static:
	@grep -Eq '^(replace|exclude)' go.mod contrib/*/go.mod && { echo "a go.mod has a replace or exclude: importers ignore it, go install refuses it"; exit 1; } || true
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## demo: install what is missing, start a local ZooKeeper, run the main job.
demo: setup
	$(GO) run ./cmd/shepherd-demo

## bench: shepherd against Curator, Kazoo and go-zookeeper on one ZooKeeper.
bench: setup-bench
	$(GO) run ./bench/cmd/zkbench

bench-quick: setup-bench
	$(GO) run ./bench/cmd/zkbench -quick

## bench-fence: the cost of sqlfence's guard on PostgreSQL (a server of the
## benchmark's own, see internal/pgtest: fsync off, on tmpfs) and SQLite: the
## median latency of a small transaction, bare and with the guard, the extra
## and the ratio, for each of BENCH_FENCE_COUNT runs of 3000 pairs.
BENCH_FENCE_COUNT ?= 3
bench-fence: setup
	@GOWORK=off $(GO) test -run '^$$' -bench '^BenchmarkGuard$$' -benchtime 3000x -count $(BENCH_FENCE_COUNT) ./fence/sqlfence | awk -f scripts/benchfence.awk

## bench-start: the CPU of a test server's whole life (started until it
## serves, stopped) with zktest's class-data archive and without
## (zktest/archive.go), and the time to serve (ns/op).
bench-start: setup
	GOWORK=off $(GO) test -run '^$$' -bench '^BenchmarkServerStart$$' -benchtime 8x -count 2 ./zktest

## interop: shepherd beside Curator and Kazoo processes on shared paths under
## faults, 30 s per pair (CI runs them for the default 25 s); like chaos,
## against go-zookeeper with the lastZxid race fixed (see scripts/test.sh).
INTEROP_DURATION ?= 30s
interop: setup-bench
	GOWORK=$(CURDIR)/third_party/go.work $(GO) test -race -count=1 -timeout 20m -v -run 'Kazoo|Curator|GoZookeeper' ./interop -args -interop.duration=$(INTEROP_DURATION)

## chaos: the whole fault matrix, each cell's fault injected twice (make test
## runs each once, and a subset of the pause column), then a randomized soak
## of every recipe under random faults (SEED= to replay), each client's
## disconnect policy drawn too.
CHAOS_DURATION ?= 10m
SEED ?= 0
chaos: setup
	GOWORK=$(CURDIR)/third_party/go.work $(GO) test -race -count=1 -timeout 75m -run 'TestChaosSoak|TestFaultMatrix' -v ./chaos -args -chaos.duration=$(CHAOS_DURATION) -chaos.seed=$(SEED) -chaos.pause=all -chaos.reps=2

## fuzz: the name parser and path validation, briefly. A count, not a
## duration: Go 1.26's fuzz coordinator can fail a duration-bounded run with a
## spurious "context deadline exceeded" (golang/go#75804).
FUZZTIME ?= 200000x
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseName -fuzztime $(FUZZTIME) ./internal/line
	$(GO) test -run '^$$' -fuzz FuzzValidate -fuzztime $(FUZZTIME) ./internal/wire/zkpath
