#!/usr/bin/env bash
# build.sh prints a directory holding kube-apiserver and inknode for ink's
# Kubernetes e2e tests, building them first when the cache lacks them.
#
# The directory is ${XDG_CACHE_HOME:-$HOME/.cache}/ink-ci/
# kube-v1.37.2-<go version>-<hash of go.mod, go.sum and inknode's sources>.
# kube-apiserver itself is cached apart, keyed by go.sum alone, so a change
# to inknode rebuilds only inknode; it is reused when its --version says
# v1.37.2. A cold build of kube-apiserver takes minutes (docs/kube-e2e.md);
# its progress goes to stderr, the directory alone to stdout.
set -euo pipefail
version=v1.37.2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
gover=$(go env GOVERSION)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ink-ci
api_key=$(sha256sum go.sum | cut -c1-16)
all_key=$(cat go.mod go.sum $(find cmd/inknode -name '*.go' | LC_ALL=C sort) | sha256sum | cut -c1-16)
api_dir=$cache/kube-apiserver-$version-$gover-$api_key
dir=$cache/kube-$version-$gover-$all_key
mkdir -p "$cache"

ok_apiserver() { [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "Kubernetes $version"; }

if ! ok_apiserver "$api_dir/kube-apiserver"; then
	echo "build.sh: building kube-apiserver $version (minutes on a cold cache)" >&2
	tmp=$(mktemp -d "$cache/.build.XXXXXX")
	start=$(date +%s)
	nice -n 10 go build -o "$tmp/kube-apiserver" \
		-ldflags "-X k8s.io/component-base/version.gitVersion=$version" k8s.io/kubernetes/cmd/kube-apiserver
	ok_apiserver "$tmp/kube-apiserver" || { echo "build.sh: the built kube-apiserver does not report $version" >&2; exit 1; }
	mkdir -p "$api_dir"
	mv "$tmp/kube-apiserver" "$api_dir/kube-apiserver"
	rmdir "$tmp"
	echo "build.sh: kube-apiserver built in $(( $(date +%s) - start )) s" >&2
fi

if ! { ok_apiserver "$dir/kube-apiserver" && [ -x "$dir/inknode" ]; }; then
	tmp=$(mktemp -d "$cache/.build.XXXXXX")
	nice -n 10 go build -o "$tmp/inknode" ./cmd/inknode
	ln -f "$api_dir/kube-apiserver" "$tmp/kube-apiserver" 2>/dev/null || cp "$api_dir/kube-apiserver" "$tmp/kube-apiserver"
	rm -rf "$dir"
	mv "$tmp" "$dir"
fi
echo "$dir"
