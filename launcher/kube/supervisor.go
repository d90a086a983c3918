package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// supervisor identifies the process whose pods these are: the host, its
// boot and the pid. A pod whose supervisor ran on this host and is gone
// (another boot, or no such process) is a leftover Prune deletes.
type supervisor struct {
	Host string
	Boot string
	Pid  int
}

// thisSupervisor is this process's identity.
func thisSupervisor() supervisor {
	host, _ := os.Hostname()
	return supervisor{Host: host, Boot: bootID(), Pid: os.Getpid()}
}

// bootID is the kernel's id of this boot ("" where there is none).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// annotation is the supervisor as the pods' annotation says it.
func (s supervisor) annotation() string {
	return fmt.Sprintf("host=%s,boot=%s,pid=%d", s.Host, s.Boot, s.Pid)
}

// label is a label value that stands for s (a hash: label values allow
// no '/' or ':').
func (s supervisor) label() string {
	sum := sha256.Sum256([]byte(s.annotation()))
	return hex.EncodeToString(sum[:])[:40]
}

// parseSupervisor reads an annotation; ok is false for one ink did not
// write.
func parseSupervisor(a string) (supervisor, bool) {
	var s supervisor
	for _, kv := range strings.Split(a, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "host":
			s.Host = v
		case "boot":
			s.Boot = v
		case "pid":
			s.Pid, _ = strconv.Atoi(v)
		}
	}
	return s, s.Host != "" && s.Pid > 0
}

// deadOnThisHost reports whether s ran on the host of self and is gone:
// another boot, or no process of that pid. A supervisor of another host
// is never judged dead: this host cannot tell.
func (s supervisor) deadOnThisHost(self supervisor, alive func(pid int) bool) bool {
	if s.Host != self.Host {
		return false
	}
	if s.Boot != self.Boot {
		return true
	}
	return s.Pid != self.Pid && !alive(s.Pid)
}

// processAlive reports whether a process of pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
