package session

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/inkdev/ink/model"
)

// This file holds the message decoder: the skimmer's reader (skim.go) made
// to build the whole message of a message entry line as this package
// writes it, in one pass and with one allocation per string, where
// encoding/json checks the line, then decodes it, then copies each string
// it unescaped. Decoding the history a resume gives a model is most of
// what a resume of a long transcript costs.
//
// Like the skimmer it is an accelerator, never a judge: a line whose shape
// it does not know (a key written twice or in another case, a null where
// ink writes none, an escaped id, a number where ink writes none) is left
// to encoding/json, which gives the verdict and the error. What it
// accepts, encoding/json accepts with the same entry (FuzzDecodeMessage).

// decodeMessageLine decodes a message entry line (without or with "\n")
// as decodeEntry does, its texts into a (nil: each its own allocation).
// errSkim (or any error) means the line must go to encoding/json.
func decodeMessageLine(line []byte, a *arena) (Entry, error) {
	s := &skimmer{b: bytes.TrimSuffix(line, []byte("\n")), arena: a}
	var typ, id string
	var m model.Message
	hasMsg := false
	err := s.fields(entryKeys, func(i int) (err error) {
		switch i {
		case 0:
			typ, err = s.plainStr()
		case 1:
			id, err = s.plainStr()
		case 2:
			if s.peek() != '{' {
				return errSkim
			}
			hasMsg = true
			err = s.fullMessage(&m)
		case 3:
			if s.isNull() {
				return nil
			}
			m.TaskRecord, err = s.record()
		case 4:
			if s.isNull() {
				return nil
			}
			err = s.array(func() error {
				rec, err := s.record()
				m.TaskRecords = append(m.TaskRecords, rec)
				return err
			})
		}
		return err
	})
	if err != nil {
		return Entry{}, err
	}
	s.ws()
	if s.i != len(s.b) || typ != EntryMessage || id == "" || !hasMsg {
		return Entry{}, errSkim
	}
	if err := validateMessage(m); err != nil {
		return Entry{}, errSkim
	}
	return Entry{Type: EntryMessage, ID: id, Message: &m, TaskRecord: m.TaskRecord, TaskRecords: m.TaskRecords}, nil
}

// raw reads any JSON value and returns its bytes.
func (s *skimmer) raw() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.value(1); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

// record reads a task record: an object, compacted (compactObject).
func (s *skimmer) record() (json.RawMessage, error) {
	if s.peek() != '{' {
		return nil, errSkim
	}
	raw, err := s.raw()
	if err != nil {
		return nil, err
	}
	return compactObject(raw)
}

// fullMessage reads a message object whole, in normaliseMessage's form.
func (s *skimmer) fullMessage(m *model.Message) error {
	return s.fields(messageKeys, func(i int) (err error) {
		switch i {
		case 0:
			m.Role, err = s.role()
			return err
		case 1:
			if s.isNull() {
				return nil
			}
			return s.array(func() error {
				var b model.Block
				err := s.fields(blockKeys, func(i int) (err error) {
					switch i {
					case 0:
						b.Type, err = s.string()
					case 1:
						b.Text, err = s.string()
					default:
						b.Signature, err = s.string()
					}
					return err
				})
				m.Content = append(m.Content, b)
				return err
			})
		case 2:
			if s.isNull() {
				return nil
			}
			return s.array(func() error {
				var c model.ToolCall
				err := s.fields(callKeys, func(i int) (err error) {
					switch i {
					case 0:
						c.ID, err = s.plainStr()
					case 1:
						c.Name, err = s.plainStr()
					default:
						var raw []byte
						if raw, err = s.raw(); err == nil {
							c.Args = compactArgs(raw)
						}
					}
					return err
				})
				m.ToolCalls = append(m.ToolCalls, c)
				return err
			})
		case 3:
			if s.isNull() {
				return nil
			}
			u := &model.Usage{}
			m.Usage = u
			return s.fields(usageKeys, func(i int) (err error) {
				switch i {
				case 0:
					u.Input, err = s.int64()
				case 1:
					u.Output, err = s.int64()
				case 2:
					u.CacheRead, err = s.int64()
				case 3:
					u.CacheWrite, err = s.int64()
				default:
					u.Incomplete, err = s.bool()
				}
				return err
			})
		case 4:
			m.Model, err = s.string()
			return err
		case 5:
			m.StopReason, err = s.string()
			return err
		default:
			if s.isNull() {
				return nil
			}
			return s.array(func() error {
				var r model.ToolResult
				err := s.fields(resultKeys, func(i int) (err error) {
					switch i {
					case 0:
						r.ToolCallID, err = s.plainStr()
					case 1:
						r.ToolName, err = s.plainStr()
					case 2:
						r.Content, err = s.string()
					default:
						r.IsError, err = s.bool()
					}
					return err
				})
				m.Results = append(m.Results, r)
				return err
			})
		}
	})
}

