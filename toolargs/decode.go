package toolargs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Problem is what was wrong with a call's arguments.
type Problem int

const (
	// NotObject: the arguments are not one JSON object (or are missing
	// for a tool that requires some).
	NotObject Problem = iota + 1
	// Unknown: the object names arguments the tool does not take.
	Unknown
	// Missing: a required argument is absent or null.
	Missing
	// WrongType: an argument's value is not of its type.
	WrongType
)

// Error is a call's arguments refused by Decode.
type Error struct {
	// Tool is the tool's name.
	Tool    string
	Problem Problem
	// Field is the argument at fault (Missing, WrongType).
	Field string
	// Extra are the names the tool does not take, sorted (Unknown).
	Extra []string
	// Want says what Field takes ("a string", "a whole number", …) and Got
	// is the value given (WrongType).
	Want string
	Got  json.RawMessage
	// Invalid is why the arguments are not valid JSON (NotObject).
	Invalid error
	// Takes are the arguments the tool takes, in order.
	Takes []string
	// Msg is the message without the tool's name: the arguments type's
	// wording (Worder) or the generic one.
	Msg string
}

// Error is "tool: message".
func (e *Error) Error() string { return e.Tool + ": " + e.Msg }

// Worder is implemented by an arguments type that words some problems
// its own way, to say more than the generic message: WordArgs returns the
// message for e without the tool's name, or "" for the generic one.
type Worder interface {
	WordArgs(e *Error) string
}

// field is one argument of an arguments type.
type field struct {
	name     string
	index    []int
	required bool
	desc     string
}

// Decode reads a call's JSON arguments into a T (a struct with json
// tags). The arguments must be one JSON object naming only T's fields;
// an empty or null raw is an empty object when T requires nothing. A
// required field (no omitempty) must be given and not null; a null
// optional one is left out. A whole-number field takes a whole number in
// any JSON notation (60000, 6e4, 60000.0). Anything else is an *Error.
func Decode[T any](tool string, raw json.RawMessage) (T, error) {
	var out T
	v := reflect.ValueOf(&out).Elem()
	fields := fieldsOf(v.Type())
	takes := make([]string, len(fields))
	required := false
	for i, f := range fields {
		takes[i] = f.name
		required = required || f.required
	}
	fail := func(e *Error) (T, error) {
		var zero T
		e.Tool, e.Takes = tool, takes
		if w, ok := any(zero).(Worder); ok {
			e.Msg = w.WordArgs(e)
		}
		if e.Msg == "" {
			e.Msg = e.generic(fields)
		}
		return zero, e
	}

	raw = bytes.TrimSpace(raw)
	if !required && (len(raw) == 0 || bytes.Equal(raw, []byte("null"))) {
		raw = []byte("{}")
	}
	var given map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' {
		return fail(&Error{Problem: NotObject})
	}
	if err := json.Unmarshal(raw, &given); err != nil {
		return fail(&Error{Problem: NotObject, Invalid: err})
	}
	var unknown []string
	for k := range given {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return fail(&Error{Problem: Unknown, Extra: unknown})
	}
	for _, f := range fields {
		val, ok := given[f.name]
		if !ok || bytes.Equal(val, []byte("null")) {
			if f.required {
				return fail(&Error{Problem: Missing, Field: f.name})
			}
			continue
		}
		dst := v.FieldByIndex(f.index)
		if !set(dst, val) {
			return fail(&Error{Problem: WrongType, Field: f.name, Want: want(dst.Type()), Got: val})
		}
	}
	return out, nil
}

// set decodes val into dst, reporting whether it is of dst's type.
func set(dst reflect.Value, val json.RawMessage) bool {
	t := dst.Type()
	elem := t
	if t.Kind() == reflect.Pointer {
		elem = t.Elem()
	}
	if !isInt(elem.Kind()) {
		return json.Unmarshal(val, dst.Addr().Interface()) == nil
	}
	if val[0] != '-' && (val[0] < '0' || val[0] > '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return false
	}
	n := reflect.New(elem).Elem()
	if n.OverflowInt(int64(f)) {
		return false
	}
	n.SetInt(int64(f))
	if t.Kind() == reflect.Pointer {
		p := reflect.New(elem)
		p.Elem().Set(n)
		n = p
	}
	dst.Set(n)
	return true
}

func isInt(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

// want says what a field of type t takes.
func want(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case isInt(t.Kind()):
		return "a whole number"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(want(t.Elem())+"s", "a "), "an ")
	}
	return "an object"
}

// Names are the arguments of the arguments type T, in field order.
func Names[T any]() []string {
	var names []string
	for _, f := range fieldsOf(reflect.TypeFor[T]()) {
		names = append(names, f.name)
	}
	return names
}

// generic is the message for e when the arguments type has no wording.
func (e *Error) generic(fields []field) string {
	takes := e.Tool + " takes no arguments"
	if len(e.Takes) > 0 {
		takes = e.Tool + " takes: " + strings.Join(e.Takes, ", ")
	}
	switch e.Problem {
	case NotObject:
		if e.Invalid != nil {
			return fmt.Sprintf("the arguments must be a JSON object, and these are not valid JSON (%v); %s", e.Invalid, takes)
		}
		return "the arguments must be a JSON object; " + takes
	case Unknown:
		q := make([]string, len(e.Extra))
		for i, k := range e.Extra {
			q[i] = strconv.Quote(k)
		}
		return fmt.Sprintf("unknown argument %s; %s", strings.Join(q, ", "), takes)
	case Missing:
		for _, f := range fields {
			if f.name == e.Field && f.desc != "" {
				d := strings.TrimSuffix(f.desc, ".")
				return fmt.Sprintf("%s is required: %s", e.Field, strings.ToLower(d[:1])+d[1:])
			}
		}
		return fmt.Sprintf("%s is required; %s", e.Field, takes)
	default:
		return fmt.Sprintf("argument %q must be %s, got %s; %s", e.Field, e.Want, kindOf(e.Got), takes)
	}
}

// kindOf names the JSON kind of a value ("number 1.5" for a number, which
// is wrong only by its value when a whole number is wanted).
func kindOf(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	}
	return "number " + string(v)
}

// fieldsOf lists the arguments of the struct type t: its exported fields
// with a json name, in order.
func fieldsOf(t reflect.Type) []field {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("toolargs: arguments type %v is not a struct", t))
	}
	var out []field
	for _, sf := range reflect.VisibleFields(t) {
		if sf.Anonymous || !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		opt := strings.Split(opts, ",")
		out = append(out, field{
			name:     name,
			index:    sf.Index,
			required: !slices.Contains(opt, "omitempty") && !slices.Contains(opt, "omitzero"),
			desc:     sf.Tag.Get("jsonschema"),
		})
	}
	return out
}
