package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The environment variables naming the binaries; `make kube-e2e` sets them.
const (
	EnvAPIServer = "INK_TEST_KUBE_APISERVER"
	EnvEtcd      = "INK_TEST_ETCD"
	EnvInknode   = "INK_TEST_INKNODE"
)

// InkUser is the user name ink runs as; Namespace is where it may run pods.
const (
	InkUser   = "ink"
	Namespace = "ink"
)

// InkRules are the namespaced rules of the launcher's Role: exactly what it
// needs, so that the e2e tests check the list.
var InkRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete", "deletecollection"}},
	{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"pods/portforward"}, Verbs: []string{"create", "get"}},
}

// InkClusterRules are the launcher's cluster-wide rules (ink kube check asks
// the apiserver what it may do).
var InkClusterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}, Verbs: []string{"create"}},
}

// Options change what Start sets up.
type Options struct {
	// Rules replace InkRules in the ink user's Role when not nil (a test of
	// a missing permission leaves one out).
	Rules []rbacv1.PolicyRule
}

// ControlPlane is a running etcd and kube-apiserver with the ink user set
// up. Its fields are read-only; its methods are safe for concurrent use.
// Start ends everything it started in t.Cleanup.
type ControlPlane struct {
	// URL is the apiserver's address, https://127.0.0.1:<port>.
	URL string
	// Dir holds the control plane's files: logs, certificates, kubeconfigs.
	Dir string
	// CAPEM is the CA of the apiserver's serving certificate.
	CAPEM []byte
	// Admin is a client config of the administrator (system:masters).
	Admin *rest.Config
	// Ink is a client config of the ink user.
	Ink *rest.Config
	// AdminKubeconfig and InkKubeconfig are kubeconfig files of the two
	// users; their current context's namespace is Namespace.
	AdminKubeconfig, InkKubeconfig string
	// Ready is how long the apiserver took from its start to /readyz ok.
	Ready time.Duration

	inknode string
	core    *rest.RESTClient // admin, core/v1

	mu        sync.Mutex
	nodeCount int
}

// Start runs a control plane for t, or skips t when the binaries are not
// given. It fails t if the control plane does not come up.
func Start(t testing.TB) *ControlPlane { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	apiserver, etcd, inknode := os.Getenv(EnvAPIServer), os.Getenv(EnvEtcd), os.Getenv(EnvInknode)
	if apiserver == "" || etcd == "" || inknode == "" {
		t.Skipf("the Kubernetes e2e tests need %s, %s and %s: `make kube-e2e` builds the binaries and runs them", EnvAPIServer, EnvEtcd, EnvInknode)
	}
	c, err := start(t, apiserver, etcd, inknode, opts)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return c
}

func start(t testing.TB, apiserver, etcd, inknode string, opts Options) (*ControlPlane, error) {
	dir := t.TempDir()
	p, err := newPKI(dir)
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	etcdURL, err := startEtcd(t, dir, etcd)
	if err != nil {
		return nil, err
	}
	adminToken, inkToken := randomToken(), randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	body := fmt.Sprintf("%s,admin,admin,\"system:masters\"\n%s,%s,%s\n", adminToken, inkToken, InkUser, InkUser)
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	began := time.Now()
	api, err := startProc(t, dir, "kube-apiserver", apiserver, 5*time.Second,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+p.certFile,
		"--tls-private-key-file="+p.keyFile,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubetest.ink.invalid",
		"--service-account-key-file="+p.saKeyFile,
		"--service-account-signing-key-file="+p.saKeyFile,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	c := &ControlPlane{
		URL:     fmt.Sprintf("https://127.0.0.1:%d", port),
		Dir:     dir,
		CAPEM:   p.caPEM,
		inknode: inknode,
	}
	c.Admin = &rest.Config{Host: c.URL, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}, QPS: 50, Burst: 100}
	c.Ink = &rest.Config{Host: c.URL, BearerToken: inkToken, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}, QPS: 50, Burst: 100}
	if err := c.waitReady(api); err != nil {
		return nil, err
	}
	c.Ready = time.Since(began)
	if c.core, err = CoreClient(c.Admin); err != nil {
		return nil, err
	}
	rules := InkRules
	if opts.Rules != nil {
		rules = opts.Rules
	}
	if err := c.setupRBAC(rules); err != nil {
		return nil, fmt.Errorf("RBAC: %w", err)
	}
	c.AdminKubeconfig = filepath.Join(dir, "admin.kubeconfig")
	c.InkKubeconfig = filepath.Join(dir, "ink.kubeconfig")
	for path, tok := range map[string]string{c.AdminKubeconfig: adminToken, c.InkKubeconfig: inkToken} {
		if err := writeKubeconfig(path, c.URL, p.caPEM, tok); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startEtcd runs etcd on free loopback ports with its data in dir.
func startEtcd(t testing.TB, dir, etcd string) (string, error) {
	client, err := freePort()
	if err != nil {
		return "", err
	}
	peer, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	args := []string{
		"--data-dir=" + filepath.Join(dir, "etcd"),
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=default=" + peerURL,
	}
	// Debian's etcd 3.4 has no --unsafe-no-fsync; newer ones do.
	if help, _ := exec.Command(etcd, "--help").CombinedOutput(); strings.Contains(string(help), "--unsafe-no-fsync") {
		args = append(args, "--unsafe-no-fsync")
	}
	if _, err := startProc(t, dir, "etcd", etcd, 0, args...); err != nil {
		return "", err
	}
	return clientURL, nil
}

// waitReady polls /readyz until it answers ok, the apiserver exits, or two
// minutes pass.
func (c *ControlPlane) waitReady(api *proc) error {
	tr, err := rest.TransportFor(c.Admin)
	if err != nil {
		return err
	}
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	deadline := time.After(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	for {
		resp, err := hc.Get(c.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-api.exited:
			return fmt.Errorf("kube-apiserver exited (%v) before /readyz; its output ends:\n%s", api.err, api.tail())
		case <-deadline:
			return fmt.Errorf("kube-apiserver not ready after 2 minutes (last: %s); its output ends:\n%s", last, api.tail())
		case <-tick.C:
		}
	}
}

// setupRBAC makes the namespace and binds the ink user to rules there and
// to InkClusterRules cluster-wide.
func (c *ControlPlane) setupRBAC(rules []rbacv1.PolicyRule) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.core.Post().Resource("namespaces").Body(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}).Do(ctx).Error(); err != nil {
		return fmt.Errorf("namespace %s: %w", Namespace, err)
	}
	rbac, err := restClient(c.Admin, rbacv1.SchemeGroupVersion)
	if err != nil {
		return err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: InkUser}}
	objs := []struct {
		ns, resource string
		obj          any
	}{
		{Namespace, "roles", &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ink-launcher"}, Rules: rules}},
		{Namespace, "rolebindings", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ink-launcher"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ink-launcher"}}},
		{"", "clusterroles", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ink-launcher"}, Rules: InkClusterRules}},
		{"", "clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ink-launcher"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ink-launcher"}}},
	}
	for _, o := range objs {
		req := rbac.Post().Resource(o.resource).Body(o.obj)
		if o.ns != "" {
			req = req.Namespace(o.ns)
		}
		if err := req.Do(ctx).Error(); err != nil {
			return fmt.Errorf("%s: %w", o.resource, err)
		}
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for one token user.
func writeKubeconfig(path, server string, caPEM []byte, token string) error {
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: user
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: user
    namespace: %s
current-context: kubetest
`, server, base64.StdEncoding.EncodeToString(caPEM), token, Namespace)
	return os.WriteFile(path, []byte(body), 0o600)
}