// compactArgs gives tool call arguments normaliseMessage's form: compact,
// and nil for null.
func compactArgs(raw []byte) json.RawMessage {
	var buf bytes.Buffer
	if len(raw) > 0 && json.Compact(&buf, raw) == nil && buf.String() != "null" {
		return json.RawMessage(buf.Bytes())
	}
	return nil
}

// string reads a string value (null is not judged here) and returns it as
// encoding/json decodes it, in the skimmer's arena if it has one.
func (s *skimmer) string() (string, error) {
	raw, esc, err := s.str()
	if err != nil {
		return "", err
	}
	if s.arena != nil {
		return s.arena.string(raw, esc), nil
	}
	if !esc && utf8.Valid(raw) {
		return string(raw), nil
	}
	return unquote(raw), nil
}

// arena holds decoded texts in a few large buffers, backed by huge pages
// where the system allows (hugeBuffer): the strings of a resume's history
// cost a page fault every 2 MiB instead of every 4 KiB, which in a fresh
// process is most of what they cost. Its bytes, once handed out, are never
// written again; a string keeps its whole buffer alive.
type arena struct {
	buf  []byte
	size int // the size of the next buffer
}

// newArena returns an arena for about n bytes of texts.
func newArena(n int) *arena { return &arena{size: n} }

// string returns the content of a JSON string that str read, decoded as
// unquote decodes it (esc: it holds an escape), in the arena. A string
// that does not fit what is left of the buffer starts a new one (one that
// grows past it, as invalid UTF-8 replaced may, grows as a slice does:
// the strings already handed out keep the old one).
func (a *arena) string(raw []byte, esc bool) string {
	if len(raw) == 0 {
		return ""
	}
	if cap(a.buf)-len(a.buf) < len(raw) {
		a.buf = hugeBuffer(max(a.size, len(raw)))
	}
	start := len(a.buf)
	if !esc && utf8.Valid(raw) {
		a.buf = append(a.buf, raw...)
	} else {
		a.buf = appendUnquoted(a.buf, raw)
	}
	if len(a.buf) == start {
		return ""
	}
	return unsafe.String(&a.buf[start], len(a.buf)-start)
}

// int64 reads a number that fits an int64 without a fraction.
func (s *skimmer) int64() (int64, error) {
	n, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, errSkim
	}
	return v, nil
}

// bool reads true or false.
func (s *skimmer) bool() (bool, error) {
	if s.peek() == 't' {
		return true, s.literal("true")
	}
	return false, s.literal("false")
}

// unquote returns the content of a JSON string that str read (its escapes
// checked) as encoding/json decodes it: escapes replaced, invalid UTF-8
// and lone surrogates replaced by U+FFFD.
func unquote(raw []byte) string {
	b := appendUnquoted(make([]byte, 0, len(raw)), raw)
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}

// appendUnquoted appends to b the content of a JSON string that str read,
// as unquote decodes it.
func appendUnquoted(b, raw []byte) []byte {
	for len(raw) > 0 {
		i := bytes.IndexByte(raw, '\\')
		if i < 0 {
			b = appendUTF8(b, raw)
			break
		}
		b = appendUTF8(b, raw[:i])
		raw = raw[i:]
		c := raw[1]
		raw = raw[2:]
		switch c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(raw)
			raw = raw[4:]
			if utf16.IsSurrogate(r) {
				next := rune(-1)
				if len(raw) >= 6 && raw[0] == '\\' && raw[1] == 'u' {
					next = hex4(raw[2:])
				}
				if d := utf16.DecodeRune(r, next); d != unicode.ReplacementChar {
					raw = raw[6:]
					b = utf8.AppendRune(b, d)
					continue
				}
				r = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, c)
		}
	}
	return b
}

// hex4 reads four hex digits (-1 if they are not).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// appendUTF8 appends p with each byte of invalid UTF-8 replaced by U+FFFD.
func appendUTF8(b, p []byte) []byte {
	if utf8.Valid(p) {
		return append(b, p...)
	}
	for len(p) > 0 {
		r, n := utf8.DecodeRune(p)
		if r == utf8.RuneError && n == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, p[:n]...)
		}
		p = p[n:]
	}
	return b
}
