package orchestrator

import (
	"slices"
	"testing"

	"github.com/inkdev/ink/model/providers"
)

// TestWorkerEnvProviders: every variable a provider reads reaches the
// worker, as do the proxy and CA settings needed to reach a provider;
// variables outside the list do not.
func TestWorkerEnvProviders(t *testing.T) {
	t.Parallel()
	var host, want []string
	for _, k := range providers.EnvVars() {
		host = append(host, k+"=value-of-"+k)
		want = append(want, k+"=value-of-"+k)
	}
	for _, kv := range []string{"HTTPS_PROXY=http://proxy:3128", "no_proxy=localhost", "SSL_CERT_FILE=/etc/ca.pem"} {
		host = append(host, kv)
		want = append(want, kv)
	}
	host = append(host, "HOST_SECRET=s", "MY_API_KEY=k", "OPENAI_API_KEYS=x", "XANTHROPIC_API_KEY=y")
	got := workerEnv(host)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("worker env lacks %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("worker env has %d variables, want exactly %d: %v", len(got), len(want), got)
	}
}
