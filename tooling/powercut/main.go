// powercutfs: a passthrough FUSE filesystem whose power can be cut.
//
// Every operation goes through to the backing directory at once (so reads see every write), and
// the filesystem keeps, beside it, the durable image: what a disk would hold after a power cut.
// A file's content enters the durable image when the file is fsynced or fdatasynced; a
// directory's entries (creates, renames, unlinks) when the directory is fsynced, and (unless
// -posix) a new file's name also when the file itself is fsynced, as ext4 does for a new inode.
// Nothing else is durable: a write, a truncate, a rename or an unlink that no fsync covered is
// lost at a power cut.
//
// SIGUSR1 cuts the power: from then on every write and fsync fails with EIO, the filesystem is
// unmounted (once the processes that had files open on it are gone), the backing directory is
// put back into its durable image (unsynced data dropped, files truncated to their synced
// content, entries never made durable removed, durable ones brought back), and the process exits
// 0 after printing one "powercut: ..." line. SIGTERM or SIGINT unmounts without a cut.
//
// It prints "ready <mountpoint>" on stdout once mounted. Used by the power-cut test of the level
// storage (apps/vvm-host/test/powercut.test.ts); see tooling/powercut/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// entry is one durable directory entry: a file (by its key) or a directory.
type entry struct {
	dir bool
	key string
}

// dirty is what changed in a file since its last fsync: the byte range written (one interval
// covering every write: copying more than what changed is harmless, the live file is the truth)
// and the smallest size a truncate set.
type dirty struct {
	lo, hi  int64
	minSize int64 // -1: no truncate
}

// state is the durable image and the bookkeeping to maintain it, under one lock.
type state struct {
	mu      sync.Mutex
	backing string
	shadow  string // directory of durable file contents, one file per key
	posix   bool
	cut     bool
	// durable[dir] = the durable entries of a directory (paths relative to the root, "." is it).
	durable map[string]map[string]entry
	dirty   map[string]*dirty
	syncs   int
	dirSync int
}

// keyOf names a file's inode for its whole life: inode number and birth time (an inode number
// reused by a new file gets a new birth time).
func keyOf(st *unix.Statx_t) string {
	return fmt.Sprintf("%d-%d.%09d", st.Ino, st.Btime.Sec, st.Btime.Nsec)
}

func statxPath(p string) (*unix.Statx_t, error) {
	var st unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_TYPE|unix.STATX_SIZE, &st)
	return &st, err
}

func statxFd(fd int) (*unix.Statx_t, error) {
	var st unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_INO|unix.STATX_BTIME|unix.STATX_SIZE, &st)
	return &st, err
}

func rel(p string) string {
	if p == "" {
		return "."
	}
	return path.Clean(p)
}

// listing reads the live entries of a directory as durable entries.
func (s *state) listing(dir string) (map[string]entry, error) {
	full := filepath.Join(s.backing, dir)
	names, err := os.ReadDir(full)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entry, len(names))
	for _, d := range names {
		st, err := statxPath(filepath.Join(full, d.Name()))
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			return nil, err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			out[d.Name()] = entry{dir: true}
		case unix.S_IFREG:
			out[d.Name()] = entry{key: keyOf(st)}
		default:
			fmt.Fprintf(os.Stderr, "powercutfs: %s is neither a file nor a directory; it will not survive a cut\n", filepath.Join(dir, d.Name()))
		}
	}
	return out, nil
}

