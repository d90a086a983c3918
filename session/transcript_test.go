package session

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inkdev/ink/model"
)

func TestOpenExcludesTornFinalLine(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages()
	h := headerLine(t, "s1")
	body := lines(h, messageLine(t, msgs[0]), messageLine(t, msgs[1]))
	full := messageLine(t, msgs[2])
	for _, tc := range []struct {
		name         string
		tail         []byte
		wantMsgs     int
		needsNewline bool
	}{
		{"cut mid JSON", full[:len(full)/2], 2, false},
		{"invalid line with newline", []byte("{\"type\":\"message\",\"id\":\"x\"}\n"), 2, false},
		{"garbage with newline", []byte("not json\n"), 2, false},
		{"blank final line", []byte("\n"), 2, false},
		{"valid entry lacking newline", full[:len(full)-1], 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeRaw(t, lines(body, tc.tail))
			tr, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Messages) != tc.wantMsgs {
				t.Errorf("%d messages, want %d", len(tr.Messages), tc.wantMsgs)
			}
			if !reflect.DeepEqual(tr.Messages[:2], msgs[:2]) {
				t.Error("earlier messages changed")
			}
			if tr.Torn == nil {
				t.Fatal("Torn = nil")
			}
			if tr.Torn.Offset != int64(len(body)) || tr.Torn.Line != 4 || tr.Torn.Bytes != len(tc.tail) || tr.Torn.NeedsNewline != tc.needsNewline {
				t.Errorf("Torn = %+v; want offset %d line 4 bytes %d needsNewline %v", tr.Torn, len(body), len(tc.tail), tc.needsNewline)
			}
			if tr.Torn.Reason == "" {
				t.Error("Torn has no reason")
			}
		})
	}
}

func TestOpenInteriorCorruptionNamesFileAndLine(t *testing.T) {
	t.Parallel()
	msgs := sampleMessages()
	for _, tc := range []struct {
		name string
		bad  []byte
		want string
	}{
		{"garbage", []byte("garbage\n"), "invalid JSON"},
		{"unknown type", []byte(`{"type":"weird","id":"x"}` + "\n"), `unknown entry type "weird"`},
		{"second header", headerLine(t, "s2"), "second session header"},
		{"blank line", []byte("\n"), "invalid JSON"},
		{"bad role", []byte(`{"type":"message","id":"x","message":{"role":"system"}}` + "\n"), "role"},
		{"attempt without id", []byte(`{"type":"attempt","id":"x","phase":"start","time":"2026-01-01T00:00:00Z"}` + "\n"), "attemptId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := writeRaw(t, lines(headerLine(t, "s1"), messageLine(t, msgs[0]), tc.bad, messageLine(t, msgs[1])))
			_, err := Open(path)
			if err == nil {
				t.Fatal("Open succeeded on a damaged interior line")
			}
			if !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %s:3 and %q", err, path, tc.want)
			}
		})
	}
}

func TestOpenRefusesNonTranscripts(t *testing.T) {
	t.Parallel()
	good := newTranscript(t, Header{}, sampleMessages()[:1])
	dir := t.TempDir()
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	mkfifo(t, fifo)
	badLaunch := strings.Replace(string(headerLine(t, "c")), `"cwd"`, `"launch":{"version":9},"cwd"`, 1)
	for _, tc := range []struct {
		name    string
		path    string
		want    string
		wantErr error
	}{
		{"symlink", link, "symlink", ErrNotRegular},
		{"directory", dir, "directory", ErrNotRegular},
		{"fifo", fifo, "not a regular file", ErrNotRegular},
		{"missing", filepath.Join(dir, "none.jsonl"), "no such file", os.ErrNotExist},
		{"empty", writeRaw(t, nil), "never started", ErrNotStarted},
		{"no header", writeRaw(t, messageLine(t, model.UserText("hi"))), ":1: invalid header", nil},
		{"torn header", writeRaw(t, headerLine(t, "x")[:20]), "never started", ErrNotStarted},
		{"version 2", writeRaw(t, []byte(strings.Replace(string(headerLine(t, "x")), `"version":1`, `"version":2`, 1))), "version 2 is not supported", nil},
		{"bad launch", writeRaw(t, []byte(badLaunch)), "invalid launch record", ErrInvalidLaunch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open error = %v, want it to mention %q", err, tc.want)
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
			if _, herr := ReadHeader(tc.path); herr == nil {
				t.Errorf("ReadHeader accepted it")
			}
		})
	}
}

func TestOpenHeaderOnlyWithoutNewline(t *testing.T) {
	t.Parallel()
	h := headerLine(t, "s1")
	tr, err := Open(writeRaw(t, h[:len(h)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Header.ID != "s1" || tr.Torn == nil || !tr.Torn.NeedsNewline || len(tr.Entries) != 0 {
		t.Errorf("header %+v torn %+v entries %d", tr.Header, tr.Torn, len(tr.Entries))
	}
}

func TestReadHeaderReadsOnlyTheFirstLine(t *testing.T) {
	t.Parallel()
	// A damaged interior does not matter to ReadHeader.
	path := writeRaw(t, lines(headerLine(t, "s1"), []byte("garbage\n")))
	h, err := ReadHeader(path)
	if err != nil || h.ID != "s1" {
		t.Fatalf("ReadHeader = %+v, %v", h, err)
	}
	// A first line longer than 64 KiB is refused, whatever follows.
	long := strings.Replace(string(headerLine(t, "s1")), `"cwd"`, `"pad":"`+strings.Repeat("x", 70<<10)+`","cwd"`, 1)
	if _, err := ReadHeader(writeRaw(t, []byte(long))); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("ReadHeader on a 70 KiB header: %v", err)
	}
	// Under the limit, unknown header fields are tolerated.
	padded := strings.Replace(string(headerLine(t, "s1")), `"cwd"`, `"pad":"`+strings.Repeat("x", 60<<10)+`","cwd"`, 1)
	if h, err := ReadHeader(writeRaw(t, []byte(padded))); err != nil || h.ID != "s1" {
		t.Errorf("ReadHeader on a 60 KiB header: %+v, %v", h, err)
	}
}
