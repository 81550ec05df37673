# rediskit: make demo (the tour on a local lab) and make test (all tests).
# Both install Redis first when redis-server or redis-sentinel is missing, and
# a C compiler when there is none (go test -race needs cgo).

GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 14m

.PHONY: all redis test vet demo bench fuzz

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

vet:
	$(GO) vet ./...

test: redis vet
	$(GO) test $(TESTFLAGS) ./...

# The binary runs directly (not under go run, which exits 1 on Ctrl-C even
# when the tour stopped cleanly), so Ctrl-C ends make demo with status 0.
demo: redis
	$(GO) build -o bin/rediskit ./cmd/rediskit
	bin/rediskit demo

# Benchmarks compare rediskit with plain go-redis in the same run; see
# BENCHMARKS.md for the method and the figures.
bench: redis
	$(GO) test -run '^$$' -bench . -benchmem ./...