// scan makes everything in the backing directory durable (the state at mount time).
func (s *state) scan(dir string) error {
	list, err := s.listing(dir)
	if err != nil {
		return err
	}
	s.durable[dir] = list
	for name, e := range list {
		child := path.Join(dir, name)
		if e.dir {
			if err := s.scan(child); err != nil {
				return err
			}
			continue
		}
		if err := copyFile(filepath.Join(s.backing, child), filepath.Join(s.shadow, e.key)); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// wrote notes a completed write (called after the data reached the live file).
func (s *state) wrote(key string, off, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirty[key]
	if d == nil {
		s.dirty[key] = &dirty{lo: off, hi: off + n, minSize: -1}
		return
	}
	d.lo = min(d.lo, off)
	d.hi = max(d.hi, off+n)
}

// truncated notes a completed size change.
func (s *state) truncated(key string, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.dirty[key]
	if d == nil {
		s.dirty[key] = &dirty{lo: 0, hi: 0, minSize: size}
		return
	}
	if d.minSize < 0 || size < d.minSize {
		d.minSize = size
	}
}

// fsyncFile makes the live content of the open file durable; relPath is its current name.
func (s *state) fsyncFile(fd int, relPath string) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		return syscall.EIO
	}
	st, err := statxFd(fd)
	if err != nil {
		return fs.ToErrno(err)
	}
	key := keyOf(st)
	size := int64(st.Size)
	out, err := os.OpenFile(filepath.Join(s.shadow, key), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer out.Close()
	if d := s.dirty[key]; d != nil {
		if d.minSize >= 0 {
			if err := out.Truncate(d.minSize); err != nil {
				return fs.ToErrno(err)
			}
		}
		lo, hi := d.lo, min(d.hi, size)
		// The application's descriptor may be write-only: read through a new one of the same file.
		in, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil {
			return fs.ToErrno(err)
		}
		defer in.Close()
		buf := make([]byte, 1<<20)
		for lo < hi {
			n, err := in.ReadAt(buf[:min(int64(len(buf)), hi-lo)], lo)
			if err != nil && !errors.Is(err, io.EOF) {
				return fs.ToErrno(err)
			}
			if n == 0 {
				break
			}
			if _, err := out.WriteAt(buf[:n], lo); err != nil {
				return fs.ToErrno(err)
			}
			lo += int64(n)
		}
		delete(s.dirty, key)
	}
	if err := out.Truncate(size); err != nil {
		return fs.ToErrno(err)
	}
	s.syncs++
	if !s.posix && relPath != "" && !s.isDurable(key) {
		// ext4: fsync of a new inode also commits the directory entry that created it.
		dir, name := path.Split(relPath)
		dir = rel(dir)
		if s.durable[dir] == nil {
			s.durable[dir] = map[string]entry{}
		}
		s.durable[dir][name] = entry{key: key}
	}
	return 0
}

func (s *state) isDurable(key string) bool {
	for _, list := range s.durable {
		for _, e := range list {
			if !e.dir && e.key == key {
				return true
			}
		}
	}
	return false
}

// fsyncDir makes a directory's live entries durable.
func (s *state) fsyncDir(dir string) syscall.Errno {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		return syscall.EIO
	}
	list, err := s.listing(dir)
	if err != nil {
		return fs.ToErrno(err)
	}
	s.durable[dir] = list
	s.dirSync++
	return 0
}

// restore puts the backing directory into the durable image.
func (s *state) restore() (files int, bytes int64, err error) {
	entries, err := os.ReadDir(s.backing)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(s.backing, e.Name())); err != nil {
			return 0, 0, err
		}
	}
	var build func(dir string) error
	build = func(dir string) error {
		names := make([]string, 0, len(s.durable[dir]))
		for name := range s.durable[dir] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			e := s.durable[dir][name]
			child := path.Join(dir, name)
			target := filepath.Join(s.backing, child)
			if e.dir {
				if err := os.Mkdir(target, 0o755); err != nil {
					return err
				}
				if err := build(child); err != nil {
					return err
				}
				continue
			}
			src := filepath.Join(s.shadow, e.key)
			if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
				// A name made durable whose content never was: an empty file.
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					return err
				}
			} else if err := copyFile(src, target); err != nil {
				return err
			}
			if st, err := os.Stat(target); err == nil {
				bytes += st.Size()
			}
			files++
		}
		return nil
	}
	return files, bytes, build(".")
}

var st *state

// node is a loopback node that tells the state about writes, truncates and fsyncs.
type node struct {
	fs.LoopbackNode
}

func newNode(root *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
	return &node{fs.LoopbackNode{RootData: root}}
}

func (n *node) relPath() string {
	return n.Path(n.Root())
}

// file is a loopback file that the kernel may not bypass: without FUSE passthrough (which go-fuse
// turns on for a loopback file when it runs as root on Linux 6.9+), every write comes to Write.
type file struct {
	*fs.LoopbackFile
}

// PassthroughFd refuses passthrough.
func (f *file) PassthroughFd() (int, bool) {
	return -1, false
}

func wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &file{lf}
	}
	return fh
}

func fdOf(fh fs.FileHandle) (int, bool) {
	if f, ok := fh.(*file); ok {
		return f.LoopbackFile.PassthroughFd()
	}
	return -1, false
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	return wrap(fh), fuseFlags, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return inode, wrap(fh), fuseFlags, errno
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	st.mu.Lock()
	cut := st.cut
	st.mu.Unlock()
	if cut {
		return 0, syscall.EIO
	}
	w, ok := f.(fs.FileWriter)
	if !ok {
		return 0, syscall.EBADF
	}
	written, errno := w.Write(ctx, data, off)
	if written > 0 {
		if fd, ok := fdOf(f); ok {
			if sx, err := statxFd(fd); err == nil {
				st.wrote(keyOf(sx), off, int64(written))
			}
		}
	}
	return written, errno
}

