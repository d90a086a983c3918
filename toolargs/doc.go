// Package toolargs declares a tool's arguments once, as a Go struct type,
// for every tool ink offers: the tools a worker gives its model (package
// tools, and task's through package taskargs) and the tools of `ink mcp`
// (package mcpserver).
//
// A field's json tag names the argument (omitempty or omitzero: optional;
// otherwise required) and its jsonschema tag describes it. Schema
// generates the JSON schema a model or an MCP client sees from the type,
// with github.com/google/jsonschema-go, the generator the MCP go-sdk's
// typed AddTool uses; Decode reads a call's arguments into the type,
// refusing what the type does not allow with one message that names the
// tool, what was wrong and the arguments the tool takes. What a type
// cannot say (a blank string, a range, two arguments that exclude each
// other) is checked by the tool after Decode.
//
// Both are pure functions, safe for concurrent use.
package toolargs
