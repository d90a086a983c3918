package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/inkdev/ink/model"
)

// Load reads and checks the script at path. Every problem is reported as
// "PATH:LINE: what is wrong (how to fix)": an unknown key, a value of the
// wrong type, a bad regexp or duration, a rule without a reply, an empty rule
// list, or invalid YAML.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("script model: %w (check the path after script:)", err)
	}
	return Parse(path, data)
}

// Parse checks and compiles a script held in memory; path is used only in
// messages. It reports problems exactly as Load does.
func Parse(path string, data []byte) (*Script, error) {
	l := &loader{path: path, anchors: map[string]ast.Node{}}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			return nil, fmt.Errorf("%s:%d: invalid YAML: %s (fix the syntax near column %d)", path, se.Token.Position.Line, se.Message, se.Token.Position.Column)
		}
		return nil, fmt.Errorf("%s: invalid YAML: %v", path, err)
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if _, ok := doc.Body.(*ast.CommentGroupNode); ok {
			continue
		}
		if body != nil {
			return nil, l.errorf(doc.Body, "a second YAML document (a script is a single document; remove the extra `---`)")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, fmt.Errorf("%s:1: the script is empty (write `rules:` followed by a list of rules, each with `when` and `reply`)", path)
	}
	l.collectAnchors(body)
	return l.script(body)
}

// loader turns the YAML tree of one script into a Script.
type loader struct {
	path    string
	anchors map[string]ast.Node
}

func (l *loader) errorf(n ast.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", l.path, line(n), fmt.Sprintf(format, args...))
}

// line returns the 1-based line of n, or 1 when it is unknown.
func line(n ast.Node) int {
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			return tk.Position.Line
		}
	}
	return 1
}

// collectAnchors records every `&name` so that `*name` can be resolved.
func (l *loader) collectAnchors(n ast.Node) {
	switch n := n.(type) {
	case *ast.AnchorNode:
		if name, ok := n.Name.(*ast.StringNode); ok {
			l.anchors[name.Value] = n.Value
		}
		l.collectAnchors(n.Value)
	case *ast.MappingNode:
		for _, v := range n.Values {
			l.collectAnchors(v)
		}
	case *ast.MappingValueNode:
		l.collectAnchors(n.Value)
	case *ast.SequenceNode:
		for _, v := range n.Values {
			l.collectAnchors(v)
		}
	case *ast.TagNode:
		l.collectAnchors(n.Value)
	}
}

// resolve unwraps anchors and aliases, and refuses tags.
func (l *loader) resolve(n ast.Node) (ast.Node, error) {
	for depth := 0; depth < 100; depth++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = strings.TrimPrefix(v.Value.String(), "*")
			}
			target, ok := l.anchors[name]
			if !ok {
				return nil, l.errorf(n, "alias *%s names no anchor (define it with &%s before using it)", name, name)
			}
			n = target
		case *ast.TagNode:
			return nil, l.errorf(n, "YAML tags such as %s are not supported in a script (quote the value instead)", v.Start.Value)
		default:
			return n, nil
		}
	}
	return nil, l.errorf(n, "aliases nest too deeply (write the value out)")
}

// field is one key of a mapping, with the node to point messages at.
type field struct {
	key   string
	keyN  ast.Node
	value ast.Node
}

