# rediskit: make demo (the tour on a local lab) and make test (all tests,
# on Redis 7 and on Valkey 8). Both install Redis first when redis-server or
# redis-sentinel is missing, and a C compiler when there is none (go test
# -race needs cgo); make test (and make demo SERVER=valkey) installs Valkey
# too. make figures redraws the timelines in docs/ that README.md and
# BENCHMARKS.md show, from fresh benchmark runs.

GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 14m
FUZZTIME  ?= 30s
FUZZFLAGS ?=
# The servers make test runs the suite on, each pass side by side
# (scripts/test-servers.sh); SERVERS=redis runs one.
SERVERS   ?= redis valkey
# The server make demo's and make faults' labs run: redis or valkey.
SERVER    ?= redis
# Where make test-redis8 builds Redis 8.0 (outside the tree).
REDIS8_CACHE ?= $(HOME)/.cache/rediskit/redis8

.PHONY: all redis valkey test test-redis8 vet lint demo bench bench-autopipeline figures fuzz faults generate

all: test

# Install redis-server, redis-sentinel and redis-cli from Debian packages when
# they are not on PATH, and a C compiler (gcc, libc6-dev) when the one go uses
# (go env CC, gcc by default) is missing: go test -race needs cgo. The lab
# starts its own processes; no system Redis service is used.
redis:
	@pkgs=""; \
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-sentinel >/dev/null 2>&1; then \
		pkgs="redis-server redis-sentinel redis-tools"; \
	fi; \
	cc="$$($(GO) env CC)"; cc="$${cc%% *}"; \
	if ! command -v "$${cc:-gcc}" >/dev/null 2>&1; then \
		pkgs="$${pkgs:+$$pkgs }gcc libc6-dev"; \
	fi; \
	if [ -n "$$pkgs" ]; then \
		echo "make: installing $$pkgs"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y $$pkgs; \
	fi

# Install valkey-server, valkey-sentinel and valkey-tools (Valkey 8.0) from
# this Debian release's backports suite when valkey-server or
# valkey-sentinel is not on PATH. The suite is added by
# scripts/apt-backports.sh from the machine's own Debian source (same URI,
# suite <codename>-backports, its own file under /etc/apt/sources.list.d),
# so no mirror is named here.
valkey:
	@if ! command -v valkey-server >/dev/null 2>&1 || ! command -v valkey-sentinel >/dev/null 2>&1; then \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		suite=$$($$SUDO sh scripts/apt-backports.sh) && \
		echo "make: installing valkey-server valkey-sentinel valkey-tools from $$suite" && \
		$$SUDO apt-get update && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -t "$$suite" valkey-server valkey-sentinel valkey-tools; \
	fi

# vet also type-checks for macOS and Windows: the library and the CLI build
# there (the lab runs on Unix systems only and says so on Windows), and
# nothing else would notice a Linux-only system call slipping in.
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...

# Every package, once per server in SERVERS (REDISKIT_LAB_SERVER set for
# each pass), the passes side by side after one build of the test
# binaries; each pass's output is printed when it ends, with its time.
# go test starts packages in the order given (go list drops the repeats
# ./... brings), so the longest ones go first: started last, sentinel's
# 7 to 8 minutes used to end each pass alone, minutes after the rest.
TESTPKGS ?= ./sentinel/ ./cluster/ ./cmd/rediskit/ ./lab/ ./multidb/ ./replica/ ./hashring/ ./timeline/ ./...
test: redis $(if $(filter valkey,$(SERVERS)),valkey) vet
	sh scripts/test-servers.sh "$(SERVERS)" $(GO) test $(TESTFLAGS) $(TESTPKGS)

# The suite on Redis 8.0, built from Debian's trixie source package into
# $(REDIS8_CACHE) on first use (scripts/redis8.sh; about two minutes on two
# cores). Not part of make test.
test-redis8: redis
	@pkgs=""; \
	for p in pkg-config libssl-dev; do dpkg -s "$$p" >/dev/null 2>&1 || pkgs="$$pkgs $$p"; done; \
	if [ -n "$$pkgs" ]; then \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		echo "make: installing$$pkgs"; \
		$$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y $$pkgs; \
	fi
	@bin=$$(sh scripts/redis8.sh "$(REDIS8_CACHE)") && \
		echo "make: running the suite on $$("$$bin/redis-server" --version)" && \
		PATH="$$bin:$$PATH" REDISKIT_LAB_SERVER=redis $(GO) test $(TESTFLAGS) ./...

# The enum String methods (stringer -linecomment, pinned by version in each
# //go:generate line, fetched from the module proxy on first use) and the
# classify command table (the COMMAND replies of redis-server and
# valkey-server on PATH, merged).
generate: redis valkey
	$(GO) generate ./...

# The lint gate (.golangci.yml): zero findings in library code. The
# pinned golangci-lint is built into bin/ on first use (go install, from
# the module proxy), so the gate is the same on every machine.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOLANGCI_LINT         := bin/golangci-lint-$(GOLANGCI_LINT_VERSION)
$(GOLANGCI_LINT):
	mkdir -p bin/.gobin
	GOBIN=$(CURDIR)/bin/.gobin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv bin/.gobin/golangci-lint $@
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run ./...

# The binary runs directly (not under go run, which exits 1 on Ctrl-C even
# when the tour stopped cleanly), so Ctrl-C ends make demo with status 0.
demo: redis $(if $(filter valkey,$(SERVER)),valkey)
	$(GO) build -o bin/rediskit ./cmd/rediskit
	REDISKIT_LAB_SERVER=$(SERVER) bin/rediskit demo

