package providers

import (
	"context"
	"fmt"
	"sync"
)

// ProviderStatus is one provider's line in `ink doctor`. It never holds a
// secret: only which variable is set and which endpoint is used.
type ProviderStatus struct {
	// Name is the provider name of bindings ("anthropic", "ollama", …).
	Name string `json:"name"`
	// Configured says a binding of this provider can run now: its key is
	// set, or (local servers) the server answered.
	Configured bool `json:"configured"`
	// How says why, in words: "ANTHROPIC_API_KEY is set", "OPENAI_API_KEY
	// is not set", "answering, 3 models", "not answering".
	How string `json:"how"`
	// Endpoint is the base URL requests go to.
	Endpoint string `json:"endpoint,omitempty"`
}

// Status reports every provider in the order users see them. Keys are
// checked in env (nil = the process environment); local servers (Ollama,
// vLLM) are probed concurrently with a short timeout each.
func Status(ctx context.Context, env func(string) string) []ProviderStatus {
	env = snapshot(envOrOS(env))
	out := make([]ProviderStatus, len(presets), len(presets)+1)
	var wg sync.WaitGroup
	for i, p := range presets {
		out[i] = ProviderStatus{Name: p.name, Endpoint: endpoint(p, "", env)}
		switch p.name {
		case "ollama", "vllm":
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i].Configured, out[i].How = probeLocal(ctx, p, out[i].Endpoint, env)
			}()
		default:
			out[i].Configured, out[i].How = keyStatus(p, out[i].Endpoint, env)
		}
	}
	wg.Wait()
	for i, p := range presets {
		if EndpointHasCredentials(out[i].Endpoint) {
			out[i].Configured = false
			out[i].How = fmt.Sprintf("the endpoint carries credentials, which ink refuses (endpoints are recorded in session files): give %s without them%s", baseSource(p), keyAdvice(p))
		}
	}
	out = append(out, ProviderStatus{Name: "script", Configured: true, How: "offline script model (script:PATH); needs no key"})
	return out
}

// keyAdvice says where p's key belongs, when it takes one.
func keyAdvice(p preset) string {
	if p.keyVar == "" {
		return ""
	}
	return " and put the key in " + p.keyVar
}

func keyStatus(p preset, base string, env func(string) string) (bool, string) {
	via := ""
	if env(p.baseVar) != "" {
		via = "; endpoint from " + p.baseVar
	}
	if env(p.keyVar) != "" {
		return true, p.keyVar + " is set" + via
	}
	if !isDefaultEndpoint(p, base) {
		return true, p.keyVar + " is not set; using the custom endpoint without a key" + via
	}
	return false, p.keyVar + " is not set"
}

func probeLocal(ctx context.Context, p preset, base string, env func(string) string) (bool, string) {
	var names []string
	var err error
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if p.name == "ollama" {
		names, err = ollamaModels(ctx, base)
	} else {
		names, err = openAIModels(ctx, base, env(p.keyVar))
	}
	src := "default endpoint"
	switch {
	case p.name == "ollama" && env("OLLAMA_HOST") != "":
		src = "endpoint from OLLAMA_HOST"
	case p.baseVar != "" && env(p.baseVar) != "":
		src = "endpoint from " + p.baseVar
	}
	if err != nil {
		return false, "not answering (" + src + ")"
	}
	how := "answering, but no models (" + src + ")"
	switch len(names) {
	case 0:
	case 1:
		how = fmt.Sprintf("answering, 1 model: %s (%s)", names[0], src)
	default:
		how = fmt.Sprintf("answering, %d models, first %s (%s)", len(names), names[0], src)
	}
	if p.keyVar != "" && env(p.keyVar) != "" {
		how += "; " + p.keyVar + " is set"
	}
	return len(names) > 0, how
}

// snapshot reads every provider variable once, so the probes, which run
// concurrently, never call the caller's env function.
func snapshot(env func(string) string) func(string) string {
	vals := map[string]string{}
	for _, k := range EnvVars() {
		vals[k] = env(k)
	}
	return func(k string) string { return vals[k] }
}
