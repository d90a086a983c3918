# make bench runs ink's benchmarks, each beside its floor in the same loop,
# and writes docs/benchmarks.md with every target met or missed. It takes
# ten minutes or more on a small machine.
.PHONY: bench
bench:
	go run ./bench/cmd/report

# make kube-e2e runs the Kubernetes launcher's end-to-end tests against a
# real kube-apiserver and etcd on this machine, with inknode agents playing
# the kubelet (docs/kube-e2e.md). The first run builds kube-apiserver
# (minutes); later runs reuse it from ~/.cache/ink-ci.
.PHONY: kube-e2e
kube-e2e:
	@command -v etcd >/dev/null || { echo "installing etcd-server (Debian)"; apt-get update -qq && apt-get install -y -qq etcd-server; }
	cd ci/kube && go vet ./cmd/inknode && go test -count=1 ./cmd/inknode
	@bin=$$(ci/kube/build.sh) && \
	INK_TEST_KUBE_APISERVER=$$bin/kube-apiserver INK_TEST_INKNODE=$$bin/inknode INK_TEST_ETCD=$$(command -v etcd) \
		go test -count=1 -timeout 30m ./launcher/kube/...
