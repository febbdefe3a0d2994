#!/usr/bin/env bash
# Consumer check: depend on shepherd the way a user does, from outside its
# repository.
#
#  1. go.mod must have no replace and no exclude directive (an importer ignores
#     them, and `go install …@version` refuses a module that has them).
#  2. internal/consumercheck writes a module zip of this tree at a
#     pseudo-version, with its .info and .mod, into a temporary directory laid
#     out as a module proxy.
#  3. A fresh module (internal/consumercheck/testdata/consumer) resolves
#     shepherd through that proxy only (GOPROXY=file://…, no replace, no
#     go.work), then `go mod tidy`, `go build`, `go vet` and `go run`: the
#     program starts a zktest ZooKeeper and takes a lock, a semaphore lease and
#     an election's leadership.
#  4. `go install …/cmd/shepherd@VERSION` through the same proxy, then
#     `shepherd -h`.
#  5. The contrib module (contrib/gocron) the same way: its zip at HEAD's
#     pseudo-version, shepherd at the version its go.mod requires (built
#     from that commit with git), and a fresh module requiring only contrib
#     (internal/consumercheck/testdata/gocron) builds, vets and runs.
#
# Other modules resolve through the local module cache, then $(go env GOPROXY).
# Everything is done in a temporary directory (module cache included), removed
# on exit. Needs git, and ZooKeeper for step 3 (`make setup`).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf 'consumercheck: %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
start=$(date +%s)

# 1. Fail fast, with the offending lines, before anything is built.
if bad=$(grep -nE '^[[:space:]]*(replace|exclude)([[:space:](]|$)' go.mod); then
  say "FAIL: go.mod has replace or exclude directives:"
  printf '  go.mod:%s\n' "$bad" >&2
  say "an importer ignores them (it builds against what they replace or exclude),"
  say "and \`go install …@version\` refuses the module: remove them."
  exit 1
fi

export GOWORK=off # no workspace: neither the helper nor the consumer may see one
real_proxy=$(go env GOPROXY)
real_modcache=$(go env GOMODCACHE)
gover=$(sed -n 's/^go[[:space:]]\{1,\}\([0-9][0-9.]*\).*/\1/p' go.mod)
minor=$(printf '%s' "$gover" | cut -d. -f1,2)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/shepherd-consumercheck.XXXXXX")
cleanup() {
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# -trimpath from the start, as the consumer builds below: the helper, the
# consumers and go install then share one compile of the standard library
# (the helper's own, without it, was a second: from a cold cache the
# check took 91 CPU-s, 64 with it).
export GOFLAGS=-trimpath

# 2. The proxy tree.
(cd internal/consumercheck && go vet ./...) || fail "go vet of internal/consumercheck"
read -r mod version < <(cd internal/consumercheck && go run . -root "$root" -out "$tmp/proxy") ||
  fail "could not build the module zip"
[ -n "${version:-}" ] || fail "could not build the module zip"
say "serving $mod@$version from file://$tmp/proxy"

# From here on, only the consumer's view: shepherd from the file proxy, other
# modules from the local cache (read-only, as a proxy) or the real proxy, a
# module cache of its own. GONOSUMDB: this version of shepherd is not in the
# public checksum database; every other module is checked as usual.
# -trimpath: the module cache is new in every run, and without it the build
# cache keys each package by its directory, so every run compiled every
# dependency again (68 CPU-s of a run; 20 with it, once they are cached).
# What is built is the same: the cache is keyed by the sources' contents.
export GOPROXY="file://$tmp/proxy,file://$real_modcache/cache/download,$real_proxy"
export GOMODCACHE="$tmp/modcache"
export GOFLAGS="-mod=mod -modcacherw -trimpath"
export GONOSUMDB="$mod"
export GOPRIVATE= GONOPROXY=

# 3. A fresh consumer module.
consumer="$tmp/consumer"
mkdir -p "$consumer"
cp internal/consumercheck/testdata/consumer/main.go "$consumer/"
printf 'module example.com/shepherd-consumer\n\ngo %s\n' "$minor" >"$consumer/go.mod"
cd "$consumer"
go get "$mod@$version"
go mod tidy
got=$(sed -n 's/^go[[:space:]]\{1,\}\([0-9][0-9.]*\).*/\1/p' go.mod)
[ "$got" = "$minor" ] ||
  fail "depending on $mod changed the consumer's go line from $minor to $got: shepherd's go.mod says 'go $gover'; name the oldest minor release the code needs (e.g. go $minor)"
dir=$(go list -m -f '{{if .Replace}}REPLACED{{else}}{{.Dir}}{{end}}' "$mod")
case "$dir" in
"$GOMODCACHE"/*) ;;
*) fail "$mod resolved to $dir, not to the proxy's zip in the consumer's module cache" ;;
esac
say "$mod@$version resolved to $dir"
go build ./...
go vet ./...
go run . || fail "the consumer program failed"

# 4. go install of the CLI at that version.
cd "$tmp"
GOBIN="$tmp/bin" go install "$mod/cmd/shepherd@$version" ||
  fail "go install $mod/cmd/shepherd@$version failed"
"$tmp/bin/shepherd" -h >"$tmp/help.txt" 2>&1 || fail "shepherd -h failed: $(cat "$tmp/help.txt")"
grep -qi 'usage' "$tmp/help.txt" || fail "shepherd -h printed no usage: $(cat "$tmp/help.txt")"
say "OK go install $mod/cmd/shepherd@$version; shepherd -h prints its usage"

# 5. The contrib module (contrib/gocron, a module of its own, depending on
# shepherd and gocron): its zip at HEAD's pseudo-version, and shepherd at the
# version contrib's go.mod requires, built from the commit that
# pseudo-version names (what an importer's go command fetches). A fresh
# module that requires only contrib builds, vets and runs against them.
cd "$root/internal/consumercheck"
read -r cmod cversion < <(go run . -root "$root" -dir contrib/gocron -out "$tmp/proxy") ||
  fail "could not build contrib/gocron's module zip"
req=$(sed -n 's|^[[:space:]]*'"$mod"' \(v[^[:space:]]*\)$|\1|p' "$root/contrib/gocron/go.mod")
[ -n "$req" ] || fail "contrib/gocron/go.mod does not require $mod"
rev=${req##*-}
go run . -root "$root" -rev "$rev" -out "$tmp/proxy" >/dev/null ||
  fail "contrib/gocron requires $mod@$req: its commit $rev is not in this repository"
say "serving $cmod@$cversion, which requires $mod@$req"
gconsumer="$tmp/gocron-consumer"
mkdir -p "$gconsumer"
cp "$root/internal/consumercheck/testdata/gocron/main.go" "$gconsumer/"
printf 'module example.com/gocron-consumer\n\ngo %s\n' "$minor" >"$gconsumer/go.mod"
cd "$gconsumer"
go get "$cmod@$cversion"
go mod tidy
got=$(go list -m -f '{{.Version}}' "$mod")
[ "$got" = "$req" ] || fail "$mod resolved to $got for contrib, not to the $req its go.mod requires"
go build ./...
go vet ./...
go run . || fail "the gocron consumer program failed"
say "OK $cmod@$cversion builds and runs from an outside module, with $mod@$req"
say "OK in $(($(date +%s) - start)) s"
