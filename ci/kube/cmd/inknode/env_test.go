package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y"}
	for in, want := range map[string]string{
		"plain":         "plain",
		"$(A)-$(B)":     "x-y",
		"$(C)":          "$(C)",
		"$$(A)":         "$(A)",
		"cost $5":       "cost $5",
		"open $(A":      "open $(A",
		"$(A)$(A)$":     "xx$",
		"listen:$(A):7": "listen:x:7",
	} {
		if got := expand(in, vars); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPodEnv(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "ink"}}}
	c := corev1.Container{Env: []corev1.EnvVar{
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "LISTEN", Value: "listen:$(POD_IP):7777"},
		{Name: "PATH", Value: "/opt/bin"},
	}}
	env, err := podEnv(pod, c, "127.0.1.2")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/opt/bin", "HOSTNAME=p", "POD_IP=127.0.1.2", "NAME=p", "APP=ink", "LISTEN=listen:127.0.1.2:7777"}
	if !slices.Equal(env, want) {
		t.Fatalf("env = %q, want %q", env, want)
	}
	c.Env = []corev1.EnvVar{{Name: "KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
	if _, err := podEnv(pod, c, "127.0.1.2"); err == nil {
		t.Fatal("env from a secret: no error")
	}
}

func TestSeekTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{0: "", 1: "c\n", 2: "b\nc\n", 3: "a\nb\nc\n", 9: "a\nb\nc\n"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := seekTail(f, n); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != want {
			t.Errorf("tail %d = %q, want %q", n, b, want)
		}
	}
}
