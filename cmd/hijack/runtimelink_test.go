package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hijack/preset/vptrace"
)

// TestRuntimeLink: what hijack cc adds to a link when the rules use a
// preset with a runtime, vptrace's here (README, "Linking the runtime"): the shared runtime, as needed
// and with an rpath, to programs and shared libraries (one runtime per
// process); the archive to static programs; nothing to relocatable links.
// The runtime is found in $HIJACK_RUNTIME (a directory or a file in it).
func TestRuntimeLink(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"libvptrace.so", "libvptrace.a"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	onlySO := t.TempDir() // the shared runtime only: a static link cannot use it
	if err := os.WriteFile(filepath.Join(onlySO, "libvptrace.so"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	shared := []string{"-Wl,--push-state,--as-needed,-Bdynamic", filepath.Join(dir, "libvptrace.so"), "-Wl,--pop-state", "-Xlinker", "-rpath", "-Xlinker", dir}
	static := []string{filepath.Join(dir, "libvptrace.a"), "-lpthread"}
	for _, c := range []struct {
		name string
		env  string // HIJACK_RUNTIME; "" for dir
		args []string
		want []string
		err  string
	}{
		{"program", "", []string{"main.o", "-o", "app"}, shared, ""},
		{"shared library", "", []string{"-shared", "-fPIC", "a.o", "-o", "liba.so"}, shared, ""},
		{"static", "", []string{"-static", "main.o", "-o", "app"}, static, ""},
		{"static-pie", "", []string{"-static-pie", "main.o", "-o", "app"}, static, ""},
		{"relocatable -r", "", []string{"-r", "a.o", "b.o", "-o", "ab.o"}, nil, ""},
		{"relocatable -Wl,-r", "", []string{"-nostdlib", "-Wl,-r", "a.o", "-o", "ab.o"}, nil, ""},
		{"relocatable -Xlinker", "", []string{"-nostdlib", "-Xlinker", "--relocatable", "a.o", "-o", "ab.o"}, nil, ""},
		{"a file in the directory", filepath.Join(dir, "libvptrace.so"), []string{"main.o"}, shared, ""},
		{"no runtime", t.TempDir(), []string{"main.o"}, nil, "the runtime libvptrace.so was not found"},
		{"no archive", onlySO, []string{"-static", "main.o"}, nil, "the runtime archive libvptrace.a (-static) was not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := c.env
			if env == "" {
				env = dir
			}
			t.Setenv("HIJACK_RUNTIME", env)
			got, err := runtimeLink(c.args, vptrace.Preset{}.Runtime())
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "HIJACK_RUNTIME") {
					t.Errorf("runtimeLink(%q): %q, %v; want an error saying %q and HIJACK_RUNTIME", c.args, got, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Errorf("runtimeLink(%q) = %q, %v; want %q", c.args, got, err, c.want)
			}
		})
	}
}
