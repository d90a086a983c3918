// Package providers is the table of the model providers ink knows
// (anthropic, openai and the OpenAI-compatible presets deepseek, ollama,
// vllm, openrouter, and script): where each one takes its key and
// endpoint from, how a binding is checked against them (Check), the
// default model when --model is absent, the provider status shown by `ink
// doctor`, the stall limits (StallTimeouts) and the retry policy every
// real provider runs under. It links no provider SDK: the supervisor
// checks bindings and hands out keys with it, and only a worker, which
// talks to models, opens providers (package connect).
//
// Everything here reads the environment only through the env function the
// caller passes, so a worker sees exactly the variables it was given.
package providers

import (
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
)

// The public endpoints of the two SDK providers, and Anthropic's key.
const (
	anthropicKeyVar = "ANTHROPIC_API_KEY"
	// AnthropicBaseURL is Anthropic's API root (without /v1).
	AnthropicBaseURL = "https://api.anthropic.com"
	// OpenAIBaseURL is OpenAI's endpoint, /v1 included.
	OpenAIBaseURL = "https://api.openai.com/v1"
)

// preset says where a provider takes its key and endpoint from.
type preset struct {
	name string
	// keyVar holds the API key; "" for servers that take none.
	keyVar string
	// keyOptional: the server works without a key (a key, when set, is sent).
	keyOptional bool
	// baseVar overrides the endpoint; "" when there is none.
	baseVar string
	// defaultBase is the endpoint when neither the binding nor baseVar sets one.
	defaultBase string
	// defaultModel is the model Default picks for this provider.
	defaultModel string
	// signup tells a user without a key where to get one.
	signup string
}

// presets lists the providers in the order Default tries them.
var presets = []preset{
	{name: "anthropic", keyVar: anthropicKeyVar, baseVar: "ANTHROPIC_BASE_URL", defaultBase: AnthropicBaseURL,
		defaultModel: "claude-sonnet-4-6", signup: "https://console.anthropic.com"},
	{name: "openai", keyVar: "OPENAI_API_KEY", baseVar: "OPENAI_BASE_URL", defaultBase: OpenAIBaseURL,
		defaultModel: "gpt-5.4", signup: "https://platform.openai.com/api-keys"},
	{name: "deepseek", keyVar: "DEEPSEEK_API_KEY", baseVar: "DEEPSEEK_BASE_URL", defaultBase: "https://api.deepseek.com",
		defaultModel: "deepseek-chat", signup: "https://platform.deepseek.com"},
	{name: "openrouter", keyVar: "OPENROUTER_API_KEY", baseVar: "OPENROUTER_BASE_URL", defaultBase: "https://openrouter.ai/api/v1",
		signup: "https://openrouter.ai/keys"},
	{name: "ollama", defaultBase: defaultOllamaRoot + "/v1"},
	{name: "vllm", keyVar: "VLLM_API_KEY", keyOptional: true, baseVar: "VLLM_BASE_URL", defaultBase: "http://127.0.0.1:8000/v1"},
}

const defaultOllamaRoot = "http://127.0.0.1:11434"

func lookupPreset(name string) (preset, bool) {
	for _, p := range presets {
		if p.name == name {
			return p, true
		}
	}
	return preset{}, false
}

// EnvVars lists the environment variables the providers read. A worker's
// environment allowlist passes exactly these (besides PATH, HOME, …).
func EnvVars() []string {
	return []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
		"OPENAI_API_KEY", "OPENAI_BASE_URL",
		"DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL",
		"OPENROUTER_API_KEY", "OPENROUTER_BASE_URL",
		"OLLAMA_HOST",
		"VLLM_BASE_URL", "VLLM_API_KEY",
		model.ResponseHeaderTimeoutVar, model.StreamIdleTimeoutVar,
	}
}

// StallTimeouts reads the stall limits from env (nil = the process
// environment): INK_RESPONSE_HEADER_TIMEOUT bounds the wait for a
// response's headers, INK_STREAM_IDLE_TIMEOUT the wait for each next byte
// of a stream (see model.ParseStallTimeout; both default to
// model.DefaultStallTimeout). A value that is not a duration is an error
// naming the variable.
func StallTimeouts(env func(string) string) (header, idle time.Duration, err error) {
	env = envOrOS(env)
	header, err = model.ParseStallTimeout(model.ResponseHeaderTimeoutVar, env(model.ResponseHeaderTimeoutVar))
	if err != nil {
		return 0, 0, err
	}
	idle, err = model.ParseStallTimeout(model.StreamIdleTimeoutVar, env(model.StreamIdleTimeoutVar))
	if err != nil {
		return 0, 0, err
	}
	return header, idle, nil
}

func envOrOS(env func(string) string) func(string) string {
	if env == nil {
		return os.Getenv
	}
	return func(k string) string { return strings.TrimSpace(env(k)) }
}

// Resolve returns b with BaseURL set to the endpoint it will actually use:
// the binding's own BaseURL (--base-url), else the provider's variable
// (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, OLLAMA_HOST, VLLM_BASE_URL, …),
// else the provider's default. Launch records store the result, so a
// resume can tell when the endpoint changed. A key never goes in. Script
// and unknown bindings are returned as they are.
func Resolve(b model.Binding, env func(string) string) model.Binding {
	env = envOrOS(env)
	p, ok := lookupPreset(b.Provider)
	if !ok {
		return b
	}
	b.BaseURL = endpoint(p, b.BaseURL, env)
	return b
}

