package session

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/inkdev/ink/model"
)

// This file holds the skimmer: a JSON reader that checks a message entry
// line and takes from it only what a resume needs of a message the model
// will not see again — its entry id, its role and the ids and names of its
// tool calls and results — without building the message. It checks the
// whole line's syntax as encoding/json does, at the speed of a byte scan
// over the long strings (tool outputs) that make up most of a transcript.
//
// It is an accelerator, never a judge: a line it does not accept, or whose
// shape it does not know (a duplicate or differently cased key, a number
// where ink writes none, an escaped id), is decoded by decodeEntry, which
// gives the verdict and the error. FuzzSkim holds it to that: what the
// skimmer accepts, decodeEntry accepts with the same skeleton.

// errSkim means "the skimmer cannot judge this line; decode it".
var errSkim = errors.New("skim: decode the line instead")

// skimmed is what the skimmer takes from a message entry line.
type skimmed struct {
	id     string
	msg    model.Message // its skeleton: role, tool call ids and names, result ids and names
	record bool          // the entry holds a TaskRecord
}

// strClass marks the bytes that end a run of plain string content: the
// closing quote, a backslash, and the control characters JSON forbids.
var strClass = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// skimmer reads one line.
type skimmer struct {
	b []byte
	i int
	// arena, if not nil, holds the strings the message decoder
	// (decode.go) decodes.
	arena *arena
}

func (s *skimmer) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *skimmer) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *skimmer) expect(c byte) error {
	if s.peek() != c {
		return errSkim
	}
	s.i++
	return nil
}

// str reads a string and returns its raw content (between the quotes) and
// whether it holds an escape.
func (s *skimmer) str() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, errSkim
	}
	s.i++
	start, esc := s.i, false
	for {
		// Skip plain content fast: eight bytes at a time while none of
		// them ends the run, then byte by byte.
		j := s.i
		for j+8 <= len(s.b) && plainWord(binary.LittleEndian.Uint64(s.b[j:])) {
			j += 8
		}
		for j < len(s.b) && !strClass[s.b[j]] {
			j++
		}
		s.i = j
		if s.i >= len(s.b) {
			return nil, false, errSkim
		}
		switch c := s.b[s.i]; {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			return raw, esc, nil
		case c == '\\':
			esc = true
			if s.i+1 >= len(s.b) {
				return nil, false, errSkim
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return nil, false, errSkim
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return nil, false, errSkim
					}
				}
				s.i += 6
			default:
				return nil, false, errSkim
			}
		default: // a control character
			return nil, false, errSkim
		}
	}
}

// plainWord reports whether none of the eight bytes of x is a quote, a
// backslash or a control character (the classic zero-byte test on x with
// each of the first two xored away, and the less-than test for 0x20).
func plainWord(x uint64) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		quote = ones * '"'
		slash = ones * '\\'
	)
	q, b := x^quote, x^slash
	return ((q-ones)&^q|(b-ones)&^b|(x-ones*0x20)&^x)&highs == 0
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// plainStr reads a string without escapes and returns it. Invalid UTF-8,
// which encoding/json would replace, is not judged here.
func (s *skimmer) plainStr() (string, error) {
	raw, esc, err := s.str()
	if err != nil || esc || !utf8.Valid(raw) {
		return "", errSkim
	}
	return string(raw), nil
}

// number reads a JSON number and returns its text.
func (s *skimmer) number() ([]byte, error) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && '1' <= s.b[s.i] && s.b[s.i] <= '9':
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
		}
	default:
		return nil, errSkim
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return nil, errSkim
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil, errSkim
		}
	}
	return s.b[start:s.i], nil
}

func (s *skimmer) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

func (s *skimmer) literal(word string) error {
	s.ws()
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return errSkim
	}
	s.i += len(word)
	return nil
}

// value checks any JSON value and skips it.
func (s *skimmer) value(depth int) error {
	if depth > 1000 {
		return errSkim
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.str()
		return err
	case c == '{':
		return s.object(func(key []byte) error { return s.value(depth + 1) })
	case c == '[':
		return s.array(func() error { return s.value(depth + 1) })
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		_, err := s.number()
		return err
	}
	return errSkim
}

// object reads an object, calling member for each key with the reader at
// the key's value, which member must consume. A key with an escape is
// not judged here.
func (s *skimmer) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, esc, err := s.str()
		if err != nil || esc || !isASCII(key) {
			return errSkim
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSkim
		}
	}
}

// array reads an array, calling elem with the reader at each element,
// which elem must consume.
func (s *skimmer) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSkim
		}
	}
}

// fields reads an object whose known keys are names (at most 32), each at
// most once; read is called with a known key's index, the reader at its
// value, which read must consume. Any other key is skipped as
// encoding/json skips it, unless it matches a known key but for case
// (encoding/json would take it for that field): then the line is not
// judged here.
func (s *skimmer) fields(names []string, read func(i int) error) error {
	var seen uint32
	return s.object(func(key []byte) error {
		for i, n := range names {
			if string(key) == n {
				if seen&(1<<i) != 0 {
					return errSkim
				}
				seen |= 1 << i
				return read(i)
			}
		}
		for _, n := range names {
			if foldEqual(key, n) {
				return errSkim
			}
		}
		return s.value(1)
	})
}

