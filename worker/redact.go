package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/secret"
	"github.com/inkdev/ink/tools"
)

// redaction replaces configured secrets in everything an attempt writes or
// sends to a model, and reports each redaction as a warning. It is safe for
// concurrent use (tools run in parallel).
type redaction struct {
	r    *secret.Redactor
	warn func(text string)
}

// text redacts s; where names what held it, for the warning.
func (x *redaction) text(s, where string) string {
	out, found := x.r.Redact(s)
	if len(found) > 0 && x.warn != nil {
		x.warn(fmt.Sprintf("redacted %s from %s: ink never writes a configured secret to a transcript or sends it to a model", strings.Join(found, ", "), where))
	}
	return out
}

// message redacts every text a message carries: its text blocks, tool call
// arguments and tool results.
func (x *redaction) message(m model.Message, where string) model.Message {
	if x.r.Empty() {
		return m
	}
	out := m
	if len(m.Content) > 0 {
		out.Content = make([]model.Block, len(m.Content))
		for i, b := range m.Content {
			if t := x.text(b.Text, where); t != b.Text {
				b.Text = t
				if b.Type == "thinking" && !strings.HasPrefix(b.Signature, "redacted_thinking:") {
					// The signature no longer matches the text; an
					// unsigned thinking block is never sent back.
					b.Signature = ""
				}
			}
			out.Content[i] = b
		}
	}
	if len(m.ToolCalls) > 0 {
		out.ToolCalls = make([]model.ToolCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			c.Args = json.RawMessage(x.text(string(c.Args), fmt.Sprintf("the arguments of a %s call", c.Name)))
			out.ToolCalls[i] = c
		}
	}
	if len(m.Results) > 0 {
		out.Results = make([]model.ToolResult, len(m.Results))
		for i, r := range m.Results {
			r.Content = x.text(r.Content, fmt.Sprintf("a %s result", r.ToolName))
			out.Results[i] = r
		}
	}
	return out
}

// redactingProvider redacts the assistant messages of a provider before the
// loop keeps, writes or sends them on.
type redactingProvider struct {
	model.Provider
	x *redaction
}

var _ model.Provider = (*redactingProvider)(nil)

func (p *redactingProvider) Stream(ctx context.Context, req model.Request, onDelta func(model.Delta)) (model.Message, error) {
	m, err := p.Provider.Stream(ctx, req, onDelta)
	return p.x.message(m, "the model's answer"), err
}

// redactingTool redacts a tool's results before the model or the transcript
// sees them.
type redactingTool struct {
	tools.Tool
	x *redaction
}

var _ tools.Tool = (*redactingTool)(nil)

func (t *redactingTool) Run(ctx context.Context, args json.RawMessage) tools.Result {
	res := t.Tool.Run(ctx, args)
	res.Content = t.x.text(res.Content, fmt.Sprintf("a %s result", t.Spec().Name))
	return res
}
