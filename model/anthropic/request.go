package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/inkdev/ink/model"
)

// redactedPrefix marks a thinking block whose content the provider redacted:
// model.Block has no field for the opaque payload, so ink keeps it in
// Signature behind this prefix and sends it back as a redacted_thinking block.
const redactedPrefix = "redacted_thinking:"

// buildParams turns an ink request into the Messages API parameters.
func buildParams(req model.Request, modelID string) (sdk.MessageNewParams, error) {
	info := lookupModel(modelID)
	p := sdk.MessageNewParams{Model: sdk.Model(modelID)}

	if s := strings.TrimSpace(req.System); s != "" {
		p.System = []sdk.TextBlockParam{{Text: req.System, CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}

	msgs, err := buildMessages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	markCacheBreakpoint(p.Messages)

	for _, t := range req.Tools {
		tp, err := buildTool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if req.TextOnly && len(p.Tools) > 0 {
		// The tools stay described (a history with tool_use blocks needs
		// them) but none may be called.
		p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	}

	maxTokens := int64(req.MaxTokens)
	userSetMax := maxTokens > 0
	if !userSetMax {
		maxTokens = info.defaultMax
	}
	level := strings.ToLower(strings.TrimSpace(req.Thinking))
	switch {
	case info.thinking == thinkingBudget && thinkingOn(level):
		budget := thinkingBudgets[level]
		if !userSetMax {
			maxTokens = budget + info.defaultMax
		}
		if info.maxOutput > 0 && maxTokens > info.maxOutput {
			maxTokens = info.maxOutput
		}
		if budget >= maxTokens {
			budget = max(1024, maxTokens/2)
		}
		if budget < maxTokens {
			p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: budget}}
		}
	case info.thinking == thinkingAdaptive && thinkingOn(level):
		if !userSetMax {
			maxTokens = 32000
		}
		p.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
		p.OutputConfig = sdk.OutputConfigParam{Effort: sdk.OutputConfigEffort(adaptiveEffort[level])}
	case info.thinking == thinkingAdaptive:
		// These models may think when the field is absent; ink's default is off.
		p.Thinking = sdk.ThinkingConfigParamUnion{OfDisabled: &sdk.ThinkingConfigDisabledParam{}}
	}
	if info.maxOutput > 0 && maxTokens > info.maxOutput {
		maxTokens = info.maxOutput
	}
	p.MaxTokens = maxTokens
	return p, nil
}

// buildMessages converts ink messages to Messages API turns. Consecutive
// toolResult messages (ink stores one result per message) become one user
// turn of tool_result blocks, and a user message right after them joins that
// turn, since the API wants user and assistant turns to alternate.
func buildMessages(in []model.Message) ([]sdk.MessageParam, error) {
	var out []sdk.MessageParam
	appendUser := func(blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].OfUser != nil {
			out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
			return
		}
		out = append(out, sdk.NewUserMessage(blocks...))
	}
	for i, m := range in {
		switch m.Role {
		case model.RoleUser:
			var blocks []sdk.ContentBlockParamUnion
			for _, b := range m.Content {
				if b.Type == "text" && b.Text != "" {
					blocks = append(blocks, sdk.NewTextBlock(b.Text))
				}
			}
			appendUser(blocks)
		case model.RoleToolResult:
			var blocks []sdk.ContentBlockParamUnion
			for _, r := range m.Results {
				tr := sdk.ToolResultBlockParam{ToolUseID: r.ToolCallID}
				if r.Content != "" {
					tr.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: r.Content}}}
				}
				if r.IsError {
					tr.IsError = sdk.Bool(true)
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &tr})
			}
			appendUser(blocks)
		case model.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			for _, b := range m.Content {
				switch {
				case b.Type == "thinking" && strings.HasPrefix(b.Signature, redactedPrefix):
					blocks = append(blocks, sdk.NewRedactedThinkingBlock(strings.TrimPrefix(b.Signature, redactedPrefix)))
				case b.Type == "thinking" && b.Signature != "":
					// A thinking block without its signature is refused by
					// the API, so only signed ones go back.
					blocks = append(blocks, sdk.NewThinkingBlock(b.Signature, b.Text))
				case b.Type == "text" && b.Text != "":
					blocks = append(blocks, sdk.NewTextBlock(b.Text))
				}
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(c.ID, toolInput(c.Args), c.Name))
			}
			if len(blocks) == 0 {
				// An empty turn (a stream cut before anything arrived) is
				// refused by the API and tells the model nothing.
				continue
			}
			out = append(out, sdk.NewAssistantMessage(blocks...))
		default:
			return nil, fmt.Errorf("anthropic: message %d has unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// toolInput returns a call's arguments as the JSON object the API requires.
func toolInput(args json.RawMessage) any {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed) {
		return json.RawMessage(trimmed)
	}
	return map[string]any{}
}

// markCacheBreakpoint puts a prompt-cache breakpoint on the last block of
// the conversation, so the next turn reads everything before it from cache.
func markCacheBreakpoint(msgs []sdk.MessageParam) {
	if len(msgs) == 0 {
		return
	}
	var last []sdk.ContentBlockParamUnion
	switch m := msgs[len(msgs)-1]; {
	case m.OfUser != nil:
		last = m.OfUser.Content
	case m.OfAssistant != nil:
		last = m.OfAssistant.Content
	}
	for i := len(last) - 1; i >= 0; i-- {
		if last[i].OfThinking != nil || last[i].OfRedactedThinking != nil {
			continue
		}
		if cc := last[i].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			return
		}
	}
}

// buildTool converts a tool spec; the schema's properties and required list
// map to their fields and every other keyword is passed through.
func buildTool(t model.ToolSpec) (*sdk.ToolParam, error) {
	schema := map[string]any{}
	if len(bytes.TrimSpace(t.Schema)) > 0 {
		if err := json.Unmarshal(t.Schema, &schema); err != nil {
			return nil, fmt.Errorf("anthropic: tool %q: schema is not a JSON object: %w", t.Name, err)
		}
	}
	in := sdk.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						in.Required = append(in.Required, s)
					}
				}
			}
		default:
			in.ExtraFields[k] = v
		}
	}
	tp := &sdk.ToolParam{Name: t.Name, InputSchema: in}
	if t.Description != "" {
		tp.Description = sdk.String(t.Description)
	}
	return tp, nil
}
