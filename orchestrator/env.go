package orchestrator

import (
	"strings"

	"github.com/inkdev/ink/ipc"
	"github.com/inkdev/ink/model/providers"
	"github.com/inkdev/ink/secret"
)

// workerEnv filters the host environment down to what a worker may see:
// the basics a shell needs (PATH, HOME, user, shell, terminal, temp dir,
// time zone), locale, git's commit identity, ink's own variables, what it
// takes to reach a provider from a network that needs a proxy or its own CA
// certificates, and GOCOVERDIR (set only by `go test -cover`). It holds no
// secret: no provider variable (the supervisor resolves each binding's
// endpoint and hands the worker its own key inside the attempt spec), no
// variable named like a secret (secret.IsKeyName), no SSH agent socket and
// no git configuration override. Nothing else leaks. README's Security section
// lists these variables and why each is there.
func workerEnv(environ []string) []string {
	exact := map[string]bool{
		"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
		"TERM": true, "TMPDIR": true, "TZ": true, "LANG": true, "LANGUAGE": true,
		"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true, "XDG_RUNTIME_DIR": true,
		"HTTPS_PROXY": true, "https_proxy": true, "HTTP_PROXY": true, "http_proxy": true,
		"NO_PROXY": true, "no_proxy": true, "SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
		"GOCOVERDIR": true,
	}
	prefixes := []string{"LC_", "INK_", "GIT_AUTHOR_", "GIT_COMMITTER_"}
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "INK_WORKER" || k == "INK_WORKER_LOG" || k == ipc.PooledEnv || secret.IsKeyName(k) || providers.IsProviderVar(k) {
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
