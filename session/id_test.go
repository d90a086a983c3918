package session

import (
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
)

func TestNewIDShapeOrderAndUniqueness(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{26}$`)
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = NewID()
		if !re.MatchString(ids[i]) {
			t.Fatalf("NewID() = %q, want 26 lowercase Crockford base32 characters", ids[i])
		}
		if !ValidID(ids[i]) {
			t.Fatalf("NewID() = %q is not ValidID", ids[i])
		}
	}
	if !slices.IsSorted(ids) {
		t.Fatal("ids made one after another are not in sorted order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestNewIDConcurrentUnique(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, 2000)
			for i := range local {
				local[i] = NewID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id %q", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
}

func TestEncodeIDKnownValues(t *testing.T) {
	t.Parallel()
	var zero, ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	if got := encodeID(zero); got != "00000000000000000000000000" {
		t.Errorf("encodeID(0) = %q", got)
	}
	if got := encodeID(ones); got != "7zzzzzzzzzzzzzzzzzzzzzzzzz" {
		t.Errorf("encodeID(max) = %q", got)
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	long := ""
	for len(long) < 64 {
		long += "a"
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"01jd8x3k9q7m2v5n6p4r8s0t1w", true},
		{"a", true},
		{"child-1", true},
		{long, true},
		{long + "a", false},
		{"", false},
		{"-a", false},
		{"../x", false},
		{"a/b", false},
		{"..", false},
		{"ABC", false},
		{"a b", false},
		{"a_b", false},
		{"a.jsonl", false},
		{"é", false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func TestCwdSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cwd, want string }{
		{"/home/me/proj", "-home-me-proj"},
		{"/", "-"},
		{"/home/me/my-proj", "-home-me-my_-proj"},
		{"/a_b", "-a__b"},
		{"/a b/ü", "-a_20b-_c3_bc"},
		{"/home/me/proj/", "-home-me-proj"},
		{"/x/.hidden", "-x-.hidden"},
		{".", "_2e"},
		{"..", "_2e."},
	} {
		if got := CwdSlug(tc.cwd); got != tc.want {
			t.Errorf("CwdSlug(%q) = %q, want %q", tc.cwd, got, tc.want)
		}
	}
}

func TestCwdSlugNeverCollides(t *testing.T) {
	t.Parallel()
	// Pairs that a plain "/"->"-", "-"->"--" scheme maps to one name.
	cwds := []string{"/a-/b", "/a/-b", "/a--b", "/a/b", "/a-b", "/a_b", "/a__b", "/a_-b", "/a-_b",
		"/a/_2d", "/a_2d", "/a-2d", "/a~b", "/a%2d"}
	seen := map[string]string{}
	for _, c := range cwds {
		s := CwdSlug(c)
		if prev, ok := seen[s]; ok {
			t.Errorf("CwdSlug(%q) = CwdSlug(%q) = %q", c, prev, s)
		}
		seen[s] = c
	}
}

func TestCwdSlugLongPathsStayShortAndDistinct(t *testing.T) {
	t.Parallel()
	base := "/"
	for len(base) < 400 {
		base += "deep/"
	}
	a, b := CwdSlug(base+"one"), CwdSlug(base+"two")
	if a == b {
		t.Fatalf("long paths share slug %q", a)
	}
	for _, s := range []string{a, b} {
		if len(s) > maxSlug {
			t.Errorf("slug is %d bytes, want at most %d", len(s), maxSlug)
		}
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	main := MainPath("/h", "/home/me/proj", "01abc")
	if want := filepath.FromSlash("/h/sessions/-home-me-proj/01abc.jsonl"); main != want {
		t.Errorf("MainPath = %q, want %q", main, want)
	}
	if got, want := ChildrenDir(main), filepath.FromSlash("/h/sessions/-home-me-proj/01abc/children"); got != want {
		t.Errorf("ChildrenDir = %q, want %q", got, want)
	}
	if got, want := ChildPath(main, "02def"), filepath.FromSlash("/h/sessions/-home-me-proj/01abc/children/02def.jsonl"); got != want {
		t.Errorf("ChildPath = %q, want %q", got, want)
	}
}
