package providers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/providers"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// fakeOllama serves /api/tags (and /v1/models) with the given models.
func fakeOllama(t *testing.T, tags bool, models ...string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	if tags {
		mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
			var parts []string
			for _, m := range models {
				parts = append(parts, `{"name":"`+m+`","model":"`+m+`","size":4920753328}`)
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"models":[` + strings.Join(parts, ",") + `]}`))
		})
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		var parts []string
		for _, m := range models {
			parts = append(parts, `{"id":"`+m+`","object":"model","created":1,"owned_by":"library"}`)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[` + strings.Join(parts, ",") + `]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// deadURL is a loopback address nobody listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestResolve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		b    model.Binding
		env  map[string]string
		want string
	}{
		{"anthropic default", model.Binding{Provider: "anthropic", Model: "m"}, nil, "https://api.anthropic.com"},
		{"anthropic from env", model.Binding{Provider: "anthropic", Model: "m"}, map[string]string{"ANTHROPIC_BASE_URL": "https://proxy.example/"}, "https://proxy.example"},
		{"binding wins over env", model.Binding{Provider: "openai", Model: "m", BaseURL: "http://127.0.0.1:8080/v1"}, map[string]string{"OPENAI_BASE_URL": "https://other/v1"}, "http://127.0.0.1:8080/v1"},
		{"openai default", model.Binding{Provider: "openai", Model: "m"}, nil, "https://api.openai.com/v1"},
		{"openai from env", model.Binding{Provider: "openai", Model: "m"}, map[string]string{"OPENAI_BASE_URL": "http://gpu:9000/v1"}, "http://gpu:9000/v1"},
		{"deepseek default", model.Binding{Provider: "deepseek", Model: "m"}, nil, "https://api.deepseek.com"},
		{"openrouter default", model.Binding{Provider: "openrouter", Model: "meta-llama/llama-3.1-8b"}, nil, "https://openrouter.ai/api/v1"},
		{"ollama default", model.Binding{Provider: "ollama", Model: "llama3.2"}, nil, "http://127.0.0.1:11434/v1"},
		{"ollama host:port", model.Binding{Provider: "ollama", Model: "llama3.2"}, map[string]string{"OLLAMA_HOST": "box:11500"}, "http://box:11500/v1"},
		{"ollama bind-all host", model.Binding{Provider: "ollama", Model: "llama3.2"}, map[string]string{"OLLAMA_HOST": "0.0.0.0"}, "http://127.0.0.1:11434/v1"},
		{"ollama url", model.Binding{Provider: "ollama", Model: "llama3.2"}, map[string]string{"OLLAMA_HOST": "https://ollama.lan:443/"}, "https://ollama.lan:443/v1"},
		{"vllm default", model.Binding{Provider: "vllm", Model: "m"}, nil, "http://127.0.0.1:8000/v1"},
		{"vllm from env", model.Binding{Provider: "vllm", Model: "m"}, map[string]string{"VLLM_BASE_URL": "http://gpu:8000/v1"}, "http://gpu:8000/v1"},
		{"script untouched", model.Binding{Provider: "script", Model: "x.yaml"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"ANTHROPIC_API_KEY": "sk-secret", "OPENAI_API_KEY": "sk-secret"}
			for k, v := range tc.env {
				env[k] = v
			}
			got := providers.Resolve(tc.b, envOf(env))
			if got.BaseURL != tc.want || got.Provider != tc.b.Provider || got.Model != tc.b.Model {
				t.Errorf("Resolve = %+v, want BaseURL %q", got, tc.want)
			}
			if strings.Contains(got.String()+got.BaseURL, "sk-secret") {
				t.Errorf("a key leaked into the binding: %+v", got)
			}
		})
	}
}

// TestCheck: a binding is checked against the table without a client:
// what is missing or wrong is an error naming what to fix.
func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		b       model.Binding
		env     map[string]string
		wantErr string // "" = opens
	}{
		{"anthropic with key", model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6"}, map[string]string{"ANTHROPIC_API_KEY": "k"}, ""},
		{"anthropic without key", model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6"}, nil, "ANTHROPIC_API_KEY is not set: export ANTHROPIC_API_KEY=<your key>"},
		{"anthropic proxy without key", model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6"}, map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"}, ""},
		{"openai without key", model.Binding{Provider: "openai", Model: "gpt-5.4"}, nil, "OPENAI_API_KEY is not set"},
		{"openai local server without key", model.Binding{Provider: "openai", Model: "qwen", BaseURL: "http://127.0.0.1:8080/v1"}, nil, ""},
		{"deepseek without key", model.Binding{Provider: "deepseek", Model: "deepseek-chat"}, nil, "DEEPSEEK_API_KEY is not set"},
		{"openrouter without key", model.Binding{Provider: "openrouter", Model: "a/b"}, nil, "OPENROUTER_API_KEY is not set"},
		{"ollama needs no key", model.Binding{Provider: "ollama", Model: "llama3.2"}, nil, ""},
		{"vllm needs no key", model.Binding{Provider: "vllm", Model: "m"}, nil, ""},
		{"bad endpoint", model.Binding{Provider: "openai", Model: "m", BaseURL: "localhost:8080"}, nil, `endpoint "localhost:8080" is not an http(s) URL`},
		{"unknown provider", model.Binding{Provider: "gemini", Model: "m"}, nil, `unknown provider "gemini"`},
		{"missing model", model.Binding{Provider: "ollama"}, nil, "missing model name"},
		{"script is read when opened", model.Binding{Provider: "script", Model: "testdata/nope.yaml"}, nil, ""},
		{"stall limits", model.Binding{Provider: "ollama", Model: "m"}, map[string]string{"INK_STREAM_IDLE_TIMEOUT": "90s", "INK_RESPONSE_HEADER_TIMEOUT": "off"}, ""},
		{"bad stall limit", model.Binding{Provider: "ollama", Model: "m"}, map[string]string{"INK_STREAM_IDLE_TIMEOUT": "soon"}, "model ollama/m: INK_STREAM_IDLE_TIMEOUT=soon is not a duration: give one such as 90s or 5m, or off to wait for ever"},
		{"negative stall limit", model.Binding{Provider: "ollama", Model: "m"}, map[string]string{"INK_RESPONSE_HEADER_TIMEOUT": "-5s"}, "INK_RESPONSE_HEADER_TIMEOUT=-5s is not a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, err := providers.Check(tc.b, envOf(tc.env))
			if tc.wantErr == "" {
				if err != nil || st.Provider != tc.b.Provider || st.Model != tc.b.Model {
					t.Fatalf("Check = %+v, %v", st, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// TestCheckSettings: the settings of a checked binding carry its key and
// endpoint, and the OpenAI flags follow the server.
func TestCheckSettings(t *testing.T) {
	t.Parallel()
	st, err := providers.Check(model.Binding{Provider: "openai", Model: "gpt-5.4"}, envOf(map[string]string{"OPENAI_API_KEY": "k", "INK_STREAM_IDLE_TIMEOUT": "90s"}))
	if err != nil {
		t.Fatal(err)
	}
	if st.APIKey != "k" || st.KeyVar != "OPENAI_API_KEY" || st.BaseURL != providers.OpenAIBaseURL || st.LegacyMaxTokens || !st.ReasoningEffort || st.StreamIdleTimeout != 90*time.Second {
		t.Fatalf("OpenAI settings %+v", st)
	}
	st, err = providers.Check(model.Binding{Provider: "ollama", Model: "llama3.2"}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if st.APIKey != "" || st.KeyVar != "" || st.BaseURL != "http://127.0.0.1:11434/v1" || !st.LegacyMaxTokens || st.ReasoningEffort {
		t.Fatalf("Ollama settings %+v", st)
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	ollama := fakeOllama(t, true, "nomic-embed-text:latest", "qwen3:8b", "llama3.2:latest")
	emptyOllama := fakeOllama(t, true, "mxbai-embed-large")
	v1Only := fakeOllama(t, false, "gemma3")
	dead := deadURL(t)
	cases := []struct {
		name    string
		env     map[string]string
		want    model.Binding
		wantErr []string
	}{
		{"anthropic first", map[string]string{"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o", "OLLAMA_HOST": ollama.URL},
			model.Binding{Provider: "anthropic", Model: "claude-sonnet-4-6", BaseURL: "https://api.anthropic.com"}, nil},
		{"openai next", map[string]string{"OPENAI_API_KEY": "o", "DEEPSEEK_API_KEY": "d", "OLLAMA_HOST": ollama.URL},
			model.Binding{Provider: "openai", Model: "gpt-5.4", BaseURL: "https://api.openai.com/v1"}, nil},
		{"deepseek next", map[string]string{"DEEPSEEK_API_KEY": "d", "OLLAMA_HOST": ollama.URL},
			model.Binding{Provider: "deepseek", Model: "deepseek-chat", BaseURL: "https://api.deepseek.com"}, nil},
		{"openrouter key alone is not a default", map[string]string{"OPENROUTER_API_KEY": "r", "OLLAMA_HOST": ollama.URL},
			model.Binding{Provider: "ollama", Model: "qwen3:8b", BaseURL: ollama.URL + "/v1"}, nil},
		{"local ollama", map[string]string{"OLLAMA_HOST": ollama.URL},
			model.Binding{Provider: "ollama", Model: "qwen3:8b", BaseURL: ollama.URL + "/v1"}, nil},
		{"ollama answering only /v1/models", map[string]string{"OLLAMA_HOST": v1Only.URL},
			model.Binding{Provider: "ollama", Model: "gemma3", BaseURL: v1Only.URL + "/v1"}, nil},
		{"ollama without models", map[string]string{"OLLAMA_HOST": emptyOllama.URL}, model.Binding{},
			[]string{"has no chat models", "ollama pull", "ink demo"}},
		{"nothing available", map[string]string{"OLLAMA_HOST": dead}, model.Binding{},
			[]string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "no Ollama answered at " + dead + "/v1", "--model", "`ink demo`", "needs no model"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			got, err := providers.Default(context.Background(), envOf(tc.env))
			if elapsed := time.Since(start); elapsed > 2*time.Second {
				t.Errorf("Default took %v", elapsed)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Default = %+v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Default = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	ollama := fakeOllama(t, true, "qwen3:8b")
	env := map[string]string{
		"ANTHROPIC_API_KEY": "sk-ant-secret-value",
		"OPENAI_BASE_URL":   "http://127.0.0.1:1234/v1",
		"OLLAMA_HOST":       ollama.URL,
		"VLLM_BASE_URL":     deadURL(t) + "/v1",
	}
	got := providers.Status(context.Background(), envOf(env))
	byName := map[string]providers.ProviderStatus{}
	var names []string
	for _, s := range got {
		byName[s.Name] = s
		names = append(names, s.Name)
		if strings.Contains(s.How+s.Endpoint, "secret") {
			t.Errorf("status of %s shows a secret: %+v", s.Name, s)
		}
	}
	if want := []string{"anthropic", "openai", "deepseek", "openrouter", "ollama", "vllm", "script"}; !slices.Equal(names, want) {
		t.Errorf("providers = %v, want %v", names, want)
	}
	check := func(name string, configured bool, how, endpoint string) {
		t.Helper()
		s := byName[name]
		if s.Configured != configured || !strings.Contains(s.How, how) || (endpoint != "" && s.Endpoint != endpoint) {
			t.Errorf("%s = %+v, want configured=%v, how containing %q, endpoint %q", name, s, configured, how, endpoint)
		}
	}
	check("anthropic", true, "ANTHROPIC_API_KEY is set", "https://api.anthropic.com")
	check("openai", true, "endpoint from OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
	check("deepseek", false, "DEEPSEEK_API_KEY is not set", "https://api.deepseek.com")
	check("openrouter", false, "OPENROUTER_API_KEY is not set", "")
	check("ollama", true, "answering, 1 model: qwen3:8b (endpoint from OLLAMA_HOST)", ollama.URL+"/v1")
	check("vllm", false, "not answering (endpoint from VLLM_BASE_URL)", "")
	check("script", true, "needs no key", "")
}

func TestEnvVarsCoverEveryVariableRead(t *testing.T) {
	t.Parallel()
	vars := providers.EnvVars()
	read := map[string]bool{}
	record := func(k string) string { read[k] = true; return "" }
	for _, p := range model.KnownProviders {
		if p == "script" {
			continue
		}
		b := model.Binding{Provider: p, Model: "m"}
		providers.Resolve(b, record)
		providers.Check(b, record)
	}
	providers.Status(context.Background(), func(k string) string {
		read[k] = true
		if k == "OLLAMA_HOST" || k == "VLLM_BASE_URL" {
			return deadURL(t)
		}
		return ""
	})
	for k := range read {
		if k != "" && !slices.Contains(vars, k) {
			t.Errorf("providers read %s but EnvVars does not list it, so a worker would never see it", k)
		}
	}
	for _, must := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "OLLAMA_HOST", "VLLM_BASE_URL", "VLLM_API_KEY", "INK_RESPONSE_HEADER_TIMEOUT", "INK_STREAM_IDLE_TIMEOUT"} {
		if !slices.Contains(vars, must) {
			t.Errorf("EnvVars lacks %s", must)
		}
	}
}

func TestStatusProbesVLLMWithItsKey(t *testing.T) {
	t.Parallel()
	vllm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer vk" {
			http.Error(w, `{"error":{"message":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model"}]}`))
	}))
	t.Cleanup(vllm.Close)
	env := map[string]string{"VLLM_BASE_URL": vllm.URL + "/v1", "VLLM_API_KEY": "vk", "OLLAMA_HOST": deadURL(t)}
	for _, s := range providers.Status(context.Background(), envOf(env)) {
		if s.Name != "vllm" {
			continue
		}
		if !s.Configured || !strings.Contains(s.How, "Qwen/Qwen3-8B") || !strings.Contains(s.How, "VLLM_API_KEY is set") || strings.Contains(s.How, "vk") {
			t.Errorf("vllm status = %+v", s)
		}
	}
}
