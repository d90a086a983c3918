package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/inkdev/ink/model"
)

// probeTimeout bounds one look at a local server, so a missing Ollama costs
// a start-up almost nothing.
const probeTimeout = 400 * time.Millisecond

// Default picks the model when --model is absent: the first of
// Anthropic, OpenAI and DeepSeek whose key is set in env, with a sensible
// model of each; else a local Ollama that answers within a short timeout,
// with the first model it lists. The binding comes back resolved (BaseURL
// filled). When none is available the error lists the choices and names
// `ink demo`, which needs no model.
func Default(ctx context.Context, env func(string) string) (model.Binding, error) {
	env = envOrOS(env)
	for _, name := range []string{"anthropic", "openai", "deepseek"} {
		p, _ := lookupPreset(name)
		if env(p.keyVar) != "" {
			return Resolve(model.Binding{Provider: p.name, Model: p.defaultModel}, env), nil
		}
	}
	ollama := Resolve(model.Binding{Provider: "ollama"}, env)
	models, err := ollamaModels(ctx, ollama.BaseURL)
	if m := chatModel(models); err == nil && m != "" {
		ollama.Model = m
		return ollama, nil
	}
	local := "no Ollama answered at " + ollama.BaseURL
	if err == nil {
		local = "the Ollama at " + ollama.BaseURL + " has no chat models (ollama pull llama3.2)"
	}
	return model.Binding{}, fmt.Errorf("no model to run: set ANTHROPIC_API_KEY, OPENAI_API_KEY or DEEPSEEK_API_KEY, "+
		"start a local Ollama (%s), or pass --model PROVIDER/MODEL (anthropic/…, openai/…, deepseek/…, ollama/…, vllm/…, openrouter/…, or script:PATH); "+
		"`ink demo` shows ink working offline and needs no model", local)
}

// chatModel picks the first model that can chat: embedding models, which
// Ollama lists beside the others, cannot answer a conversation.
func chatModel(names []string) string {
	for _, n := range names {
		if !strings.Contains(strings.ToLower(n), "embed") {
			return n
		}
	}
	return ""
}

// ollamaModels lists the models of the Ollama whose OpenAI endpoint is base
// (".../v1"): the native /api/tags first, then the OpenAI-style /v1/models.
func ollamaModels(ctx context.Context, base string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	root := strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1")
	var tags struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	errTags := getJSON(ctx, root+"/api/tags", "", &tags)
	if errTags == nil {
		var names []string
		for _, m := range tags.Models {
			if n := firstNonEmpty(m.Name, m.Model); n != "" {
				names = append(names, n)
			}
		}
		return names, nil
	}
	names, err := openAIModels(ctx, strings.TrimRight(base, "/"), "")
	if err != nil {
		return nil, errTags
	}
	return names, nil
}

// openAIModels lists the ids an OpenAI-compatible server reports at
// base/models.
func openAIModels(ctx context.Context, base, key string) ([]string, error) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getJSON(ctx, base+"/models", key, &list); err != nil {
		return nil, err
	}
	var names []string
	for _, m := range list.Data {
		if m.ID != "" {
			names = append(names, m.ID)
		}
	}
	return names, nil
}

// getJSON fetches url (with key as a bearer token when set) into into.
func getJSON(ctx context.Context, url, key string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 4<<20)).Decode(into); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
