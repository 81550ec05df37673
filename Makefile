# rediskit: make demo (the tour on a local lab) and make test (all tests).
# Both install Redis first when redis-server or redis-sentinel is missing.

GO        ?= go
TESTFLAGS ?= -race -count=1 -timeout 14m

.PHONY: all redis test vet demo bench fuzz

all: test

# Install redis-server, redis-sentinel and redis-cli from Debian packages when
# they are not on PATH. The lab starts its own processes; no system Redis
# service is used.
redis:
	@if command -v redis-server >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1; then \
		: ; \
	else \
		echo "make: installing redis-server redis-sentinel redis-tools"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y redis-server redis-sentinel redis-tools; \
	fi

vet:
	$(GO) vet ./...

test: redis vet
	$(GO) test $(TESTFLAGS) ./...

demo: redis
	$(GO) run ./cmd/rediskit demo

# Benchmarks compare rediskit with plain go-redis in the same run; see
# BENCHMARKS.md for the method and the figures.
bench: redis
	$(GO) test -run '^$$' -bench . -benchmem ./...
