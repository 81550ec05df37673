# rediskit: make demo (the tour on a local lab) and make test (all tests).
# Both install Redis first when redis-server or redis-sentinel is missing, and
# a C compiler when there is none (go test -race needs cgo).

GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 14m
FUZZTIME  ?= 30s
FUZZFLAGS ?=

.PHONY: all redis test vet lint demo bench fuzz faults generate

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

# vet also type-checks for macOS and Windows: the library and the CLI build
# there (the lab runs on Unix systems only and says so on Windows), and
# nothing else would notice a Linux-only system call slipping in.
vet:
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...

test: redis vet
	$(GO) test $(TESTFLAGS) ./...

# The enum String methods (stringer -linecomment, pinned by version in each
# //go:generate line, fetched from the module proxy on first use) and the
# classify command table (from the COMMAND reply of redis-server on PATH).
generate: redis
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
demo: redis
	$(GO) build -o bin/rediskit ./cmd/rediskit
	bin/rediskit demo

# The random fault test for longer than make test runs it (20 s): kills,
# pauses, black holes, partitions, sentinel restarts and failovers under
# writers in every mode. FAULT_SEED replays a run (the test prints its seed);
# FAULT_DURATION sets how long faults are injected.
FAULT_DURATION ?= 10m
faults: redis
	REDISKIT_FAULT_DURATION=$(FAULT_DURATION) $(if $(FAULT_SEED),REDISKIT_FAULT_SEED=$(FAULT_SEED)) \
		$(GO) test -race -count=1 -timeout 60m -run '^TestRandomFaults$$' -v ./sentinel/

# Benchmarks compare rediskit with plain go-redis in the same run; see
# BENCHMARKS.md for the method and the figures.
bench: redis
	$(GO) test -run '^$$' -bench . -benchmem ./...

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