# The random fault tests, Sentinel's and then Cluster's, for longer than
# make test runs them (20 s each), on SERVER (redis or valkey): kills and
# stale restarts, pauses, black holes, partitions, sentinel restarts and
# failovers (Sentinel); kills and stale restarts of masters and replicas,
# pauses, black holes, CLUSTER FAILOVER in its three forms, slot
# migrations, minority partitions, shards added and removed (Cluster);
# under writers in every mode. FAULT_SEED replays a run (each test prints
# its seed); FAULT_DURATION sets how long faults are injected in each;
# FAULT_ONLY keeps only the faults whose name holds it ("double fault").
FAULT_DURATION ?= 10m
faults: redis $(if $(filter valkey,$(SERVER)),valkey)
	REDISKIT_LAB_SERVER=$(SERVER) REDISKIT_FAULT_DURATION=$(FAULT_DURATION) $(if $(FAULT_SEED),REDISKIT_FAULT_SEED=$(FAULT_SEED)) \
		$(if $(FAULT_ONLY),REDISKIT_FAULT_ONLY='$(FAULT_ONLY)') \
		$(GO) test -race -count=1 -p 1 -timeout 60m -run '^TestRandomFaults$$' -v ./sentinel/ ./cluster/

# Benchmarks compare rediskit with plain go-redis in the same run; see
# BENCHMARKS.md for the method and the figures.
bench: redis
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The auto-pipelining comparison of BENCHMARKS.md (rediskit, go-redis and its
# AutoPipeline, rueidis; throughput, CPU time and allocations a command) on a
# Sentinel lab and a Cluster lab: about 12 minutes.
bench-autopipeline: redis
	$(GO) test -run '^$$' -bench 'AutoPipelineThroughput' -benchtime 1x -timeout 40m -v ./sentinel/ ./cluster/

# The timelines README.md and BENCHMARKS.md embed, redrawn into docs/ from
# fresh runs on a local lab (SERVER: redis or valkey), each figure captioned
# with its run's date, machine and load:
#   docs/failover-under-load.svg, -zoom.svg (and .png): TestFailoverUnderLoad,
#     rediskit (default) and go-redis NewFailoverClient side by side, every
#     write and read by serving node and outcome, through 5 failovers (the
#     test runs all five of its clients: about a minute and a half);
#   docs/replica-adaptation.svg, -rtt.svg (and .png): BenchmarkReplicaAdaptation
#     at master=6ms, reads per 50 ms by node around the latency swap for
#     rediskit Nearest and go-redis RouteByLatency, and rediskit's election
#     round by round (go-redis's run takes up to its 2-minute limit);
#   docs/drill.svg (and .png): rediskit drill --lab --failover, README's drill.
figures: redis $(if $(filter valkey,$(SERVER)),valkey)
	mkdir -p docs
	REDISKIT_LAB_SERVER=$(SERVER) $(GO) test ./sentinel -run 'TestFailoverUnderLoad$$' -count=1 -timeout 15m -v -figures $(CURDIR)/docs
	REDISKIT_LAB_SERVER=$(SERVER) $(GO) test ./replica -run '^$$' -bench 'ReplicaAdaptation/master=6ms' -benchtime 1x -timeout 15m -figures $(CURDIR)/docs
	$(GO) build -o bin/rediskit ./cmd/rediskit
	REDISKIT_LAB_SERVER=$(SERVER) bin/rediskit drill --lab --failover --duration 6s --svg docs/drill.svg --png docs/drill.png

# Every fuzz target of the repo (each func FuzzX in a _test.go file, found
# with grep) runs for $(FUZZTIME) on its own, after its seed corpus: go test
# takes one -fuzz target at a time. Not part of make test (the seed corpora
# run there as ordinary tests). A failing input is saved under the package's
# testdata/fuzz/ and fails make. FUZZFLAGS adds go test flags (-parallel 1).
#
# Go 1.26's fuzz coordinator can end a clean run with a bare "context
# deadline exceeded" when -fuzztime expires while a worker is mid-call
# (go.dev/issue/75804, fixed in Go 1.27): no input failed and none is
# written. That exact outcome, and only that, is reported and not counted
# as a failure.
fuzz:
	@set -e; \
	files=$$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); \
	[ -n "$$files" ] || { echo "make: no fuzz targets found"; exit 1; }; \
	log=$$(mktemp); trap 'rm -f "$$log" "$$log.rc"' EXIT; \
	for file in $$files; do \
		dir=$$(dirname "$$file"); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "$(GO) test -run '^\$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$dir"; \
			{ rc=0; $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) "$$dir" || rc=$$?; \
				echo $$rc >"$$log.rc"; } 2>&1 | tee "$$log"; \
			[ "$$(cat "$$log.rc")" = 0 ] && continue; \
			if [ "$$(grep -c -- '--- FAIL' "$$log")" = 1 ] && ! grep -q 'Failing input written' "$$log" && \
				grep -A1 -- "^--- FAIL: $$name (" "$$log" | tail -n 1 | grep -qx '[[:space:]]*context deadline exceeded'; then \
				echo "make: $$name: a bare 'context deadline exceeded' at the -fuzztime deadline and no failing input: Go's fuzz coordinator (go.dev/issue/75804), not a finding"; \
				continue; \
			fi; \
			exit 1; \
		done; \
	done