// Writev writes data that came in several slices as one write.
func (n *node) Writev(ctx context.Context, f fs.FileHandle, data [][]byte, off int64) (uint32, syscall.Errno) {
	var joined []byte
	for _, d := range data {
		joined = append(joined, d...)
	}
	return n.Write(ctx, f, joined, off)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, hasSize := in.GetSize()
	if hasSize {
		st.mu.Lock()
		cut := st.cut
		st.mu.Unlock()
		if cut {
			return syscall.EIO
		}
	}
	errno := n.LoopbackNode.Setattr(ctx, f, in, out)
	if errno == 0 && hasSize {
		if sx, err := statxPath(filepath.Join(st.backing, n.relPath())); err == nil {
			st.truncated(keyOf(sx), int64(size))
		}
	}
	return errno
}

func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.IsDir() {
		return st.fsyncDir(rel(n.relPath()))
	}
	fd, ok := fdOf(f)
	if !ok {
		fmt.Fprintf(os.Stderr, "powercutfs: fsync of %s without its file (%T)\n", n.relPath(), f)
		return syscall.EBADF
	}
	return st.fsyncFile(fd, n.relPath())
}

// Allocate is refused: a filesystem need not support fallocate, and this one does not track it.
func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.EOPNOTSUPP
}

// CopyFileRange is refused: the kernel then copies with reads and writes, which are tracked.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, len uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// dirHandle is the loopback directory stream with fsyncdir going to the state.
type dirHandle struct {
	inner fs.FileHandle
	n     *node
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	inner, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &dirHandle{inner: inner, n: n}, fuseFlags, 0
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.inner.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.inner.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.inner.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	return st.fsyncDir(rel(d.n.relPath()))
}

func unmount(server *fuse.Server, mountpoint string) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := server.Unmount()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "powercutfs: unmount %s: %v; detaching\n", mountpoint, err)
			_ = unix.Unmount(mountpoint, unix.MNT_DETACH)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func main() {
	backing := flag.String("backing", "", "the directory that holds the files (required)")
	mountpoint := flag.String("mount", "", "where to mount (required)")
	shadow := flag.String("state", "", "an empty directory for the durable image (required; outside -backing)")
	posix := flag.Bool("posix", false, "a new file's name is durable only after its directory is fsynced (default: also after the file is, as on ext4)")
	debug := flag.Bool("debug", false, "log every FUSE request")
	flag.Parse()
	if *backing == "" || *mountpoint == "" || *shadow == "" {
		flag.Usage()
		os.Exit(2)
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "powercutfs:", err)
			os.Exit(2)
		}
		return a
	}
	st = &state{
		backing: abs(*backing),
		shadow:  abs(*shadow),
		posix:   *posix,
		durable: map[string]map[string]entry{},
		dirty:   map[string]*dirty{},
	}
	if err := os.MkdirAll(st.shadow, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "powercutfs:", err)
		os.Exit(1)
	}
	if err := st.scan("."); err != nil {
		fmt.Fprintln(os.Stderr, "powercutfs: scan:", err)
		os.Exit(1)
	}
	var rootStat syscall.Stat_t
	if err := syscall.Stat(st.backing, &rootStat); err != nil {
		fmt.Fprintln(os.Stderr, "powercutfs:", err)
		os.Exit(1)
	}
	root := &fs.LoopbackRoot{Path: st.backing, Dev: uint64(rootStat.Dev), NewNode: newNode}
	rootNode := newNode(root, nil, "", &rootStat)
	root.RootNode = rootNode
	zero := time.Duration(0)
	server, err := fs.Mount(abs(*mountpoint), rootNode, &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName:      "powercutfs",
			Name:        "powercutfs",
			DirectMount: true,
			Debug:       *debug,
		},
		// The kernel asks for attributes again each time: sizes always come from the live files.
		AttrTimeout:  &zero,
		EntryTimeout: &zero,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "powercutfs: mount:", err)
		os.Exit(1)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGINT)
	fmt.Printf("ready %s\n", abs(*mountpoint))
	sig := <-signals
	if sig != syscall.SIGUSR1 {
		unmount(server, abs(*mountpoint))
		server.Wait()
		return
	}
	st.mu.Lock()
	st.cut = true
	unsynced := len(st.dirty)
	st.mu.Unlock()
	unmount(server, abs(*mountpoint))
	server.Wait()
	files, bytes, err := st.restore()
	if err != nil {
		fmt.Fprintln(os.Stderr, "powercutfs: restore:", err)
		os.Exit(1)
	}
	fmt.Printf("powercut: %d file syncs and %d directory syncs kept; %d files had unsynced writes (dropped); restored %d files, %d bytes\n",
		st.syncs, st.dirSync, unsynced, files, bytes)
}
