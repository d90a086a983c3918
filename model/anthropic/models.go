package anthropic

import "strings"

// thinkingMode is how a model family takes a thinking request.
type thinkingMode int

const (
	thinkingNone     thinkingMode = iota // the model cannot think; levels are ignored
	thinkingBudget                       // {"type":"enabled","budget_tokens":N}
	thinkingAdaptive                     // {"type":"adaptive"} plus output_config.effort
)

// modelInfo is what ink needs to know about a model to fill a request.
type modelInfo struct {
	maxOutput  int64 // the model's cap on max_tokens; 0 = unknown, not clamped
	defaultMax int64 // max_tokens when the request sets none
	thinking   thinkingMode
}

// knownModels is matched by prefix, first match wins, so the more specific
// prefixes come first. Ids behind a custom ANTHROPIC_BASE_URL that are not
// Claude ids get the conservative fallback in lookupModel.
var knownModels = []struct {
	prefix string
	info   modelInfo
}{
	{"claude-3-5-", modelInfo{8192, 8192, thinkingNone}},
	{"claude-3-7-", modelInfo{64000, 16384, thinkingBudget}},
	{"claude-3-", modelInfo{4096, 4096, thinkingNone}},
	{"claude-opus-4-5", modelInfo{64000, 16384, thinkingBudget}},
	{"claude-sonnet-4-5", modelInfo{64000, 16384, thinkingBudget}},
	{"claude-haiku-4-5", modelInfo{64000, 16384, thinkingBudget}},
	{"claude-opus-4-1", modelInfo{32000, 16384, thinkingBudget}},
	{"claude-opus-4-0", modelInfo{32000, 16384, thinkingBudget}},
	{"claude-opus-4-2025", modelInfo{32000, 16384, thinkingBudget}},
	{"claude-sonnet-4-0", modelInfo{64000, 16384, thinkingBudget}},
	{"claude-sonnet-4-2025", modelInfo{64000, 16384, thinkingBudget}},
	// Claude models from 4.6 on take adaptive thinking; budget thinking is
	// deprecated for them.
	{"claude-", modelInfo{64000, 16384, thinkingAdaptive}},
}

func lookupModel(id string) modelInfo {
	id = strings.ToLower(id)
	for _, m := range knownModels {
		if strings.HasPrefix(id, m.prefix) {
			return m.info
		}
	}
	return modelInfo{maxOutput: 0, defaultMax: 8192, thinking: thinkingBudget}
}

// thinkingBudgets maps ink's thinking levels to budget_tokens.
var thinkingBudgets = map[string]int64{
	"minimal": 1024,
	"low":     4096,
	"medium":  10000,
	"high":    20000,
	"xhigh":   32000,
	"max":     48000,
}

// adaptiveEffort maps ink's thinking levels to output_config.effort.
var adaptiveEffort = map[string]string{
	"minimal": "low",
	"low":     "low",
	"medium":  "medium",
	"high":    "high",
	"xhigh":   "xhigh",
	"max":     "max",
}

// thinkingOn reports whether level asks for thinking at all.
func thinkingOn(level string) bool {
	_, ok := thinkingBudgets[strings.ToLower(strings.TrimSpace(level))]
	return ok
}
