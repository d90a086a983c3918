package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// decodeArgs decodes a call's JSON arguments into dst (a pointer to a struct
// with json tags), refusing unknown fields. The error names the tool, what
// was wrong and which arguments the tool takes.
func decodeArgs(tool string, raw json.RawMessage, dst any, known []string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the arguments object")
	}
	if err == nil {
		return nil
	}
	takes := fmt.Sprintf("%s takes: %s", tool, strings.Join(known, ", "))
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Errorf("arguments must be a JSON object, got %s; %s", typeErr.Value, takes)
	case errors.As(err, &typeErr):
		ty := typeErr.Type
		if ty.Kind() == reflect.Pointer {
			ty = ty.Elem()
		}
		want := ty.Kind().String()
		switch ty.Kind() {
		case reflect.Int, reflect.Int64:
			want = "a whole number"
		case reflect.Float64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Bool:
			want = "true or false"
		}
		return fmt.Errorf("argument %q must be %s, got %s; %s", typeErr.Field, want, typeErr.Value, takes)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown argument %s; %s", strings.TrimPrefix(err.Error(), "json: unknown field "), takes)
	default:
		return fmt.Errorf("arguments are not valid JSON (%v); %s", err, takes)
	}
}

// errorResult is an isError Result with a formatted message.
func errorResult(format string, a ...any) Result {
	return Result{Content: fmt.Sprintf(format, a...), IsError: true}
}

// schema builds a JSON object schema from property definitions, in order.
func schema(required []string, props ...prop) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","properties":{`)
	for i, p := range props {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(p.name)
		desc, _ := json.Marshal(p.desc)
		fmt.Fprintf(&b, `%s:{"type":%q,"description":%s}`, name, p.typ, desc)
	}
	b.WriteString(`},"required":`)
	if required == nil {
		required = []string{}
	}
	req, _ := json.Marshal(required)
	b.Write(req)
	b.WriteString(`,"additionalProperties":false}`)
	return json.RawMessage(b.Bytes())
}

// prop is one property of a tool's argument schema.
type prop struct {
	name, typ, desc string
}
