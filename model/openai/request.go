package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/inkdev/ink/model"
)

// buildParams turns an ink request into Chat Completions parameters.
func (p *Provider) buildParams(req model.Request, modelID string) (sdk.ChatCompletionNewParams, error) {
	params := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(modelID),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if strings.TrimSpace(req.System) != "" {
		params.Messages = append(params.Messages, sdk.SystemMessage(req.System))
	}
	msgs, err := buildMessages(req.Messages)
	if err != nil {
		return params, fmt.Errorf("%s: %w", p.cfg.Name, err)
	}
	params.Messages = append(params.Messages, msgs...)
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fd.Description = param.NewOpt(t.Description)
		}
		if len(bytes.TrimSpace(t.Schema)) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Schema, &schema); err != nil {
				return params, fmt.Errorf("%s: tool %q: schema is not a JSON object: %w", p.cfg.Name, t.Name, err)
			}
			fd.Parameters = schema
		} else {
			fd.Parameters = shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		}
		params.Tools = append(params.Tools, sdk.ChatCompletionFunctionTool(fd))
	}
	if req.TextOnly && len(params.Tools) > 0 {
		// The tools stay described (a history with tool calls needs them)
		// but none may be called.
		params.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: param.NewOpt(string(sdk.ChatCompletionToolChoiceOptionAutoNone))}
	}
	if req.MaxTokens > 0 {
		if p.cfg.LegacyMaxTokens {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if effort := reasoningEffort(req.Thinking, modelID); p.cfg.ReasoningEffort && takesReasoningEffort(modelID) && effort != "" {
		params.ReasoningEffort = effort
	}
	return params, nil
}

// reasoningEffort maps ink's thinking levels to the reasoning_effort values
// OpenAI accepts: minimal (GPT-5 only; low on the o-series), low, medium,
// high; "xhigh" and "max" ask for the most there is. "" and "off" send none.
func reasoningEffort(level, modelID string) shared.ReasoningEffort {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "minimal":
		if strings.HasPrefix(strings.ToLower(modelID), "gpt-5") {
			return shared.ReasoningEffortMinimal
		}
		return shared.ReasoningEffortLow
	case "low":
		return shared.ReasoningEffortLow
	case "medium":
		return shared.ReasoningEffortMedium
	case "high", "xhigh", "max":
		return shared.ReasoningEffortHigh
	}
	return ""
}

// takesReasoningEffort reports whether an OpenAI model accepts
// reasoning_effort; other models refuse the parameter.
func takesReasoningEffort(modelID string) bool {
	id := strings.ToLower(modelID)
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// buildMessages converts ink messages to chat messages: one tool message
// per tool result, thinking left out (servers refuse it back).
func buildMessages(in []model.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	for i, m := range in {
		switch m.Role {
		case model.RoleUser:
			if text := m.Text(); text != "" {
				out = append(out, sdk.UserMessage(text))
			}
		case model.RoleAssistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if text := m.Text(); text != "" {
				a.Content.OfString = param.NewOpt(text)
			}
			for _, c := range m.ToolCalls {
				args := strings.TrimSpace(string(c.Args))
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			if param.IsOmitted(a.Content.OfString) && len(a.ToolCalls) == 0 {
				continue // an empty turn tells the model nothing and some servers refuse it
			}
			out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case model.RoleToolResult:
			for _, r := range m.Results {
				content := r.Content
				if r.IsError && !strings.HasPrefix(strings.ToLower(content), "error") {
					content = "Error: " + content
				}
				if content == "" {
					content = "(no output)"
				}
				out = append(out, sdk.ToolMessage(content, r.ToolCallID))
			}
		default:
			return nil, fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	return out, nil
}
