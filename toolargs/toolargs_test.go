package toolargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type sample struct {
	Path  string   `json:"path" jsonschema:"File to read."`
	Limit *int     `json:"limit,omitempty" jsonschema:"Lines to show."`
	Ratio *float64 `json:"ratio,omitempty" jsonschema:"A share."`
	Tags  []string `json:"tags,omitempty" jsonschema:"Labels."`
	Small int8     `json:"small,omitempty" jsonschema:"A small number."`
	On    bool     `json:"on,omitempty" jsonschema:"A switch."`
}

type optional struct {
	Name string `json:"name,omitempty" jsonschema:"A name."`
}

type none struct{}

// worded words a missing path its own way.
type worded struct {
	Path string `json:"path" jsonschema:"File to read."`
}

func (worded) WordArgs(e *Error) string {
	if e.Problem == Missing {
		return "path is required: name the file"
	}
	return ""
}

func TestDecode(t *testing.T) {
	t.Parallel()
	const takes = "; sample takes: path, limit, ratio, tags, small, on"
	for _, tc := range []struct {
		name, raw string
		problem   Problem
		msg       string
	}{
		{"every field", `{"path":"a","limit":3,"ratio":0.5,"tags":["x"],"small":-1,"on":true}`, 0, ""},
		{"whole number in other notations", `{"path":"a","limit":3e1,"small":2.0}`, 0, ""},
		{"null optional", `{"path":"a","limit":null,"tags":null}`, 0, ""},
		{"not an object", `["a"]`, NotObject, "sample: the arguments must be a JSON object" + takes},
		{"a string", `"a"`, NotObject, "sample: the arguments must be a JSON object" + takes},
		{"empty, with a required field", ``, NotObject, "sample: the arguments must be a JSON object" + takes},
		{"broken JSON", `{"path":`, NotObject, "sample: the arguments must be a JSON object, and these are not valid JSON (unexpected end of JSON input)" + takes},
		{"trailing data", `{"path":"a"} {}`, NotObject, "not valid JSON"},
		{"unknown", `{"path":"a","b":1,"a":2}`, Unknown, `sample: unknown argument "a", "b"` + takes},
		{"missing", `{}`, Missing, "sample: path is required: file to read"},
		{"null required", `{"path":null}`, Missing, "sample: path is required: file to read"},
		{"string wanted", `{"path":3}`, WrongType, `sample: argument "path" must be a string, got number 3` + takes},
		{"fraction for a whole number", `{"path":"a","limit":1.5}`, WrongType, `argument "limit" must be a whole number, got number 1.5`},
		{"string for a whole number", `{"path":"a","limit":"2"}`, WrongType, `argument "limit" must be a whole number, got string`},
		{"out of range", `{"path":"a","small":300}`, WrongType, `argument "small" must be a whole number, got number 300`},
		{"huge", `{"path":"a","limit":1e300}`, WrongType, `argument "limit" must be a whole number`},
		{"list wanted", `{"path":"a","tags":"x"}`, WrongType, `argument "tags" must be a list of strings, got string`},
		{"list of the wrong items", `{"path":"a","tags":[1]}`, WrongType, `argument "tags" must be a list of strings, got array`},
		{"bool wanted", `{"path":"a","on":"yes"}`, WrongType, `argument "on" must be true or false, got string`},
		{"number wanted", `{"path":"a","ratio":[]}`, WrongType, `argument "ratio" must be a number, got array`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Decode[sample]("sample", json.RawMessage(tc.raw))
			if tc.problem == 0 {
				if err != nil || a.Path != "a" {
					t.Fatalf("Decode(%s) = %+v, %v", tc.raw, a, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Problem != tc.problem || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Decode(%s) = %v, want problem %d with %q", tc.raw, err, tc.problem, tc.msg)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()
	a, err := Decode[sample]("sample", json.RawMessage(`{"path":"p","limit":6e4,"small":-128,"tags":["x","y"],"on":true}`))
	if err != nil || *a.Limit != 60000 || a.Small != -128 || strings.Join(a.Tags, ",") != "x,y" || !a.On || a.Ratio != nil {
		t.Fatalf("Decode = %+v, %v", a, err)
	}
}

func TestDecodeEmpty(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{``, `null`, ` `, `{}`} {
		if _, err := Decode[optional]("opt", json.RawMessage(raw)); err != nil {
			t.Errorf("Decode(%q) of a tool with nothing required: %v", raw, err)
		}
	}
	if _, err := Decode[none]("nothing", json.RawMessage(`{"all":true}`)); err == nil || err.Error() != `nothing: unknown argument "all"; nothing takes no arguments` {
		t.Errorf("an argument to a tool that takes none = %v", err)
	}
}

func TestDecodeWorder(t *testing.T) {
	t.Parallel()
	_, err := Decode[worded]("w", json.RawMessage(`{}`))
	if err == nil || err.Error() != "w: path is required: name the file" {
		t.Fatalf("worded missing = %v", err)
	}
	_, err = Decode[worded]("w", json.RawMessage(`{"path":1}`))
	if err == nil || err.Error() != `w: argument "path" must be a string, got number 1; w takes: path` {
		t.Fatalf("a problem the type leaves to the generic message = %v", err)
	}
}

func TestSchema(t *testing.T) {
	t.Parallel()
	got := Schema[sample](Describe("limit", "Lines to show (default 10)."), func(s *jsonschema.Schema) {
		Property(s, "limit").Minimum = jsonschema.Ptr(1.0)
	})
	want := `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"File to read."},` +
		`"limit":{"type":"integer","description":"Lines to show (default 10).","minimum":1},` +
		`"ratio":{"type":"number","description":"A share."},` +
		`"tags":{"type":"array","items":{"type":"string"},"description":"Labels."},` +
		`"small":{"type":"integer","description":"A small number.","minimum":-128,"maximum":127},` +
		`"on":{"type":"boolean","description":"A switch."}},` +
		`"required":["path"],"additionalProperties":false}`
	if string(got) != want {
		t.Fatalf("Schema =\n%s\nwant\n%s", got, want)
	}
	if got := string(Schema[none]()); got != `{"type":"object","additionalProperties":false}` {
		t.Fatalf("Schema of no arguments = %s", got)
	}
}

// TestSchemaEditsStayWithTheirCall: the schema of a type is generated
// once per process, and what one call's edits change is not seen by the
// next call, with or without edits of its own.
func TestSchemaEditsStayWithTheirCall(t *testing.T) {
	t.Parallel()
	plain := string(Schema[sample]())
	edited := string(Schema[sample](Describe("path", "Changed."), func(s *jsonschema.Schema) {
		Property(s, "limit").Minimum = jsonschema.Ptr(5.0)
	}))
	if !strings.Contains(edited, `"Changed."`) || !strings.Contains(edited, `"minimum":5`) {
		t.Fatalf("the edits are missing from the edited schema: %s", edited)
	}
	if again := string(Schema[sample]()); again != plain || strings.Contains(again, "Changed.") || strings.Contains(again, `"minimum":5`) {
		t.Fatalf("after an edited call the schema is\n%s\nwant\n%s", again, plain)
	}
	other := string(Schema[sample](Describe("limit", "Other.")))
	if strings.Contains(other, "Changed.") || strings.Contains(other, `"minimum":5`) || !strings.Contains(other, `"File to read."`) {
		t.Fatalf("an earlier call's edits leaked into a later one: %s", other)
	}
}

func TestPropertyPanicsOnAnUnknownName(t *testing.T) {
	t.Parallel()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `no property "nope"`) {
			t.Fatalf("recover() = %v", r)
		}
	}()
	Schema[sample](Describe("nope", "x"))
}

func TestNames(t *testing.T) {
	t.Parallel()
	if got := strings.Join(Names[sample](), ","); got != "path,limit,ratio,tags,small,on" {
		t.Fatalf("Names = %s", got)
	}
}
