package script

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/inkdev/ink/model"
)

// The checks below turn the decoded structs into a Script in one pass. The
// first problem found is kept in c.err (later ones are dropped) and each
// check returns a zero value after it, so that a check reads as the value it
// yields.

// fail keeps the first problem, pointing at n.
func (c *checker) fail(n ast.Node, format string, args ...any) {
	if c.err == nil {
		c.err = c.errorf(n, format, args...)
	}
}

// field is one key that a decoded struct holds: its name, where it is, and
// its value (nil when the key is given without one).
type field struct {
	key string
	at  ast.Node
	val ast.Node
}

// field returns the key of the mapping at path, or nil when it is not there
// (or an earlier check failed).
func (c *checker) field(path, key string, l *leaf) *field {
	s, ok := c.at[path+"."+key]
	if !ok || c.err != nil {
		return nil
	}
	f := &field{key: key, at: s.node()}
	if l != nil {
		f.val = l.n
	}
	return f
}

// describe names the kind of value n holds, for messages.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return "nothing (null)"
	case *ast.StringNode:
		return fmt.Sprintf("the string %q", v.Value)
	case *ast.LiteralNode:
		return "a block string"
	case *ast.IntegerNode:
		return fmt.Sprintf("the number %v", v.Value)
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return fmt.Sprintf("the number %s", v.String())
	case *ast.BoolNode:
		return fmt.Sprintf("the boolean %v", v.Value)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	default:
		return "a " + strings.ToLower(n.Type().String())
	}
}

// str reads a string value; "" when f is nil.
func (c *checker) str(f *field) string {
	if f == nil {
		return ""
	}
	switch v := f.val.(type) {
	case *ast.StringNode:
		return v.Value
	case *ast.LiteralNode:
		return v.Value.Value
	case nil, *ast.NullNode:
		c.fail(f.at, "%s needs a string value, got nothing (write %s: \"\" for an empty string)", f.key, f.key)
	default:
		c.fail(f.at, "%s needs a string, not %s (write one string, in quotes if YAML reads it as something else)", f.key, describe(f.val))
	}
	return ""
}

// optStr reads an optional string value; nil when f is nil or bad.
func (c *checker) optStr(f *field) *string {
	if s := c.str(f); f != nil && c.err == nil {
		return &s
	}
	return nil
}

// integer reads a whole number of at least min; 0 when f is nil.
func (c *checker) integer(f *field, min int64) int64 {
	if f == nil {
		return 0
	}
	v, ok := f.val.(*ast.IntegerNode)
	if !ok {
		c.fail(f.at, "%s needs a whole number, not %s (write e.g. %s: %d)", f.key, describe(f.val), f.key, min)
		return 0
	}
	var i int64
	switch x := v.Value.(type) {
	case int64:
		i = x
	case uint64:
		if x > math.MaxInt32 {
			c.fail(f.at, "%s is too large (%d; write a smaller number)", f.key, x)
			return 0
		}
		i = int64(x)
	}
	if i < min {
		c.fail(f.at, "%s must be at least %d, not %d (write a whole number of %d or more)", f.key, min, i, min)
	} else if i > math.MaxInt32 {
		c.fail(f.at, "%s is too large (%d; write a smaller number)", f.key, i)
	}
	return i
}

// optInt reads an optional whole number of at least min.
func (c *checker) optInt(f *field, min int64) *int {
	if i := int(c.integer(f, min)); f != nil && c.err == nil {
		return &i
	}
	return nil
}

// boolean reads a true or false value; false when f is nil.
func (c *checker) boolean(f *field) bool {
	if f == nil {
		return false
	}
	v, ok := f.val.(*ast.BoolNode)
	if !ok {
		c.fail(f.at, "%s needs true or false, not %s (write %s: true)", f.key, describe(f.val), f.key)
		return false
	}
	return v.Value
}

// pattern reads and compiles a regexp value; nil when f is nil.
func (c *checker) pattern(f *field) *regexp.Regexp {
	s := c.str(f)
	if f == nil || c.err != nil {
		return nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		c.fail(f.at, "bad regexp in %s: %v (fix the pattern: Go RE2 syntax, where a literal parenthesis is written \\()", f.key, err)
	}
	return re
}

// delay reads a Go duration such as 200ms; 0 when f is nil.
func (c *checker) delay(f *field) time.Duration {
	if f == nil {
		return 0
	}
	if _, ok := f.val.(*ast.IntegerNode); ok {
		c.fail(f.at, "delay %s has no unit (write a Go duration such as 200ms or 1.5s)", f.val.String())
		return 0
	}
	s := c.str(f)
	if c.err != nil {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		c.fail(f.at, "bad delay %q (write a Go duration such as 200ms or 1.5s)", s)
	} else if d < 0 {
		c.fail(f.at, "delay %q is negative (write a positive duration such as 200ms)", s)
	}
	return d
}

