package lease

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Info describes one lease found by List.
type Info struct {
	// Path is the transcript path (the lease file path without ".lease").
	Path string
	// LeasePath is the lock file path.
	LeasePath    string
	State        State
	Pid          int
	Agent        string
	AttemptID    string
	Epoch        int64
	HeartbeatAge time.Duration
	// Meta is the full metadata, nil when there is none.
	Meta *Meta
	// Err is set when the lease could not be probed (for example a lease
	// file that is a symlink); the other fields are then mostly empty.
	Err error
}

// List probes every "*.lease" under inkHome/sessions, sorted by transcript
// path. A missing sessions directory yields an empty list. A lease that
// cannot be probed is listed with Err set rather than failing the listing.
func List(inkHome string) ([]Info, error) {
	root := filepath.Join(inkHome, "sessions")
	var out []Info
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !strings.HasSuffix(d.Name(), ".lease") || p == root {
			return nil
		}
		info := Info{Path: strings.TrimSuffix(p, ".lease"), LeasePath: p}
		st, perr := Probe(info.Path)
		if perr != nil {
			info.Err = perr
		} else {
			info.State = st.State
			info.HeartbeatAge = st.HeartbeatAge
			if m := st.Meta; m != nil {
				info.Meta = m
				info.Pid, info.Agent, info.AttemptID, info.Epoch = m.Pid, m.Agent, m.AttemptID, m.Epoch
			}
		}
		out = append(out, info)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list leases under %s: %w", root, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}
