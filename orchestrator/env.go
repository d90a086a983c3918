package orchestrator

import (
	"strings"

	"github.com/inkdev/ink/model/providers"
)

// workerEnv filters the host environment down to what a worker may see
// (DESIGN.md §2): the basics a shell needs (XDG_RUNTIME_DIR also tells the
// tools where the host-wide edit locks live), locale, git identity, ink's own
// variables, the providers' variables, and what it takes to reach a
// provider from a network that needs a proxy or its own CA certificates.
// Nothing else leaks.
func workerEnv(environ []string) []string {
	exact := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"TERM": true, "TMPDIR": true, "TZ": true, "LANG": true, "LANGUAGE": true,
		"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_RUNTIME_DIR": true, "SSH_AUTH_SOCK": true,
		"HTTPS_PROXY": true, "https_proxy": true, "HTTP_PROXY": true, "http_proxy": true,
		"NO_PROXY": true, "no_proxy": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	}
	for _, v := range providers.EnvVars() {
		exact[v] = true
	}
	prefixes := []string{"LC_", "INK_", "GIT_AUTHOR_", "GIT_COMMITTER_", "GIT_CONFIG_"}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "INK_WORKER" || k == "INK_WORKER_LOG" {
			continue
		}
		keep := exact[k]
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				keep = true
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
