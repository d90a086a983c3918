package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// Version is the transcript format version this package writes and reads.
const Version = 1

// Header is line 1 of every transcript.
type Header struct {
	// Type is always "session".
	Type    string `json:"type"`
	Version int    `json:"version"`
	// ID is the session id (a child's id for a child transcript).
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// Cwd is the absolute directory the agent runs in.
	Cwd string `json:"cwd"`
	// Parent is the parent session id; children only.
	Parent string `json:"parent,omitempty"`
	// Launch records how a child was launched; children only.
	Launch *LaunchRecord `json:"launch,omitempty"`
}

// ErrInvalidLaunch marks a header whose launch record does not parse or
// validate. Callers tell it apart from a malformed header with errors.Is.
var ErrInvalidLaunch = errors.New("invalid launch record")

// wireHeader reads a header line while keeping the launch record raw, so a
// bad launch record is told apart from a bad header.
type wireHeader struct {
	Type      string          `json:"type"`
	Version   int             `json:"version"`
	ID        string          `json:"id"`
	CreatedAt time.Time       `json:"createdAt"`
	Cwd       string          `json:"cwd"`
	Parent    string          `json:"parent,omitempty"`
	Launch    json.RawMessage `json:"launch,omitempty"`
}

// validate checks the fields every header must have.
func (h Header) validate() error {
	if h.Type != "session" {
		return fmt.Errorf("header type is %q, want \"session\"", h.Type)
	}
	if h.Version != Version {
		return fmt.Errorf("transcript version %d is not supported (this ink reads version %d)", h.Version, Version)
	}
	if !ValidID(h.ID) {
		return fmt.Errorf("header id %q is not a valid session id", h.ID)
	}
	if h.CreatedAt.IsZero() {
		return errors.New("header has no createdAt time")
	}
	if !filepath.IsAbs(h.Cwd) {
		return fmt.Errorf("header cwd %q is not an absolute path", h.Cwd)
	}
	if h.Parent != "" && !ValidID(h.Parent) {
		return fmt.Errorf("header parent %q is not a valid session id", h.Parent)
	}
	return nil
}

// parseHeader reads one header line. A header whose own fields are fine but
// whose launch record is not returns the header (Launch nil) and an error
// wrapping ErrInvalidLaunch.
func parseHeader(line []byte) (Header, error) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var w wireHeader
	if err := json.Unmarshal(line, &w); err != nil {
		return Header{}, fmt.Errorf("invalid header: %w", err)
	}
	h := Header{Type: w.Type, Version: w.Version, ID: w.ID, CreatedAt: w.CreatedAt, Cwd: w.Cwd, Parent: w.Parent}
	if err := h.validate(); err != nil {
		return Header{}, fmt.Errorf("invalid header: %w", err)
	}
	if len(w.Launch) > 0 && !bytes.Equal(w.Launch, []byte("null")) {
		l, err := ParseLaunchRecord(w.Launch)
		if err != nil {
			return h, fmt.Errorf("%w: %w", ErrInvalidLaunch, err)
		}
		h.Launch = &l
	}
	return h, nil
}

// encodeHeader fills defaults, validates h and returns its line with "\n".
func encodeHeader(h Header) (Header, []byte, error) {
	if h.Type == "" {
		h.Type = "session"
	}
	if h.Version == 0 {
		h.Version = Version
	}
	if h.CreatedAt.IsZero() {
		h.CreatedAt = time.Now().UTC()
	}
	if err := h.validate(); err != nil {
		return h, nil, err
	}
	if h.Launch != nil {
		l := *h.Launch
		l.Tools = sortedCopy(l.Tools)
		if err := l.Validate(); err != nil {
			return h, nil, fmt.Errorf("%w: %w", ErrInvalidLaunch, err)
		}
		h.Launch = &l
	}
	line, err := marshalLine(h)
	return h, line, err
}

// marshalLine encodes v as one compact JSON line ending in "\n", without
// HTML escaping.
func marshalLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
