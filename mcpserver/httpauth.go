package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// MinTokenLen is the shortest bearer token a server accepts from
// --token-file: 32 characters, what `openssl rand -hex 16` prints.
const MinTokenLen = 32

// NewToken returns a fresh bearer token: 32 random bytes in hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate the MCP token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ReadTokenFile reads the bearer token of --token-file: the file's content
// without surrounding white space. It refuses a file that others than its
// owner may read, a token shorter than MinTokenLen, and one that is not a
// single word of printable ASCII (it travels in an HTTP header).
func ReadTokenFile(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("--token-file %s can be read by others (mode %04o): whoever reads it can run agents that edit your files; chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := string(bytes.TrimSpace(data))
	for _, c := range []byte(token) {
		if c <= ' ' || c > '~' {
			return "", fmt.Errorf("--token-file %s must hold one token of printable ASCII without spaces (it is sent in an HTTP header); make one with `openssl rand -hex 32 > %s`", path, path)
		}
	}
	if len(token) < MinTokenLen {
		return "", fmt.Errorf("--token-file %s holds %d characters; a token needs at least %d to resist guessing: make one with `openssl rand -hex 32 > %s`", path, len(token), MinTokenLen, path)
	}
	return token, nil
}

// TokenPath is where a server listening on port keeps the token it
// generated: $INK_HOME/mcp/PORT.token.
func TokenPath(inkHome string, port int) string {
	return filepath.Join(inkHome, "mcp", strconv.Itoa(port)+".token")
}

// WriteToken writes token to path, readable by its owner only (mode 0600,
// in a directory of mode 0700), through a temporary file renamed over
// whatever was there. The caller removes it with RemoveToken.
func WriteToken(path, token string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write the MCP token: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("write the MCP token: %w", err)
	}
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("write the MCP token: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write the MCP token: %w", err)
	}
	return nil
}

// RemoveToken removes the token file at path if it still holds token (a
// later server on the same port may have replaced it).
func RemoveToken(path, token string) {
	if data, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(data)) == token {
		os.Remove(path)
	}
}

// guard lets through to next only the requests that carry no Origin and
// the bearer token: a request from a web page (any Origin: ink serves
// programs, not pages) gets 403, one without the token 401 (the SDK's
// auth.RequireBearerToken checks the token), and neither
// reaches the MCP handler, so neither opens a session or writes a file.
//
// The MCP transport requires servers to validate Origin against DNS
// rebinding; the token keeps out every other local process and user.
func guard(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	verify := func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			return nil, fmt.Errorf("%w: the bearer token is not this server's; send the one `ink mcp --http` printed when it started (also in $INK_HOME/mcp/PORT.token), or the content of its --token-file", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: "ink"}, nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Values("Origin"); len(origin) > 0 {
			http.Error(w, fmt.Sprintf("ink mcp: refused a request from a web page (Origin %q): ink serves MCP clients that run as programs, which send no Origin, so that no site in a browser can drive it", strings.Join(origin, ", ")), http.StatusForbidden)
			return
		}
		if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ink mcp"`)
			http.Error(w, "ink mcp: this server needs the header \"Authorization: Bearer TOKEN\"; TOKEN is what `ink mcp --http` printed when it started (also in $INK_HOME/mcp/PORT.token), or the content of its --token-file", http.StatusUnauthorized)
			return
		}
		bearer.ServeHTTP(w, r)
	})
}

// errNoToken is Handler's refusal to serve without a token.
var errNoToken = errors.New("mcp: the HTTP transport needs a bearer token of at least 32 characters")
