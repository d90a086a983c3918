package script

import "github.com/inkdev/ink/model"

// match returns the first rule whose conditions all hold for req.
func (s *Script) match(req model.Request) (rule, bool) {
	for _, r := range s.rules {
		if r.when.holds(req) {
			return r, true
		}
	}
	return rule{}, false
}

// holds reports whether every condition given in c holds for req.
func (c condition) holds(req model.Request) bool {
	if c.compaction != req.Compaction {
		return false
	}
	if c.agent != nil && *c.agent != req.Agent {
		return false
	}
	if c.depth != nil && *c.depth != req.Depth {
		return false
	}
	if c.turn != nil && *c.turn != req.Turn {
		return false
	}
	if c.user != nil {
		text, ok := newestUserText(req.Messages)
		if !ok || !c.user.MatchString(text) {
			return false
		}
	}
	if c.tool != nil || c.result != nil {
		found := false
		for _, r := range trailingResults(req.Messages) {
			if c.tool != nil && r.ToolName != *c.tool {
				continue
			}
			if c.result != nil && !c.result.MatchString(r.Content) {
				continue
			}
			found = true
			break
		}
		if !found {
			return false
		}
	}
	return true
}

// newestUserText returns the text of the newest user message, and false when
// there is none.
func newestUserText(msgs []model.Message) (string, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Text(), true
		}
	}
	return "", false
}

// trailingResults returns the tool results that end the history: the
// newest message's, with the other results of its turn (ink writes one
// result per message, so one turn's results span several consecutive
// messages). A history that ends with any other message (a user prompt
// that continues a session, say) has none: a `tool:` rule answers the
// results of the turn just run, never an older one.
func trailingResults(msgs []model.Message) []model.ToolResult {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role == model.RoleToolResult {
		start--
	}
	var out []model.ToolResult
	for _, m := range msgs[start:] {
		out = append(out, m.Results...)
	}
	return out
}
