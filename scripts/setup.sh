#!/usr/bin/env bash
# Installs what shepherd's tests, demo and benchmarks need and is missing.
# Usage: scripts/setup.sh [bench]   ("bench" adds Curator and Kazoo for the peers, promtool and tmux)
set -euo pipefail

need=()
[ -n "${ZOOKEEPER_CLASSPATH:-}" ] || [ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
# TLS servers (zktest.WithTLS) need Netty's codec jar, which zookeeper.jar's
# manifest does not name; libnetty-java comes with the zookeeper package.
[ -n "${ZOOKEEPER_CLASSPATH:-}" ] || [ -f /usr/share/java/netty-codec.jar ] || need+=(libnetty-java)
# PostgreSQL's server binaries (initdb, postgres, psql): the fences' tests
# start a server of their own on a loopback port (internal/pgtest); the
# package's own service is not used.
[ -n "${PGTEST_BINDIR:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
if [ "${1:-}" = bench ]; then
  [ -f /usr/share/java/curator-recipes.jar ] || need+=(libcurator-recipes-java)
  /usr/bin/python3 -c 'import kazoo' >/dev/null 2>&1 || need+=(python3-kazoo)
  command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
  # promtool, for make alerts (the rule and dashboard checks of make test).
  command -v promtool >/dev/null 2>&1 || need+=(prometheus)
  # tmux, for the CLI's terminal tests (they read the screen; skipped without it).
  command -v tmux >/dev/null 2>&1 || need+=(tmux)
fi
[ ${#need[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo="sudo -n"
  else
    echo "shepherd: missing Debian packages: ${need[*]}" >&2
    echo "install them as root:  apt-get install ${need[*]}" >&2
    echo "(or set ZOOKEEPER_CLASSPATH to a classpath holding ZooKeeper's jars)" >&2
    exit 1
  fi
fi
echo "shepherd: installing ${need[*]} ..." >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "shepherd: installed ${need[*]}" >&2
