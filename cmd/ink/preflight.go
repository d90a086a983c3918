package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/inkdev/ink/model"
	"github.com/inkdev/ink/model/script"
)

// Checks of the input that need the file system or the network, made before
// ink writes anything: a bad INK_HOME, a script that does not load, a local
// model server that does not answer. Each is bad input (exit 2) with one
// message that says what to change.

// homeSource names where the INK_HOME in use came from, for messages.
func homeSource(home string) string {
	if os.Getenv("INK_HOME") != "" {
		return "INK_HOME=" + home
	}
	return "ink's home " + home + " (the default, as INK_HOME is not set)"
}

// checkHomeIsDir refuses an INK_HOME that exists but is not a directory, or
// that lies below a file.
func checkHomeIsDir(home string) error {
	fi, err := os.Stat(home)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return usageErr("%s is not a directory (it is a file); set INK_HOME to a directory where ink may keep its sessions, or move the file away", homeSource(home))
	case errors.Is(err, syscall.ENOTDIR):
		return usageErr("%s cannot be a directory: a part of that path is a file; set INK_HOME to a directory where ink may keep its sessions", homeSource(home))
	case errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return usageErr("%s cannot be read (%v); set INK_HOME to a directory of yours", homeSource(home), unwrapPathError(err))
	}
}

// checkHomeWritable refuses an INK_HOME that ink cannot write: a read-only
// file system, a directory of someone else. A home that does not exist yet
// must be creatable in its nearest existing parent. It writes nothing.
func checkHomeWritable(home string) error {
	if err := checkHomeIsDir(home); err != nil {
		return err
	}
	dir := home
	for {
		fi, err := os.Stat(dir)
		if err == nil {
			if !fi.IsDir() {
				return usageErr("%s cannot be created: %s is a file; set INK_HOME to a directory where ink may keep its sessions", homeSource(home), dir)
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		why := "ink may not write there"
		switch {
		case errors.Is(err, unix.EROFS):
			why = "it is on a read-only file system"
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
			why = "you may not write there"
		}
		what := "is not writable"
		if dir != home {
			what = fmt.Sprintf("cannot be created in %s", dir)
		}
		return usageErr("%s %s: %s; set INK_HOME to a directory you can write (ink keeps sessions, leases, logs and worktrees there)", homeSource(home), what, why)
	}
	return nil
}

// unwrapPathError drops the path of a *fs.PathError the message names anyway.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkScript loads the script model at path the way a worker will, so that
// a syntax error or an unknown key is reported before a session exists.
func checkScript(flag, path string) error {
	if _, err := script.Load(path); err != nil {
		return usageErr("%s: %v", flag, err)
	}
	return nil
}

// probeTimeout bounds the check that a local model server answers.
const probeTimeout = 5 * time.Second

// checkServerAnswers asks a self-hosted model server (Ollama, vLLM) for
// its model list; any HTTP answer will do. A server that does not answer at
// all is bad input: a run on it could only crash. Hosted APIs are not asked
// (their hiccups are retried during the run), nor is any server ink does
// not run locally by design. explicitURL says the endpoint came from
// --base-url.
func checkServerAnswers(ctx context.Context, b model.Binding, what string, explicitURL bool) error {
	if b.Provider != "ollama" && b.Provider != "vllm" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.BaseURL+"/models", nil)
	if err != nil {
		return usageErr("%s: the endpoint %s is not a URL ink can call (%v)", what, displayEndpoint(b.BaseURL), err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		return nil
	}
	why := "it does not answer"
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "nothing listens there (connection refused)"
	case errors.Is(err, context.DeadlineExceeded):
		why = fmt.Sprintf("no answer within %s", probeTimeout)
	default:
		var dnsErr interface{ Timeout() bool }
		if errors.As(err, &dnsErr) && dnsErr.Timeout() {
			why = fmt.Sprintf("no answer within %s", probeTimeout)
		}
	}
	fix := "start the vLLM server, or set VLLM_BASE_URL to its address (ending in /v1)"
	switch {
	case explicitURL:
		fix = "start the server, or give its address with --base-url"
	case b.Provider == "ollama":
		fix = "start Ollama (`ollama serve`), or set OLLAMA_HOST to where it runs"
	}
	return usageErr("%s: no %s server at %s: %s; %s", what, b.Provider, displayEndpoint(b.BaseURL), why, fix)
}
