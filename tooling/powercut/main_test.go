package main

// The durable image without FUSE: the test changes the backing directory the way the mounted
// filesystem would pass each operation through, tells the state what the filesystem's handlers
// tell it (a write, a truncate, a file or directory fsync), then restores and reads what is left.

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
)

type harness struct {
	t     *testing.T
	s     *state
	root  string
	files map[string]*os.File
}

func newHarness(t *testing.T, posix bool, pre map[string]string) *harness {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "disk")
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range pre {
		if err := os.WriteFile(filepath.Join(root, "data", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &state{
		backing: root,
		shadow:  filepath.Join(base, "state"),
		posix:   posix,
		durable: map[string]map[string]entry{},
		dirty:   map[string]*dirty{},
	}
	if err := os.MkdirAll(s.shadow, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.scan("."); err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: s, root: root, files: map[string]*os.File{}}
}

func (h *harness) path(name string) string { return filepath.Join(h.root, "data", name) }

func (h *harness) open(name string, flags int) *os.File {
	h.t.Helper()
	f, err := os.OpenFile(h.path(name), flags, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	h.files[name] = f
	return f
}

func (h *harness) write(name string, data string) {
	h.t.Helper()
	f := h.files[name]
	off, err := f.Seek(0, 2)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		h.t.Fatal(err)
	}
	sx, err := statxFd(int(f.Fd()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.s.wrote(keyOf(sx), off, int64(len(data)))
}

func (h *harness) fsync(name string) {
	h.t.Helper()
	if errno := h.s.fsyncFile(int(h.files[name].Fd()), "data/"+name); errno != 0 {
		h.t.Fatal(errno)
	}
}

func (h *harness) fsyncDir() {
	h.t.Helper()
	if errno := h.s.fsyncDir("data"); errno != 0 {
		h.t.Fatal(errno)
	}
}

// cut closes every file and restores; returns the files left and their contents.
func (h *harness) cut() map[string]string {
	h.t.Helper()
	for _, f := range h.files {
		f.Close()
	}
	if _, _, err := h.s.restore(); err != nil {
		h.t.Fatal(err)
	}
	out := map[string]string{}
	entries, err := os.ReadDir(filepath.Join(h.root, "data"))
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(h.path(e.Name()))
		if err != nil {
			h.t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func equal(t *testing.T, got, want map[string]string) {
	t.Helper()
	keys := func(m map[string]string) []string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return k
	}
	if len(got) != len(want) {
		t.Fatalf("after the cut: %v, want %v", got, want)
	}
	for _, k := range keys(want) {
		if got[k] != want[k] {
			t.Fatalf("after the cut: %q = %q, want %q (all: %v)", k, got[k], want[k], got)
		}
	}
}

func TestUnsyncedWritesAreDropped(t *testing.T) {
	h := newHarness(t, false, map[string]string{"old": "kept"})
	h.open("log", os.O_WRONLY|os.O_CREATE)
	h.write("log", "one;")
	h.fsync("log")
	h.write("log", "two;")
	h.open("never", os.O_WRONLY|os.O_CREATE)
	h.write("never", "lost")
	equal(t, h.cut(), map[string]string{"old": "kept", "log": "one;"})
}

func TestNamesNeedADirectoryFsync(t *testing.T) {
	h := newHarness(t, false, map[string]string{"CURRENT": "MANIFEST-1", "gone": "x"})
	// A synced temporary file renamed over CURRENT, an unlink: both lost without a directory fsync.
	h.open("tmp", os.O_WRONLY|os.O_CREATE)
	h.write("tmp", "MANIFEST-2")
	h.fsync("tmp")
	if err := os.Rename(h.path("tmp"), h.path("CURRENT")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(h.path("gone")); err != nil {
		t.Fatal(err)
	}
	// tmp's own fsync made its (then) name durable, as on ext4.
	equal(t, h.cut(), map[string]string{"CURRENT": "MANIFEST-1", "gone": "x", "tmp": "MANIFEST-2"})
}

func TestDirectoryFsyncKeepsTheListing(t *testing.T) {
	h := newHarness(t, false, map[string]string{"CURRENT": "MANIFEST-1", "gone": "x"})
	h.open("tmp", os.O_WRONLY|os.O_CREATE)
	h.write("tmp", "MANIFEST-2")
	h.fsync("tmp")
	if err := os.Rename(h.path("tmp"), h.path("CURRENT")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(h.path("gone")); err != nil {
		t.Fatal(err)
	}
	h.open("empty", os.O_WRONLY|os.O_CREATE)
	h.write("empty", "data never synced")
	h.fsyncDir()
	equal(t, h.cut(), map[string]string{"CURRENT": "MANIFEST-2", "empty": ""})
}

func TestPosixNamesOnlyByDirectoryFsync(t *testing.T) {
	h := newHarness(t, true, nil)
	h.open("new", os.O_WRONLY|os.O_CREATE)
	h.write("new", "synced")
	h.fsync("new")
	equal(t, h.cut(), map[string]string{})
}

func TestTruncateIsDroppedUnlessSynced(t *testing.T) {
	h := newHarness(t, false, map[string]string{"f": "0123456789"})
	f := h.open("f", os.O_WRONLY)
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	sx, err := statxFd(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	h.s.truncated(keyOf(sx), 2)
	h.write("f", "ab")
	equal(t, h.cut(), map[string]string{"f": "0123456789"})

	h = newHarness(t, false, map[string]string{"f": "0123456789"})
	f = h.open("f", os.O_WRONLY)
	if err := f.Truncate(2); err != nil {
		t.Fatal(err)
	}
	sx, err = statxFd(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	h.s.truncated(keyOf(sx), 2)
	h.write("f", "ab")
	h.fsync("f")
	equal(t, h.cut(), map[string]string{"f": "01ab"})
}