// foldEqual reports whether ASCII key equals name but for case.
func foldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range key {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

// isNull consumes a null and reports whether there was one.
func (s *skimmer) isNull() bool {
	if s.peek() == 'n' && s.literal("null") == nil {
		return true
	}
	return false
}

// The keys of the objects a message entry line holds.
var (
	entryKeys   = []string{"type", "id", "message", "taskRecord", "taskRecords"}
	messageKeys = []string{"role", "content", "toolCalls", "usage", "model", "stopReason", "results"}
	blockKeys   = []string{"type", "text", "signature"}
	callKeys    = []string{"id", "name", "args"}
	usageKeys   = []string{"input", "output", "cacheRead", "cacheWrite", "incomplete"}
	resultKeys  = []string{"toolCallId", "toolName", "content", "isError"}
)

// skimMessageLine checks a message entry line and returns its skeleton.
// errSkim (or any error) means the line must go to decodeEntry.
func skimMessageLine(line []byte) (skimmed, error) {
	s := &skimmer{b: bytes.TrimSuffix(line, []byte("\n"))}
	var out skimmed
	var typ string
	hasMsg, hasRecord := false, false
	err := s.fields(entryKeys, func(i int) (err error) {
		switch i {
		case 0:
			typ, err = s.plainStr()
		case 1:
			out.id, err = s.plainStr()
		case 2:
			if s.isNull() {
				return errSkim
			}
			hasMsg = true
			err = s.message(&out.msg)
		case 3:
			if s.isNull() {
				return nil
			}
			if s.peek() != '{' {
				return errSkim
			}
			hasRecord = true
			err = s.value(1)
		case 4:
			if s.isNull() {
				return nil
			}
			if s.peek() != '[' {
				return errSkim
			}
			out.record = true
			err = s.value(1)
		}
		return err
	})
	if err != nil {
		return skimmed{}, err
	}
	s.ws()
	if s.i != len(s.b) || typ != EntryMessage || out.id == "" || !hasMsg {
		return skimmed{}, errSkim
	}
	m := out.msg
	if err := validateMessage(m); err != nil {
		return skimmed{}, errSkim
	}
	if hasRecord && m.Role != model.RoleToolResult {
		return skimmed{}, errSkim
	}
	out.msg.Content = nil // checked; a skeleton keeps no content
	out.record = out.record || hasRecord
	return out, nil
}

// message reads a message object into its skeleton (with the types of its
// content blocks, for validateMessage).
func (s *skimmer) message(m *model.Message) error {
	return s.fields(messageKeys, func(i int) error {
		switch i {
		case 0:
			var err error
			m.Role, err = s.role()
			return err
		case 1:
			if s.isNull() {
				return nil
			}
			return s.array(func() error {
				typed := false
				err := s.fields(blockKeys, func(i int) error {
					if i == 0 {
						raw, esc, err := s.str()
						if err != nil || esc {
							return errSkim
						}
						typed = len(raw) > 0
						return nil
					}
					return s.stringValue()
				})
				if err == nil && !typed {
					return errSkim // validateMessage refuses a block without a type
				}
				// The block's content is not kept; one placeholder stands
				// for it, so that validateMessage sees there is content.
				if len(m.Content) == 0 {
					m.Content = append(m.Content, model.Block{Type: "skimmed"})
				}
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
						err = s.value(1)
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
			return s.fields(usageKeys, func(i int) error {
				if i == 4 {
					return s.boolValue()
				}
				return s.intValue()
			})
		case 4, 5:
			return s.stringValue()
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
						err = s.stringValue()
					default:
						err = s.boolValue()
					}
					return err
				})
				m.Results = append(m.Results, r)
				return err
			})
		}
	})
}

// stringValue checks a string value (null is not judged here).
func (s *skimmer) stringValue() error {
	_, _, err := s.str()
	return err
}

// boolValue checks a true or false value.
func (s *skimmer) boolValue() error {
	switch s.peek() {
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	}
	return errSkim
}

// intValue checks a number that fits an int64 without a fraction.
func (s *skimmer) intValue() error {
	n, err := s.number()
	if err != nil {
		return err
	}
	if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
		return errSkim
	}
	return nil
}

// role reads a message's role, which must be one of the three ink writes
// (validateMessage refuses any other), without allocating.
func (s *skimmer) role() (model.Role, error) {
	raw, esc, err := s.str()
	if err != nil || esc {
		return "", errSkim
	}
	switch string(raw) {
	case string(model.RoleUser):
		return model.RoleUser, nil
	case string(model.RoleAssistant):
		return model.RoleAssistant, nil
	case string(model.RoleToolResult):
		return model.RoleToolResult, nil
	}
	return "", errSkim
}