// mapping reads n as a mapping whose keys must all be in allowed; what names
// the mapping in messages ("a rule", "reply").
func (l *loader) mapping(n ast.Node, what string, allowed ...string) ([]field, error) {
	n, err := l.resolve(n)
	if err != nil {
		return nil, err
	}
	var kvs []*ast.MappingValueNode
	switch v := n.(type) {
	case *ast.MappingNode:
		kvs = v.Values
	case *ast.MappingValueNode:
		kvs = []*ast.MappingValueNode{v}
	default:
		return nil, l.errorf(n, "%s must be a mapping of %s, not %s", what, keyList(allowed), describe(n))
	}
	out := make([]field, 0, len(kvs))
	for _, kv := range kvs {
		if _, ok := kv.Key.(*ast.MergeKeyNode); ok {
			return nil, l.errorf(kv.Key, "merge keys (<<) are not supported in a script (write the keys out)")
		}
		key := ""
		if s, ok := kv.Key.(*ast.StringNode); ok {
			key = s.Value
		} else {
			key = kv.Key.String()
		}
		if allowed != nil && !contains(allowed, key) {
			return nil, l.errorf(kv.Key, "unknown key %q in %s (allowed: %s)", key, what, keyList(allowed))
		}
		out = append(out, field{key: key, keyN: kv.Key, value: kv.Value})
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func keyList(keys []string) string {
	return strings.Join(keys, ", ")
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

// node returns the node to point messages at for a field's value (its key when
// the value is missing).
func (f field) node() ast.Node {
	if f.value == nil {
		return f.keyN
	}
	return f.value
}

// str reads a string value.
func (l *loader) str(f field) (string, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return "", err
	}
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	case nil, *ast.NullNode:
		return "", l.errorf(f.node(), "%s needs a string value, got nothing (write %s: \"\" for an empty string)", f.key, f.key)
	default:
		return "", l.errorf(f.node(), "%s needs a string, not %s (write one string, in quotes if YAML reads it as something else)", f.key, describe(n))
	}
}

// integer reads an integer value of at least min.
func (l *loader) integer(f field, min int64) (int64, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return 0, err
	}
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		return 0, l.errorf(f.node(), "%s needs a whole number, not %s (write e.g. %s: %d)", f.key, describe(n), f.key, min)
	}
	var i int64
	switch x := v.Value.(type) {
	case int64:
		i = x
	case uint64:
		if x > math.MaxInt32 {
			return 0, l.errorf(f.node(), "%s is too large (%d; write a smaller number)", f.key, x)
		}
		i = int64(x)
	}
	if i < min {
		return 0, l.errorf(f.node(), "%s must be at least %d, not %d (write a whole number of %d or more)", f.key, min, i, min)
	}
	if i > math.MaxInt32 {
		return 0, l.errorf(f.node(), "%s is too large (%d; write a smaller number)", f.key, i)
	}
	return i, nil
}

// boolean reads a true or false value.
func (l *loader) boolean(f field) (bool, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return false, err
	}
	v, ok := n.(*ast.BoolNode)
	if !ok {
		return false, l.errorf(f.node(), "%s needs true or false, not %s (write %s: true)", f.key, describe(n), f.key)
	}
	return v.Value, nil
}

// pattern reads and compiles a regexp value.
func (l *loader) pattern(f field) (*regexp.Regexp, error) {
	s, err := l.str(f)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, l.errorf(f.node(), "bad regexp in %s: %v (fix the pattern: Go RE2 syntax, where a literal parenthesis is written \\()", f.key, err)
	}
	return re, nil
}

// script reads the top level: `rules:` and an optional `contextWindow:`.
func (l *loader) script(body ast.Node) (*Script, error) {
	fields, err := l.mapping(body, "the script", "rules", "contextWindow")
	if err != nil {
		return nil, err
	}
	s := &Script{path: l.path}
	var rules *field
	for i := range fields {
		switch fields[i].key {
		case "rules":
			rules = &fields[i]
		case "contextWindow":
			f := fields[i]
			if n, err := l.resolve(f.value); err != nil {
				return nil, err
			} else if _, ok := n.(*ast.IntegerNode); !ok {
				return nil, l.errorf(f.node(), "contextWindow needs a whole number of tokens, not %s (write e.g. contextWindow: 8000)", describe(n))
			}
			w, err := l.integer(f, 1)
			if err != nil {
				return nil, err
			}
			s.contextWindow = w
		}
	}
	if rules == nil {
		return nil, l.errorf(body, "the script has no `rules` key (write `rules:` followed by a list of rules, each with `when` and `reply`)")
	}
	f := *rules
	n, err := l.resolve(f.value)
	if err != nil {
		return nil, err
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		if _, null := n.(*ast.NullNode); null || n == nil {
			return nil, l.errorf(f.node(), "the rules list is empty (add at least one rule with a `reply`)")
		}
		return nil, l.errorf(f.node(), "rules must be a list of rules, not %s (start each rule with \"- \")", describe(n))
	}
	if len(seq.Values) == 0 {
		return nil, l.errorf(seq, "the rules list is empty (add at least one rule with a `reply`)")
	}
	for _, item := range seq.Values {
		r, err := l.rule(item)
		if err != nil {
			return nil, err
		}
		s.rules = append(s.rules, r)
	}
	return s, nil
}

