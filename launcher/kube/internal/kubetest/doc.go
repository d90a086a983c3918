// Package kubetest runs a real Kubernetes control plane on one machine for
// the kube launcher's end-to-end tests: etcd, kube-apiserver (built by
// ci/kube/build.sh) and inknode agents, the test-only node agents that play
// the kubelet (ci/kube/cmd/inknode).
//
// The binaries come from the environment: INK_TEST_KUBE_APISERVER,
// INK_TEST_ETCD and INK_TEST_INKNODE name them. When any is unset, Start
// skips the test with a message saying that `make kube-e2e` runs it, so the
// README's test command needs nothing new.
//
// The apiserver knows two users by token: an administrator (the group
// system:masters), which the harness and the node agents use, and "ink",
// bound in the namespace Namespace to a Role holding exactly the rules of
// InkRules and to a ClusterRole for selfsubjectaccessreviews. A test runs
// ink as that user through InkKubeconfig or InkConfig.
//
// Every process the harness starts is ended by its pid in t.Cleanup: etcd,
// the apiserver, each node agent and every pod process a node agent
// started. The package is for tests only and imports no ink package.
package kubetest
