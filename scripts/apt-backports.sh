#!/bin/sh
# Add this Debian release's backports suite to apt, derived from the
# machine's own Debian source, so the repository never names a mirror: the
# URI (and keyring) is whatever the machine already uses for its release
# suite; only the suite name gains "-backports". Writes
# /etc/apt/sources.list.d/rediskit-backports.sources and prints its suite.
# Does nothing (but print) when a backports suite is already configured.
#
# Reads deb822 files (/etc/apt/sources.list.d/*.sources, Debian 12's
# default) and one-line sources (/etc/apt/sources.list, *.list).
#
# With arguments, another entry derived the same way:
#
#	apt-backports.sh TYPE SUITE NAME   (deb-src trixie rediskit-trixie-src)
#
# writes /etc/apt/sources.list.d/NAME.sources (scripts/redis8.sh uses it).
set -eu

. /etc/os-release
codename="${VERSION_CODENAME:-}"
[ -n "$codename" ] || { echo "apt-backports: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }
type=${1:-deb}
suite=${2:-$codename-backports}
out=/etc/apt/sources.list.d/${3:-rediskit-backports}.sources

# Already there (ours or the administrator's)?
if [ -f "$out" ] || { [ "$type" = deb ] && grep -rqsE "^[[:space:]]*(deb[[:space:]].*[[:space:]]$suite([[:space:]]|\$)|Suites:.*[[:space:]]$suite([[:space:]]|\$))" \
	/etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null; }; then
	echo "$suite"
	exit 0
fi

uri=""
keyring=""
# deb822: the first stanza of Types deb whose Suites include the release
# codename itself (not -security: that archive has no backports).
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] || continue
	found=$(awk -v want="$codename" '
		function flush() {
			if (!done && types ~ /(^|[ \t])deb([ \t]|$)/ && uris != "") {
				n = split(suites, s, /[ \t]+/)
				for (i = 1; i <= n; i++) if (s[i] == want) { split(uris, u, /[ \t]+/); print u[1] "\t" key; done = 1 }
			}
			types = ""; uris = ""; suites = ""; key = ""
		}
		/^[ \t]*$/ { flush(); next }
		/^[ \t]*#/ { next }
		/^Types:/   { sub(/^Types:[ \t]*/, "");   types = $0; next }
		/^URIs:/    { sub(/^URIs:[ \t]*/, "");    uris = $0; next }
		/^Suites:/  { sub(/^Suites:[ \t]*/, "");  suites = $0; next }
		/^Signed-By:/ { sub(/^Signed-By:[ \t]*/, ""); key = $0; next }
		END { flush() }
	' "$f")
	if [ -n "$found" ]; then
		uri=$(printf '%s' "$found" | cut -f1)
		keyring=$(printf '%s' "$found" | cut -f2)
		break
	fi
done
# One-line form: deb [options] URI SUITE COMPONENTS...
if [ -z "$uri" ]; then
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		uri=$(awk -v want="$codename" '
			$1 == "deb" {
				i = 2
				if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i+1) == want) { print $i; exit }
			}' "$f")
		[ -n "$uri" ] && break
	done
fi
[ -n "$uri" ] || { echo "apt-backports: no Debian source for suite $codename found under /etc/apt" >&2; exit 1; }

{
	echo "# Added by rediskit (scripts/apt-backports.sh): the machine's own Debian"
	echo "# source for $codename, suite $suite."
	echo "Types: $type"
	echo "URIs: $uri"
	echo "Suites: $suite"
	echo "Components: main"
	[ -z "$keyring" ] || echo "Signed-By: $keyring"
} >"$out"
echo "$suite"