// rule reads one `{when, reply}` entry.
func (l *loader) rule(n ast.Node) (rule, error) {
	fields, err := l.mapping(n, "a rule", "when", "reply")
	if err != nil {
		return rule{}, err
	}
	r := rule{line: line(n)}
	hasReply := false
	for _, f := range fields {
		switch f.key {
		case "when":
			if r.when, err = l.condition(f); err != nil {
				return rule{}, err
			}
		case "reply":
			if r.reply, err = l.reply(f); err != nil {
				return rule{}, err
			}
			hasReply = true
		}
	}
	if !hasReply {
		return rule{}, l.errorf(n, "this rule has no reply (add `reply:` with text, calls or error)")
	}
	return r, nil
}

// condition reads a rule's `when`; an empty `when` always holds.
func (l *loader) condition(f field) (condition, error) {
	var c condition
	if n, err := l.resolve(f.value); err != nil {
		return c, err
	} else if _, null := n.(*ast.NullNode); null || n == nil {
		return c, nil
	}
	fields, err := l.mapping(f.value, "when", "agent", "depth", "user", "tool", "result", "turn", "compaction")
	if err != nil {
		return c, err
	}
	for _, f := range fields {
		switch f.key {
		case "agent":
			s, err := l.str(f)
			if err != nil {
				return c, err
			}
			c.agent = &s
		case "depth":
			i, err := l.integer(f, 0)
			if err != nil {
				return c, err
			}
			d := int(i)
			c.depth = &d
		case "turn":
			i, err := l.integer(f, 1)
			if err != nil {
				return c, err
			}
			t := int(i)
			c.turn = &t
		case "user":
			if c.user, err = l.pattern(f); err != nil {
				return c, err
			}
		case "result":
			if c.result, err = l.pattern(f); err != nil {
				return c, err
			}
		case "compaction":
			if c.compaction, err = l.boolean(f); err != nil {
				return c, err
			}
		case "tool":
			s, err := l.str(f)
			if err != nil {
				return c, err
			}
			if s == "" {
				return c, l.errorf(f.node(), "tool needs a tool name such as grep (or leave the key out)")
			}
			c.tool = &s
		}
	}
	return c, nil
}

// reply reads a rule's `reply`.
func (l *loader) reply(f field) (reply, error) {
	var rp reply
	fields, err := l.mapping(f.value, "reply", "text", "calls", "delay", "error", "usage")
	if err != nil {
		return rp, err
	}
	var hasText, hasCalls bool
	var callsNode ast.Node
	for _, f := range fields {
		switch f.key {
		case "text":
			if rp.text, err = l.str(f); err != nil {
				return rp, err
			}
			hasText = true
		case "calls":
			if rp.calls, err = l.calls(f); err != nil {
				return rp, err
			}
			hasCalls, callsNode = true, f.node()
		case "delay":
			if rp.delay, err = l.delay(f); err != nil {
				return rp, err
			}
		case "error":
			if rp.errText, err = l.str(f); err != nil {
				return rp, err
			}
			if strings.TrimSpace(rp.errText) == "" {
				return rp, l.errorf(f.node(), "error needs a message, such as \"overloaded\" (or leave the key out)")
			}
			rp.hasError = true
		case "usage":
			if rp.usage, err = l.usage(f); err != nil {
				return rp, err
			}
		}
	}
	if !hasText && !hasCalls && !rp.hasError {
		return rp, l.errorf(f.node(), "reply needs text, calls or error (write text: \"\" for an empty answer)")
	}
	if hasCalls && rp.hasError && len(rp.calls) > 0 {
		return rp, l.errorf(callsNode, "a reply cannot both make calls and fail with error (drop one of them; text may go with error as the partial answer)")
	}
	return rp, nil
}

