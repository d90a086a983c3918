package model_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/inkdev/ink/model"
)

func TestLineGuard(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", model.MaxReplyBytes)
	cases := []struct {
		name string
		body string
		ok   bool
	}{
		{"lines at the bound", long + "\n" + long + "\n", true},
		{"a line past the bound", "a\n" + long + "x\nb\n", false},
		{"a last line past the bound", "a\n" + long + "x", false},
	}
	for _, tc := range cases {
		for _, reader := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"halves", iotest.HalfReader}} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				t.Parallel()
				g := model.LineGuard(io.NopCloser(reader.wrap(strings.NewReader(tc.body))))
				got, err := io.ReadAll(g)
				if tc.ok && (err != nil || !bytes.Equal(got, []byte(tc.body))) {
					t.Fatalf("read %d bytes, err %v; want all of it", len(got), err)
				}
				if !tc.ok && (!model.IsReplyTooLarge(err) || !strings.Contains(err.Error(), "reply bound of 8 MiB")) {
					t.Fatalf("err = %v; want the reply bound named", err)
				}
			})
		}
	}
}

func TestSizeString(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{8 << 20: "8 MiB", 1 << 20: "1 MiB", 1536 << 10: "1.5 MiB", 512 << 10: "512 KiB", 1500: "1.5 KiB", 300: "300 bytes"} {
		if got := model.SizeString(n); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", n, got, want)
		}
	}
}
