package script

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
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
//
// goccy/go-yaml parses the file and decodes it, strictly, into the structs
// below; a pass over the tree first refuses what they cannot express (tags,
// merge keys, an alias without anchor) and records where every value is, so
// that decoding errors and the checks of check.go point at a line.
func Parse(path string, data []byte) (*Script, error) {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		var se *yaml.SyntaxError
		if errors.As(err, &se) && se.Token != nil {
			return nil, fmt.Errorf("%s:%d: invalid YAML: %s (fix the syntax near column %d)", path, se.Token.Position.Line, se.Message, se.Token.Position.Column)
		}
		return nil, fmt.Errorf("%s: invalid YAML: %v", path, err)
	}
	c := &checker{path: path, at: map[string]spot{}, named: map[*token.Token]string{}, anchors: map[string]ast.Node{}}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil || doc.Body.Type() == ast.CommentType {
			continue
		}
		if body != nil {
			return nil, c.errorf(doc.Body, "a second YAML document (a script is a single document; remove the extra `---`)")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, fmt.Errorf("%s:1: the script is empty (write `rules:` followed by a list of rules, each with `when` and `reply`)", path)
	}
	c.at[""], c.named[body.GetToken()] = spot{val: body}, ""
	if err := c.index("", body, 0); err != nil {
		return nil, err
	}
	var doc scriptDoc
	if err := yaml.NewDecoder(bytes.NewReader(nil), yaml.Strict()).DecodeFromNode(body, &doc); err != nil {
		return nil, c.decodeError(err)
	}
	return c.script(&doc)
}

// The structs a script decodes into. A key is the field's name in lower case
// unless a tag says otherwise; the field order is the order messages list
// keys in. A leaf keeps its YAML node so that check.go can say what it holds.
type (
	scriptDoc struct {
		Rules         []ruleDoc
		ContextWindow *leaf `yaml:"contextWindow"`
	}
	ruleDoc struct {
		When  *whenDoc
		Reply *replyDoc
	}
	whenDoc struct {
		Agent, Depth, User, Tool, Result, Turn, Compaction *leaf
	}
	replyDoc struct {
		Text         *leaf
		Calls        []callDoc
		Delay, Error *leaf
		Usage        *usageDoc
	}
	callDoc struct {
		Tool *leaf
		Args map[string]any
	}
	usageDoc struct {
		Input, Output *leaf
		CacheRead     *leaf `yaml:"cacheRead"`
		CacheWrite    *leaf `yaml:"cacheWrite"`
	}
)

// leaf is a scalar of the script, kept as its (alias-resolved) node; a null
// value leaves the field nil, and the checker tells it from a missing key.
type leaf struct{ n ast.Node }

// UnmarshalYAML keeps n; the checks of check.go read it.
func (l *leaf) UnmarshalYAML(n ast.Node) error {
	l.n = n
	return nil
}

// shapes names each mapping of the format, as messages do, with its struct.
var shapes = map[string]reflect.Type{
	"the script": reflect.TypeFor[scriptDoc](),
	"a rule":     reflect.TypeFor[ruleDoc](),
	"when":       reflect.TypeFor[whenDoc](),
	"reply":      reflect.TypeFor[replyDoc](),
	"a call":     reflect.TypeFor[callDoc](),
	"usage":      reflect.TypeFor[usageDoc](),
}

// keysOf lists the keys of the mapping named what, in field order.
func keysOf(what string) string {
	t := shapes[what]
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("yaml")
		if key == "" {
			key = strings.ToLower(t.Field(i).Name)
		}
		keys = append(keys, key)
	}
	return strings.Join(keys, ", ")
}

// spot is where the value at a path is: the key that holds it (nil for the
// top level and list items) and the value as written (nil or null when empty;
// an alias stays an alias).
type spot struct{ key, val ast.Node }

// node is what messages about the value point at: the value, or its key when
// there is none.
func (s spot) node() ast.Node {
	if s.val == nil {
		return s.key
	}
	return s.val
}

// checker holds one script's tree, indexed by path (".rules[0].reply.text";
// "" is the top level), and turns its decoded structs into a Script.
type checker struct {
	path    string
	at      map[string]spot
	named   map[*token.Token]string // the token of a key or value → the value's path
	anchors map[string]ast.Node
	err     error // the first problem the checks of check.go found
}

