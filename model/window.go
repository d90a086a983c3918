package model

import (
	"net"
	"net/url"
	"strings"
)

// Context windows ink assumes when it knows nothing better, in tokens.
const (
	// DefaultContextWindow is the window of a model ink does not know on a
	// hosted API: small enough for every current frontier model.
	DefaultContextWindow int64 = 128_000
	// DefaultLocalContextWindow is the window of a model ink does not know
	// on a local server (ollama, vllm, or any endpoint on this machine),
	// which often runs with far less than the model was trained for.
	DefaultLocalContextWindow int64 = 32_768
)

// WindowReporter is implemented by providers that know their model's context
// window themselves, such as a script model with a top-level contextWindow:.
type WindowReporter interface {
	// ContextWindow returns the window in tokens, 0 when it is not known.
	ContextWindow() int64
}

// knownWindows maps model families to their context windows (the input a
// request may hold, in tokens). A model id is matched in its canonical form
// (see canonicalModel) by prefix, first match wins, so the more specific
// prefixes come first.
var knownWindows = []struct {
	prefix string
	window int64
}{
	// Anthropic: every Claude 3, 4 and later model takes 200k tokens. The 1M
	// windows of some models need a beta header ink does not send.
	{"claude2", 100_000},
	{"claude", 200_000},
	// OpenAI. GPT-5 takes 400k tokens in all, of which 272k may be input.
	{"gpt5", 272_000},
	{"gpt41", 1_047_576},
	{"gpt4o", 128_000},
	{"gpt45", 128_000},
	{"gpt4turbo", 128_000},
	{"gpt432k", 32_768},
	{"gpt4", 8_192},
	{"gpt35turbo", 16_385},
	{"gptoss", 131_072},
	{"o1mini", 128_000},
	{"o1", 200_000},
	{"o3", 200_000},
	{"o4", 200_000},
	{"codexmini", 200_000},
	// DeepSeek's API (deepseek-chat, deepseek-reasoner) and its open models.
	{"deepseekcoderv2", 163_840},
	{"deepseekcoder", 16_384},
	{"deepseek", 128_000},
	// Open models as Ollama, vLLM and OpenRouter name them.
	{"qwen3coder", 262_144},
	{"qwen3", 40_960},
	{"qwq", 40_960},
	{"qwen25", 32_768},
	{"qwen2", 32_768},
	{"llama4", 131_072},
	{"llama33", 131_072},
	{"llama32", 131_072},
	{"llama31", 131_072},
	{"llama3", 8_192},
	{"codellama", 16_384},
	{"devstral", 131_072},
	{"mistralnemo", 131_072},
	{"mistralsmall", 131_072},
	{"mistral", 32_768},
	{"mixtral", 32_768},
	{"gemma3", 131_072},
	{"gemma2", 8_192},
	{"phi4", 16_384},
}

// canonicalModel lowers a model id, keeps the part after its last "/"
// ("meta-llama/Llama-3.1-8B" → "llama-3.1-8b") and drops the separators
// "-", ".", "_" and " ", so that "llama3.1:8b", "Llama-3.1-8B-Instruct" and
// "llama-3.1-8b-instruct" all start with "llama31".
func canonicalModel(id string) string {
	id = strings.ToLower(strings.TrimSpace(id))
	if i := strings.LastIndex(id, "/"); i >= 0 {
		id = id[i+1:]
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', '_', ' ':
			return -1
		}
		return r
	}, id)
}

// KnownContextWindow returns the context window of a model family ink
// knows, whatever provider serves it, and false for any other model id.
func KnownContextWindow(modelID string) (int64, bool) {
	id := canonicalModel(modelID)
	if id == "" {
		return 0, false
	}
	for _, k := range knownWindows {
		if strings.HasPrefix(id, k.prefix) {
			return k.window, true
		}
	}
	return 0, false
}

// ContextWindow returns the context window ink assumes for b: the window of
// its model family when ink knows it, else DefaultLocalContextWindow for a
// local server (the ollama and vllm providers, or a BaseURL on this
// machine), else DefaultContextWindow. A script binding gets 0: the script
// model reports its own window (WindowReporter) or has none. Callers that
// hold a user's override (a profile's contextWindow:, --context-window)
// use it instead.
func ContextWindow(b Binding) int64 {
	if b.Provider == "script" {
		return 0
	}
	if w, ok := KnownContextWindow(b.Model); ok {
		return w
	}
	if b.Provider == "ollama" || b.Provider == "vllm" || isLocalURL(b.BaseURL) {
		return DefaultLocalContextWindow
	}
	return DefaultContextWindow
}

// isLocalURL reports whether raw points at this machine.
func isLocalURL(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bytesPerToken is how many bytes ink counts as one token when it estimates
// the size of messages it has no usage report for. Code and English run at
// about 3.5 to 4 bytes a token; counting 3 errs on the side of compacting a
// little early rather than overflowing.
const bytesPerToken = 3

// messageOverhead is the tokens counted for each message's framing.
const messageOverhead = 4

// EstimateTokens estimates how many tokens msgs take in a request: their
// text, thinking, tool calls and results at one token per three bytes, plus
// a few tokens of framing each. It is deliberately generous; a provider's
// usage report is always preferred to it.
func EstimateTokens(msgs ...Message) int64 {
	var n int64
	for _, m := range msgs {
		bytes := 0
		for _, b := range m.Content {
			bytes += len(b.Text) + len(b.Signature)
		}
		for _, c := range m.ToolCalls {
			bytes += len(c.ID) + len(c.Name) + len(c.Args)
		}
		for _, r := range m.Results {
			bytes += len(r.ToolCallID) + len(r.Content)
		}
		n += int64((bytes+bytesPerToken-1)/bytesPerToken) + messageOverhead
	}
	return n
}

// EstimateRequestTokens estimates the input tokens of req: its system
// prompt, tool specs and messages (see EstimateTokens).
func EstimateRequestTokens(req Request) int64 {
	bytes := len(req.System)
	for _, t := range req.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	return int64((bytes+bytesPerToken-1)/bytesPerToken) + EstimateTokens(req.Messages...)
}

// Total returns every token u counts: input, output and cache reads and
// writes. Token budgets are kept in these units, and for the turn that
// reported u it is also the size of the context it leaves for the next
// request: everything it read plus what it wrote.
func (u Usage) Total() int64 {
	return u.Input + u.Output + u.CacheRead + u.CacheWrite
}
