package toolargs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Schema returns the JSON schema of the arguments type T, as a model or an
// MCP client sees it: an object with one property per json field, in field
// order, each typed and described by its jsonschema tag, the fields
// without omitempty required, and no other property allowed. An optional
// argument (a pointer or a slice) is typed as its value, without the
// generator's "null" alternative: a model gives it or leaves it out, and
// the extra type costs every request bytes. edits then adjust what tags
// cannot say (a minimum, a description that depends on configuration).
//
// The schema of T is generated once per process; edits change a copy of
// it whose sub-schemas are its own but whose other slices (required,
// enum, …) are shared: an edit replaces those, never changes them in
// place.
//
// Schema panics when T cannot have a schema (a type jsonschema-go refuses,
// or an edit naming a property T lacks): a mistake in ink's own types,
// which every tool package's golden schema test catches.
func Schema[T any](edits ...func(*jsonschema.Schema)) json.RawMessage {
	g := generated[T]()
	if len(edits) == 0 {
		return g.raw
	}
	s := g.schema.CloneSchemas()
	for _, edit := range edits {
		edit(s)
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("toolargs: schema: %v", err))
	}
	return b
}

// schemaOf is the generated, compacted schema of one arguments type and
// its JSON, which no one may change: edits go to a copy.
type schemaOf struct {
	schema *jsonschema.Schema
	raw    json.RawMessage
}

// schemas holds the schemaOf of every arguments type, by reflect.Type:
// generating one takes reflection and an encoding, and every attempt
// lists its tools at least twice.
var schemas sync.Map

// generated returns the schemaOf T, generating it on first use.
func generated[T any]() *schemaOf {
	key := reflect.TypeFor[T]()
	if g, ok := schemas.Load(key); ok {
		return g.(*schemaOf)
	}
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("toolargs: schema: %v", err))
	}
	compact(s)
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("toolargs: schema: %v", err))
	}
	g, _ := schemas.LoadOrStore(key, &schemaOf{schema: s, raw: b})
	return g.(*schemaOf)
}

// Describe is an edit for Schema that sets the description of the
// property name, for a description that depends on configuration.
func Describe(name, desc string) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) { Property(s, name).Description = desc }
}

// Property returns the schema of the property name of the object schema
// s, for an edit; it panics when s has no such property.
func Property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p := s.Properties[name]
	if p == nil {
		panic(fmt.Sprintf("toolargs: schema has no property %q", name))
	}
	return p
}

// compact rewrites s and the schemas under it so that a type ["null", T]
// is T: the one place the generator's output is trimmed to what ink sends.
func compact(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) == 2 && s.Types[0] == "null" {
		s.Type, s.Types = s.Types[1], nil
	}
	for _, p := range s.Properties {
		compact(p)
	}
	compact(s.Items)
}
