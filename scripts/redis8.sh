#!/bin/sh
# Build Redis 8.0 from Debian's source package (suite trixie) into a
# cache directory outside the tree, and print the directory holding its
# redis-server and redis-sentinel. A second run finds the build and only
# prints it.
#
#	scripts/redis8.sh [cache-dir]      (default ~/.cache/rediskit/redis8)
#
# The source comes from the machine's own Debian mirror: a deb-src entry
# for trixie is derived from its existing source by apt-backports.sh
# (same URI and keyring), and only the upstream
# tarball (redis_8.0.*.orig.tar.gz) is fetched, checked against the hash
# apt lists for it. It is built with TLS (BUILD_TLS=yes: the lab's TLS
# topologies need it), so it needs make, a C compiler, pkg-config and
# libssl-dev (make test-redis8 installs what is missing).
set -eu
cache=${1:-${HOME:-/root}/.cache/rediskit/redis8}
mkdir -p "$cache"
if [ -x "$cache/bin/redis-server" ] && [ -x "$cache/bin/redis-sentinel" ] && [ -f "$cache/bin/.built-with-tls" ]; then
	echo "$cache/bin"
	exit 0
fi

if [ ! -f /etc/apt/sources.list.d/rediskit-trixie-src.sources ]; then
	sh "$(dirname "$0")/apt-backports.sh" deb-src trixie rediskit-trixie-src >/dev/null
	apt-get update -q >&2
fi

# 'URI' file size SHA256:hash, for the upstream tarball only.
# (In an empty directory: where the file is already, apt prints "Skipping
# already downloaded file" instead of its URI.)
empty=$(mktemp -d)
line=$(cd "$empty" && apt-get source --print-uris redis/trixie 2>/dev/null | grep "^'.*orig\.tar" | head -n 1)
rmdir "$empty"
[ -n "$line" ] || { echo "redis8: apt lists no redis source in trixie" >&2; exit 1; }
url=$(echo "$line" | awk '{ gsub(/\047/, "", $1); print $1 }')
file=$(echo "$line" | awk '{ print $2 }')
hash=$(echo "$line" | awk '{ print $4 }')
if [ ! -f "$cache/$file" ]; then
	/usr/lib/apt/apt-helper download-file "$url" "$cache/$file" "$hash" >&2
fi
dir="$cache/$(tar -tzf "$cache/$file" | head -n 1 | cut -d/ -f1)"
[ -d "$dir" ] || tar -xzf "$cache/$file" -C "$cache"
began=$(date +%s)
make -C "$dir" distclean >/dev/null 2>&1 || true
make -C "$dir" -j"$(nproc)" BUILD_TLS=yes >"$cache/build.log" 2>&1 || { tail -n 30 "$cache/build.log" >&2; echo "redis8: build failed (log: $cache/build.log)" >&2; exit 1; }
echo "redis8: built $(basename "$dir") in $(( $(date +%s) - began )) s (log: $cache/build.log)" >&2
mkdir -p "$cache/bin"
cp "$dir/src/redis-server" "$cache/bin/redis-server"
cp "$dir/src/redis-server" "$cache/bin/redis-sentinel"
touch "$cache/bin/.built-with-tls"
echo "$cache/bin"