// endpoint is the effective base URL of p, without a trailing slash.
func endpoint(p preset, explicit string, env func(string) string) string {
	base := strings.TrimSpace(explicit)
	if base == "" && p.name == "ollama" {
		if host := env("OLLAMA_HOST"); host != "" {
			base = ollamaRoot(host) + "/v1"
		}
	}
	if base == "" && p.baseVar != "" {
		base = env(p.baseVar)
	}
	if base == "" {
		base = p.defaultBase
	}
	return strings.TrimRight(base, "/")
}

// ollamaRoot turns OLLAMA_HOST ("127.0.0.1:11434", "0.0.0.0", ":11434",
// "http://box:11434") into the server's root URL.
func ollamaRoot(host string) string {
	host = strings.TrimRight(strings.TrimSpace(host), "/")
	if host == "" {
		return defaultOllamaRoot
	}
	scheme := "http"
	if i := strings.Index(host, "://"); i >= 0 {
		scheme, host = host[:i], host[i+3:]
	}
	hostname, port := host, "11434"
	if h, p, ok := strings.Cut(host, ":"); ok && !strings.Contains(p, ":") {
		hostname, port = h, p
	}
	if hostname == "" || hostname == "0.0.0.0" {
		hostname = "127.0.0.1"
	}
	if port == "" {
		port = "11434"
	}
	return scheme + "://" + hostname + ":" + port
}

// EndpointHasCredentials reports whether an endpoint URL carries
// credentials: user info (https://user:pw@host) or a key in its query
// (?key=, ?api-key=, ?api_key=). ink records endpoints in session files, so
// it refuses such an endpoint; the key belongs in the provider's variable.
func EndpointHasCredentials(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	q := u.Query()
	return u.User != nil || q.Has("key") || q.Has("api-key") || q.Has("api_key")
}

// isDefaultEndpoint reports whether base is p's public endpoint, the one a
// key is required for.
func isDefaultEndpoint(p preset, base string) bool {
	return strings.TrimRight(base, "/") == strings.TrimRight(p.defaultBase, "/")
}

// Settings are what an adapter needs to reach the provider of a checked
// binding. They hold the key: keep them in memory only.
type Settings struct {
	// Provider is the provider's name ("anthropic", "openai", "ollama", …).
	Provider string
	// Model is the binding's model name.
	Model string
	// APIKey is the key to send; "" for servers that take none.
	APIKey string
	// KeyVar is the variable the key comes from, named when the provider
	// rejects it; "" for servers without keys.
	KeyVar string
	// BaseURL is the endpoint requests go to, without a trailing slash.
	BaseURL string
	// ResponseHeaderTimeout and StreamIdleTimeout are the stall limits
	// (StallTimeouts).
	ResponseHeaderTimeout, StreamIdleTimeout time.Duration
	// LegacyMaxTokens: the server knows max_tokens, not OpenAI's
	// max_completion_tokens (every OpenAI-compatible server but OpenAI's
	// own).
	LegacyMaxTokens bool
	// ReasoningEffort: the server takes reasoning_effort (OpenAI's own).
	ReasoningEffort bool
}

// Check checks binding b against the provider table and env (nil = the
// process environment) without building a client or contacting anything,
// and returns what an adapter needs to reach it. An unknown provider, a
// missing model name, an endpoint that is not an http(s) URL, a missing key
// for a public endpoint, or a stall limit that is not a duration, is an
// error naming what to set or fix. A script binding is not checked here:
// its file is read when it is opened.
func Check(b model.Binding, env func(string) string) (Settings, error) {
	env = envOrOS(env)
	if b.Provider == "script" {
		return Settings{Provider: "script", Model: b.Model}, nil
	}
	p, ok := lookupPreset(b.Provider)
	if !ok {
		return Settings{}, fmt.Errorf("model %s: unknown provider %q; use one of %s, or script:PATH", b, b.Provider, strings.Join(model.KnownProviders[:len(model.KnownProviders)-1], ", "))
	}
	if strings.TrimSpace(b.Model) == "" {
		return Settings{}, fmt.Errorf("model %s: missing model name after %q", b, b.Provider+"/")
	}
	base := endpoint(p, b.BaseURL, env)
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, fmt.Errorf("model %s: endpoint %q is not an http(s) URL; fix --base-url or %s", b, base, baseSource(p))
	}
	key := ""
	if p.keyVar != "" {
		key = env(p.keyVar)
	}
	if key == "" && p.keyVar != "" && !p.keyOptional && isDefaultEndpoint(p, base) {
		return Settings{}, fmt.Errorf("model %s: %s is not set: export %s=<your key> (get one at %s), or choose another model with --model", b, p.keyVar, p.keyVar, p.signup)
	}
	header, idle, err := StallTimeouts(env)
	if err != nil {
		return Settings{}, fmt.Errorf("model %s: %w", b, err)
	}
	return Settings{
		Provider: p.name, Model: b.Model, APIKey: key, KeyVar: p.keyVar, BaseURL: base,
		ResponseHeaderTimeout: header, StreamIdleTimeout: idle,
		LegacyMaxTokens: p.name != "openai" || !isDefaultEndpoint(p, base),
		ReasoningEffort: p.name == "openai",
	}, nil
}

// baseSource names where p's endpoint can be set.
func baseSource(p preset) string {
	switch {
	case p.name == "ollama":
		return "OLLAMA_HOST"
	case p.baseVar != "":
		return p.baseVar
	}
	return "--base-url"
}
