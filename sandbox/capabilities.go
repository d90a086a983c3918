package sandbox

import "strconv"

// Capability is one thing the sandbox can or cannot enforce on this
// machine, as `ink doctor` lists it.
type Capability struct {
	// What the sandbox does, e.g. "TCP connect and bind cut (Landlock)".
	What string `json:"what"`
	// Enforced says this machine enforces it.
	Enforced bool `json:"enforced"`
	// Why it is or is not, e.g. "needs Landlock ABI 4".
	Why string `json:"why"`
}

// Capabilities is what the bash sandbox can enforce on this machine.
type Capabilities struct {
	// Kernel is the running kernel's release; ABI its Landlock ABI
	// version (0: none).
	Kernel string `json:"kernel"`
	ABI    int    `json:"landlockABI"`
	// Namespaces is how bash gets the mount namespace that keeps the git
	// directory read-only ("" for none).
	Namespaces Namespaces   `json:"namespaces"`
	List       []Capability `json:"capabilities"`
}

// Probe reports what the sandbox can enforce here: it asks the kernel
// (Landlock ABI, seccomp) and starts exe (the ink binary) to try the mount
// namespaces (ProbeNamespaces).
func Probe(exe string) Capabilities {
	c := Capabilities{Kernel: kernelRelease(), ABI: ABI()}
	abi := func(what string, min int, lacking string) {
		if c.ABI >= min {
			c.List = append(c.List, Capability{What: what, Enforced: true, Why: "Landlock ABI " + strconv.Itoa(min) + " or newer"})
		} else {
			c.List = append(c.List, Capability{What: what, Why: "needs Landlock ABI " + strconv.Itoa(min) + lacking})
		}
	}
	abi("writes outside the workspace denied", MinABI, " (Linux 6.2); bash runs unconfined here")
	net := CheckNetwork()
	if net == nil {
		c.List = append(c.List, Capability{What: "network cut: no socket but Unix ones", Enforced: true, Why: "seccomp filter"})
	} else {
		c.List = append(c.List, Capability{What: "network cut: no socket but Unix ones", Why: net.Error()})
	}
	abi("network cut: TCP connect and bind denied", NetABI, " (Linux 6.7); the seccomp filter alone cuts TCP")
	abi("network cut: UDP denied", 10, "; the seccomp filter alone cuts UDP")
	abi("ioctl on devices denied", 5, " (Linux 6.10)")
	abi("signals to processes outside denied", 6, " (Linux 6.12)")
	ns, err := ProbeNamespaces(exe)
	c.Namespaces = ns
	if err != nil {
		c.List = append(c.List, Capability{What: "git directory read-only under workspace-write", Why: err.Error()})
	} else {
		c.List = append(c.List, Capability{What: "git directory read-only under workspace-write", Enforced: true, Why: string(ns) + " namespace"})
	}
	return c
}
