package ipc

import (
	"slices"
	"testing"

	"github.com/inkdev/ink/model/providers"
)

// TestWorkerEnvHoldsNoSecret: the proxy, CA, locale, git identity and ink's
// own settings reach the worker; no provider variable, no variable named
// like a key or token, no SSH agent and no git configuration override does.
func TestWorkerEnvHoldsNoSecret(t *testing.T) {
	t.Parallel()
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost",
		"SSL_CERT_FILE=/etc/ca.pem", "LC_ALL=C.UTF-8", "GIT_AUTHOR_NAME=A", "INK_HEARTBEAT=1s",
		"GOCOVERDIR=/tmp/cover",
	}
	host := append([]string(nil), want...)
	for _, k := range providers.EnvVars() {
		host = append(host, k+"=value-of-"+k)
	}
	host = append(host, "HOST_SECRET=s", "MY_API_KEY=k", "GITHUB_TOKEN=t", "INK_SERVICE_TOKEN=x",
		"SSH_AUTH_SOCK=/tmp/agent", "GIT_CONFIG_GLOBAL=/tmp/evil", "GIT_CONFIG_COUNT=1",
		"INK_WORKER=cookie", "INK_WORKER_LOG=/tmp/log")
	got := WorkerEnv(host)
	if !slices.Equal(got, want) {
		t.Errorf("worker env:\n got %v\nwant %v", got, want)
	}
}