// delay reads a Go duration such as 200ms.
func (l *loader) delay(f field) (time.Duration, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return 0, err
	}
	if _, ok := n.(*ast.IntegerNode); ok {
		return 0, l.errorf(f.node(), "delay %s has no unit (write a Go duration such as 200ms or 1.5s)", n.String())
	}
	s, err := l.str(f)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, l.errorf(f.node(), "bad delay %q (write a Go duration such as 200ms or 1.5s)", s)
	}
	if d < 0 {
		return 0, l.errorf(f.node(), "delay %q is negative (write a positive duration such as 200ms)", s)
	}
	return d, nil
}

// usage reads `{input, output, cacheRead, cacheWrite}`; missing fields are 0.
func (l *loader) usage(f field) (*model.Usage, error) {
	fields, err := l.mapping(f.value, "usage", "input", "output", "cacheRead", "cacheWrite")
	if err != nil {
		return nil, err
	}
	u := &model.Usage{}
	for _, f := range fields {
		i, err := l.integer(f, 0)
		if err != nil {
			return nil, err
		}
		switch f.key {
		case "input":
			u.Input = i
		case "output":
			u.Output = i
		case "cacheRead":
			u.CacheRead = i
		case "cacheWrite":
			u.CacheWrite = i
		}
	}
	return u, nil
}

// calls reads a reply's list of `{tool, args}`.
func (l *loader) calls(f field) ([]scriptedCall, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return nil, err
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return nil, l.errorf(f.node(), "calls must be a list of {tool, args}, not %s (start each call with \"- \")", describe(n))
	}
	var out []scriptedCall
	for _, item := range seq.Values {
		fields, err := l.mapping(item, "a call", "tool", "args")
		if err != nil {
			return nil, err
		}
		var c scriptedCall
		for _, f := range fields {
			switch f.key {
			case "tool":
				if c.tool, err = l.str(f); err != nil {
					return nil, err
				}
			case "args":
				if c.args, err = l.args(f); err != nil {
					return nil, err
				}
			}
		}
		if strings.TrimSpace(c.tool) == "" {
			return nil, l.errorf(item, "this call names no tool (add tool: NAME, e.g. tool: read)")
		}
		if c.args == nil {
			c.args = json.RawMessage("{}")
		}
		out = append(out, c)
	}
	return out, nil
}

// args reads a call's arguments, any mapping, as JSON.
func (l *loader) args(f field) (json.RawMessage, error) {
	n, err := l.resolve(f.value)
	if err != nil {
		return nil, err
	}
	switch n.(type) {
	case nil, *ast.NullNode:
		return json.RawMessage("{}"), nil
	case *ast.MappingNode, *ast.MappingValueNode:
	default:
		return nil, l.errorf(f.node(), "args must be a mapping, not %s (write e.g. args: {path: main.go})", describe(n))
	}
	v, err := l.value(n)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, l.errorf(n, "args cannot be sent as JSON: %v", err)
	}
	return b, nil
}

// value converts a YAML subtree to plain Go values for JSON.
func (l *loader) value(n ast.Node) (any, error) {
	n, err := l.resolve(n)
	if err != nil {
		return nil, err
	}
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return nil, nil
	case *ast.StringNode:
		return v.Value, nil
	case *ast.LiteralNode:
		return v.Value.Value, nil
	case *ast.IntegerNode:
		return v.Value, nil
	case *ast.FloatNode:
		return v.Value, nil
	case *ast.BoolNode:
		return v.Value, nil
	case *ast.SequenceNode:
		out := make([]any, 0, len(v.Values))
		for _, item := range v.Values {
			x, err := l.value(item)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case *ast.MappingNode, *ast.MappingValueNode:
		fields, err := l.mapping(v, "args")
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(fields))
		for _, f := range fields {
			x, err := l.value(f.value)
			if err != nil {
				return nil, err
			}
			out[f.key] = x
		}
		return out, nil
	default:
		return nil, l.errorf(n, "%s cannot be sent as JSON (use a string, number, boolean, list or mapping)", describe(n))
	}
}