func (c *checker) errorf(n ast.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", c.path, line(n), fmt.Sprintf(format, args...))
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

// index records every value under path, following aliases the way decoding
// does, and refuses tags, merge keys and aliases without anchor.
func (c *checker) index(path string, n ast.Node, depth int) error {
	if depth > 100 {
		return c.errorf(n, "aliases nest too deeply (write the value out)")
	}
	switch v := n.(type) {
	case *ast.TagNode:
		return c.errorf(n, "YAML tags such as %s are not supported in a script (quote the value instead)", v.Start.Value)
	case *ast.AnchorNode:
		if name, ok := v.Name.(*ast.StringNode); ok {
			c.anchors[name.Value] = v.Value
		}
		return c.index(path, v.Value, depth)
	case *ast.AliasNode:
		name := v.Value.GetToken().Value
		target, ok := c.anchors[name]
		if !ok {
			return c.errorf(n, "alias *%s names no anchor (define it with &%s before using it)", name, name)
		}
		return c.index(path, target, depth+1)
	case *ast.MappingNode:
		for _, kv := range v.Values {
			if err := c.index(path, kv, depth); err != nil {
				return err
			}
		}
	case *ast.MappingValueNode:
		if _, ok := v.Key.(*ast.MergeKeyNode); ok {
			return c.errorf(v.Key, "merge keys (<<) are not supported in a script (write the keys out)")
		}
		key := v.Key.String()
		if s, ok := v.Key.(*ast.StringNode); ok {
			key = s.Value
		}
		return c.record(path+"."+key, spot{key: v.Key, val: v.Value}, depth)
	case *ast.SequenceNode:
		for i, item := range v.Values {
			if err := c.record(fmt.Sprintf("%s[%d]", path, i), spot{val: item}, depth); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxValues bounds the values a script may hold, aliases expanded, so that
// nested aliases cannot blow up loading.
const maxValues = 100_000

// record indexes one value; the first place a token is seen names it.
func (c *checker) record(path string, s spot, depth int) error {
	if len(c.at) > maxValues {
		return c.errorf(s.node(), "aliases make the script hold more than %d values (write the values out)", maxValues)
	}
	if _, ok := c.at[path]; !ok {
		c.at[path] = s
	}
	for _, n := range []ast.Node{s.key, s.val} {
		if n == nil {
			continue
		}
		if _, ok := c.named[n.GetToken()]; !ok {
			c.named[n.GetToken()] = path
		}
	}
	if s.val == nil {
		return nil
	}
	return c.index(path, s.val, depth)
}

// resolve unwraps anchors and aliases, which index has all checked.
func (c *checker) resolve(n ast.Node) ast.Node {
	for range 100 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			n = c.anchors[v.Value.GetToken().Value]
		default:
			return n
		}
	}
	return n
}

// itemPath matches the path of a rule or a call; compiled on first use,
// so that no ink process that never loads a script pays for it.
var itemPath = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.(rules|calls)\[\d+\]$`) })

// shapeAt names the mapping expected at path, as messages do.
func shapeAt(path string) string {
	if path == "" {
		return "the script"
	}
	if m := itemPath().FindStringSubmatch(path); m != nil {
		return map[string]string{"rules": "a rule", "calls": "a call"}[m[1]]
	}
	return path[strings.LastIndex(path, ".")+1:]
}

// decodeError says in ink's words what goccy/go-yaml refused, and where.
func (c *checker) decodeError(err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return fmt.Errorf("%s: invalid script: %v (check the format in the model/script documentation)", c.path, err)
	}
	tk := ye.GetToken()
	path, ok := c.named[tk]
	var unknown *yaml.UnknownFieldError
	if ok && errors.As(err, &unknown) {
		parent, key := path[:strings.LastIndex(path, ".")], path[strings.LastIndex(path, ".")+1:]
		what := shapeAt(parent)
		return c.errorf(c.at[path].key, "unknown key %q in %s (allowed: %s)", key, what, keysOf(what))
	}
	var shape *yaml.UnexpectedNodeTypeError
	if ok && errors.As(err, &shape) {
		s := c.at[path]
		n := c.resolve(s.val)
		switch what := shapeAt(path); what {
		case "rules":
			return c.errorf(s.node(), "rules must be a list of rules, not %s (start each rule with \"- \")", describe(n))
		case "calls":
			return c.errorf(s.node(), "calls must be a list of {tool, args}, not %s (start each call with \"- \")", describe(n))
		case "args":
			return c.errorf(s.node(), "args must be a mapping, not %s (write e.g. args: {path: main.go})", describe(n))
		default:
			return c.errorf(s.node(), "%s must be a mapping of %s, not %s", what, keysOf(what), describe(n))
		}
	}
	return fmt.Errorf("%s:%d: %s (check the format in the model/script documentation)", c.path, tk.Position.Line, ye.GetMessage())
}
