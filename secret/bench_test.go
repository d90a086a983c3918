package secret

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkRedact redacts 64 KiB of ordinary text (Go source and a base64
// blob) holding no secret — the common case of a tool result — with the
// secrets known by fingerprint, as a worker knows them, each in its seven
// forms. Its floors, in the same loop: one pass of strings.Index per form
// (what a redactor that searched each form in turn would cost), and one
// strings.IndexByte over the text (reading it once at memory speed).
func BenchmarkRedact(b *testing.B) {
	src, err := os.ReadFile("redact.go")
	if err != nil {
		b.Fatal(err)
	}
	chunk := string(src) + base64.StdEncoding.EncodeToString(src) + "\n"
	text := strings.Repeat(chunk, 64<<10/len(chunk)+1)[:64<<10]
	for _, n := range []int{2, 20} {
		var secrets []Secret
		for i := range n {
			secrets = append(secrets, Secret{Name: fmt.Sprintf("K%d_API_KEY", i), Value: fmt.Sprintf("sk-test-%02d-0f1e2d3c4b5a69788796a5b4c3d2e1f0", i)})
		}
		r := NewRedactor(nil, Fingerprints(secrets))
		var forms []string
		for _, s := range secrets {
			forms = append(forms, Forms(s.Value)...)
		}
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			var indexNs, scanNs int64
			for b.Loop() {
				if _, found := r.Redact(text); found != nil {
					b.Fatal("found a secret in text that holds none")
				}
				b.StopTimer()
				indexNs += timeIt(func() {
					for _, f := range forms {
						if strings.Index(text, f) >= 0 {
							b.Fatal("floor found a form")
						}
					}
				})
				scanNs += timeIt(func() {
					if strings.IndexByte(text, 0) >= 0 {
						b.Fatal("NUL in text")
					}
				})
				b.StartTimer()
			}
			b.ReportMetric(float64(indexNs)/float64(b.N), "index-each-form-ns/op")
			b.ReportMetric(float64(scanNs)/float64(b.N), "indexbyte-ns/op")
		})
	}
}

// timeIt is how long f takes, in nanoseconds.
func timeIt(f func()) int64 {
	start := time.Now()
	f()
	return time.Since(start).Nanoseconds()
}
