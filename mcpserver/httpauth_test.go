package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuard: only a request without Origin and with the token reaches the
// handler behind the guard; the others get 401 or 403 and say why.
func TestGuard(t *testing.T) {
	t.Parallel()
	token, err := NewToken()
	if err != nil || len(token) < MinTokenLen {
		t.Fatalf("NewToken = %q, %v", token, err)
	}
	reached := 0
	h := guard(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ }))
	for _, tc := range []struct {
		name    string
		method  string
		headers map[string]string
		code    int
		says    string
	}{
		{"no token", "POST", nil, 401, "needs the header \"Authorization: Bearer TOKEN\""},
		{"no token GET", "GET", nil, 401, "needs the header"},
		{"no token DELETE", "DELETE", map[string]string{"Mcp-Session-Id": "abc"}, 401, "needs the header"},
		{"wrong token", "POST", map[string]string{"Authorization": "Bearer " + strings.Repeat("0", 64)}, 401, "not this server's"},
		{"token prefix", "POST", map[string]string{"Authorization": "Bearer " + token[:40]}, 401, "not this server's"},
		{"basic", "POST", map[string]string{"Authorization": "Basic " + token}, 401, "needs the header"},
		{"foreign origin", "POST", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://evil.example"}, 403, "Origin \"http://evil.example\""},
		{"loopback origin", "GET", map[string]string{"Authorization": "Bearer " + token, "Origin": "http://127.0.0.1:8765"}, 403, "from a web page"},
		{"null origin without token", "POST", map[string]string{"Origin": "null"}, 403, "from a web page"},
		{"good", "POST", map[string]string{"Authorization": "Bearer " + token}, 200, ""},
		{"good, lower-case scheme", "POST", map[string]string{"Authorization": "bearer " + token}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := reached
			req := httptest.NewRequest(tc.method, "/", strings.NewReader("{}"))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
				t.Fatalf("%d %q, want %d saying %q", rec.Code, rec.Body.String(), tc.code, tc.says)
			}
			if passed := reached > before; passed != (tc.code == 200) {
				t.Fatalf("reached the handler: %v, with status %d", passed, rec.Code)
			}
			if tc.code == 401 && rec.Header().Get("WWW-Authenticate") == "" && !strings.HasPrefix(tc.headers["Authorization"], "Bearer") {
				t.Fatal("401 without WWW-Authenticate")
			}
			if strings.Contains(rec.Body.String(), token) {
				t.Fatal("the refusal shows the token")
			}
		})
	}
}

func TestReadTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := strings.Repeat("ab", 16)
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		want       string
		refusal    string
	}{
		{"good", good + "\n", 0o600, good, ""},
		{"owner read-only", "  " + good + "\n\n", 0o400, good, ""},
		{"readable by group", good, 0o640, "", "chmod 600"},
		{"readable by all", good, 0o644, "", "can be read by others"},
		{"short", "secret", 0o600, "", "at least 32"},
		{"empty", "", 0o600, "", "at least 32"},
		{"two words", good + " " + good, 0o600, "", "without spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tc.mode); err != nil {
				t.Fatal(err)
			}
			got, err := ReadTokenFile(p)
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("ReadTokenFile = %q, %v; want a refusal saying %q", got, err, tc.refusal)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ReadTokenFile = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := ReadTokenFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Fatalf("missing file: %v", err)
	}
}

// TestWriteToken: the token file and its directory are the owner's alone,
// even when the directory was made open before, and RemoveToken leaves a
// file that another server rewrote.
func TestWriteToken(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "mcp"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := TokenPath(home, 8765)
	if err := WriteToken(p, "first"); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(p)
	if err := WriteToken(p, "second"); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{p: 0o600, filepath.Dir(p): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: %v, %v; want mode %04o", path, fi.Mode(), err, want)
		}
	}
	if data, _ := os.ReadFile(p); string(old) != "first\n" || string(data) != "second\n" {
		t.Fatalf("token file held %q then %q", old, data)
	}
	RemoveToken(p, "first")
	if _, err := os.Stat(p); err != nil {
		t.Fatal("RemoveToken removed another server's token")
	}
	RemoveToken(p, "second")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("RemoveToken left its own token: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 0 {
		t.Fatalf("left behind: %v", entries)
	}
}
