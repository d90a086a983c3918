package tools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkSchema asserts that raw is a JSON object schema with exactly the
// given properties (each typed and described) and required list.
func checkSchema(t *testing.T, raw json.RawMessage, props, required []string) {
	t.Helper()
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema is not JSON: %v\n%s", err, raw)
	}
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("schema is not a closed object: %s", raw)
	}
	if len(s.Properties) != len(props) {
		t.Errorf("properties = %v, want %v", s.Properties, props)
	}
	for _, p := range props {
		def, ok := s.Properties[p]
		if !ok || def.Type == "" || def.Description == "" {
			t.Errorf("property %q missing, untyped or undescribed in %s", p, raw)
		}
	}
	// No required list and an empty one say the same.
	if !reflect.DeepEqual(s.Required, required) && len(s.Required)+len(required) > 0 {
		t.Errorf("required = %v, want %v", s.Required, required)
	}
}

func TestBuiltinsContract(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	pool := builtins(t, k.env)
	want := []struct {
		name     string
		safe     bool
		props    []string
		required []string
	}{
		{"read", true, []string{"path", "offset", "limit"}, []string{"path"}},
		{"grep", true, []string{"pattern", "path", "glob"}, []string{"pattern"}},
		{"find", true, []string{"pattern", "path"}, []string{"pattern"}},
		{"ls", true, []string{"path"}, nil},
		{"edit", false, []string{"path", "oldText", "newText"}, []string{"path", "oldText", "newText"}},
		{"write", false, []string{"path", "content"}, []string{"path", "content"}},
		{"bash", false, []string{"command", "timeout"}, []string{"command"}},
	}
	if got := Names(pool); !reflect.DeepEqual(got, []string{"read", "grep", "find", "ls", "edit", "write", "bash"}) {
		t.Fatalf("Names = %v", got)
	}
	for i, w := range want {
		spec := pool[i].Spec()
		if pool[i].Safe() != w.safe {
			t.Errorf("%s: Safe = %v, want %v", w.name, pool[i].Safe(), w.safe)
		}
		if len(spec.Description) < 80 {
			t.Errorf("%s: description too thin: %q", w.name, spec.Description)
		}
		checkSchema(t, spec.Schema, w.props, w.required)
	}
}

func TestSelect(t *testing.T) {
	t.Parallel()
	k := newKit(t)
	pool := builtins(t, k.env)
	pool = append(pool, NewTask(&recordingRunner{}))
	for _, tc := range []struct {
		name  string
		names []string
		want  []string
		err   string
	}{
		{"listed order wins", []string{"bash", "read", "task"}, []string{"bash", "read", "task"}, ""},
		{"repeats count once", []string{"read", "grep", "read"}, []string{"read", "grep"}, ""},
		{"nothing", nil, []string{}, ""},
		{"one unknown", []string{"read", "Glob"}, nil,
			`unknown tool "Glob"; available: read, grep, find, ls, edit, write, bash, task`},
		{"several unknown", []string{"web", "read", "todo"}, nil, `unknown tools "web", "todo"; available: read,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Select(pool, tc.names)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if names := Names(got); !reflect.DeepEqual(names, tc.want) {
				t.Fatalf("Select = %v, want %v", names, tc.want)
			}
		})
	}
}