// isNull tells whether the value at path is given as null.
func (c *checker) isNull(path string) bool {
	n := c.resolve(c.at[path].val)
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// notMapping refuses a null where the mapping named what must be.
func (c *checker) notMapping(path, what string) {
	c.fail(c.at[path].node(), "%s must be a mapping of %s, not %s", what, keysOf(what), describe(nil))
}

// script checks the top level: `rules:` and an optional `contextWindow:`.
func (c *checker) script(d *scriptDoc) (*Script, error) {
	s := &Script{path: c.path}
	if f := c.field("", "contextWindow", d.ContextWindow); f != nil {
		if _, ok := f.val.(*ast.IntegerNode); !ok {
			c.fail(f.at, "contextWindow needs a whole number of tokens, not %s (write e.g. contextWindow: 8000)", describe(f.val))
		}
		s.contextWindow = c.integer(f, 1)
	}
	if rules, ok := c.at[".rules"]; !ok {
		c.fail(c.at[""].val, "the script has no `rules` key (write `rules:` followed by a list of rules, each with `when` and `reply`)")
	} else if len(d.Rules) == 0 {
		c.fail(rules.node(), "the rules list is empty (add at least one rule with a `reply`)")
	}
	for i, rd := range d.Rules {
		s.rules = append(s.rules, c.rule(fmt.Sprintf(".rules[%d]", i), rd))
	}
	if c.err != nil {
		return nil, c.err
	}
	return s, nil
}

// rule checks one `{when, reply}` entry.
func (c *checker) rule(path string, d ruleDoc) rule {
	if c.isNull(path) {
		c.notMapping(path, "a rule")
	}
	r := rule{line: line(c.at[path].node())}
	if w := d.When; w != nil {
		r.when = condition{
			agent:      c.optStr(c.field(path+".when", "agent", w.Agent)),
			depth:      c.optInt(c.field(path+".when", "depth", w.Depth), 0),
			user:       c.pattern(c.field(path+".when", "user", w.User)),
			tool:       c.optStr(c.field(path+".when", "tool", w.Tool)),
			result:     c.pattern(c.field(path+".when", "result", w.Result)),
			turn:       c.optInt(c.field(path+".when", "turn", w.Turn), 1),
			compaction: c.boolean(c.field(path+".when", "compaction", w.Compaction)),
		}
		if r.when.tool != nil && *r.when.tool == "" {
			c.fail(c.at[path+".when.tool"].node(), "tool needs a tool name such as grep (or leave the key out)")
		}
	}
	switch _, ok := c.at[path+".reply"]; {
	case d.Reply != nil:
		r.reply = c.reply(path+".reply", d.Reply)
	case ok:
		c.notMapping(path+".reply", "reply")
	default:
		c.fail(c.at[path].node(), "this rule has no reply (add `reply:` with text, calls or error)")
	}
	return r
}

// reply checks a rule's `reply`.
func (c *checker) reply(path string, d *replyDoc) reply {
	text := c.field(path, "text", d.Text)
	rp := reply{text: c.str(text), delay: c.delay(c.field(path, "delay", d.Delay))}
	calls, hasCalls := c.at[path+".calls"]
	if hasCalls {
		rp.calls = c.calls(path+".calls", d.Calls)
	}
	if f := c.field(path, "error", d.Error); f != nil {
		rp.errText, rp.hasError = c.str(f), true
		if c.err == nil && strings.TrimSpace(rp.errText) == "" {
			c.fail(f.at, "error needs a message, such as \"overloaded\" (or leave the key out)")
		}
	}
	if u := d.Usage; u != nil {
		rp.usage = &model.Usage{
			Input:      c.integer(c.field(path+".usage", "input", u.Input), 0),
			Output:     c.integer(c.field(path+".usage", "output", u.Output), 0),
			CacheRead:  c.integer(c.field(path+".usage", "cacheRead", u.CacheRead), 0),
			CacheWrite: c.integer(c.field(path+".usage", "cacheWrite", u.CacheWrite), 0),
		}
	} else if _, ok := c.at[path+".usage"]; ok {
		c.notMapping(path+".usage", "usage")
	}
	if text == nil && !hasCalls && !rp.hasError {
		c.fail(c.at[path].node(), "reply needs text, calls or error (write text: \"\" for an empty answer)")
	}
	if rp.hasError && len(rp.calls) > 0 {
		c.fail(calls.node(), "a reply cannot both make calls and fail with error (drop one of them; text may go with error as the partial answer)")
	}
	return rp
}

// calls checks a reply's list of `{tool, args}`.
func (c *checker) calls(path string, docs []callDoc) []scriptedCall {
	if c.isNull(path) {
		c.fail(c.at[path].node(), "calls must be a list of {tool, args}, not %s (start each call with \"- \")", describe(nil))
	}
	var out []scriptedCall
	for i, d := range docs {
		item := fmt.Sprintf("%s[%d]", path, i)
		if c.isNull(item) {
			c.notMapping(item, "a call")
		}
		call := scriptedCall{tool: c.str(c.field(item, "tool", d.Tool)), args: json.RawMessage("{}")}
		if strings.TrimSpace(call.tool) == "" {
			c.fail(c.at[item].node(), "this call names no tool (add tool: NAME, e.g. tool: read)")
		}
		if d.Args != nil {
			b, err := json.Marshal(d.Args)
			if err != nil {
				c.fail(c.at[item+".args"].node(), "args cannot be sent as JSON: %v (use strings, numbers, booleans, lists and mappings)", err)
			}
			call.args = b
		}
		out = append(out, call)
	}
	return out
}
