package tools

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// sniffLen is how much of a file is inspected to tell text from binary.
const sniffLen = 8000

// looksBinary reports whether data (the start of a file) holds a NUL byte,
// the same rule git uses to call a file binary.
func looksBinary(data []byte) bool {
	if len(data) > sniffLen {
		data = data[:sniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// writeFileAtomic replaces (or creates) the file at real path with data:
// it writes a temporary file in the same directory, syncs it, gives it
// mode perm and renames it over the target, so a reader sees either the
// old or the new content, never a mix. A hard link to the old file keeps
// the old content.
func writeFileAtomic(real string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(real)
	tmp, err := os.CreateTemp(dir, "."+base+".ink-*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("set mode: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err := os.Rename(tmp.Name(), real); err != nil {
		return fmt.Errorf("rename into place: %w", err)
	}
	done = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
