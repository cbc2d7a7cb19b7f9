// Package isoembed is the RHCOS live ISO's Ignition embed area as coreos-installer fills it: the archive it puts
// there (a newc cpio, Archive) and how many bytes that archive takes once compressed as coreos-installer compresses
// it (Measure), to compare with the area's size (AreaSize).
//
// What coreos-installer does (github.com/coreos/coreos-installer): `iso ignition embed` adds the config, as it is,
// as the member "config.ign" of the embed area's initrd (src/live/mod.rs iso_ignition_embed, src/live/embed.rs
// INITRD_IGNITION_PATH); `iso customize` puts the live config it builds there under the same name
// (src/live/customize.rs into_initrd). src/io/initrd.rs Initrd::to_bytes writes the members sorted by path, each
// parent directory first (S_IFDIR|0755), each file S_IFREG|0600, with the cpio crate (0.4.1 in its Cargo.lock:
// src/newc.rs, lib.rs write_cpio): "070701" headers of 8-digit lowercase hex fields, the inode the member's index,
// uid, gid, mtime and device numbers 0, nlink 1, the name NUL-terminated and padded with NULs to a multiple of 4
// (header included), the data padded likewise, and a "TRAILER!!!" entry (inode 0, mode 0, nlink 1) with no
// padding after it. It compresses that with liblzma's easy encoder at preset 9 and a CRC32 check
// (xz2::stream::Stream::new_easy_encoder(9, Check::Crc32): "kernel requires CRC32") in one single-threaded xz
// stream, and refuses an archive longer than the area ("Compressed initramfs is too large", src/live/embed.rs
// InitrdEmbedArea::region).
package isoembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// AreaSize is the size of the RHCOS live ISO's embed area, images/ignition.img (coreos/IGNINFO.JSO gives its
// length; coreos-installer reads it, src/live/embed.rs InitrdEmbedArea::for_iso): 256 KiB.
const AreaSize = 262144

// ConfigMember is the embed area's member that holds the live system's Ignition config.
const ConfigMember = "config.ign"

// Archive is the newc cpio coreos-installer writes for members (path → contents, no leading slash), byte for byte
// (see the package comment).
func Archive(members map[string][]byte) []byte {
	return bytes.Join(archiveParts(members), nil)
}

// archiveParts is Archive in pieces, in order: headers, names and padding, and the members' contents as given (not
// copied: Measure streams them to xz).
func archiveParts(members map[string][]byte) [][]byte {
	paths := make([]string, 0, len(members))
	for p := range members {
		paths = append(paths, p)
	}
	sort.Strings(paths) // Rust's BTreeMap<String, _> orders by bytes, as Go compares strings
	var parts [][]byte
	var b bytes.Buffer // what precedes the next contents
	ino := 0
	entry := func(name string, mode int, data []byte) {
		start := b.Len()
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		ino++
		b.WriteString(name)
		b.WriteByte(0)
		pad(&b, b.Len()-start) // name padded as the entry's offset (the entry starts at a multiple of 4)
		if len(data) > 0 {
			parts = append(parts, bytes.Clone(b.Bytes()), data)
			b.Reset()
			pad(&b, len(data))
		}
	}
	var cwd []string
	for _, p := range paths {
		parent := strings.Split(p, "/")
		parent = parent[:len(parent)-1]
		common := 0
		for common < len(cwd) && common < len(parent) && cwd[common] == parent[common] {
			common++
		}
		cwd = cwd[:common]
		for _, dir := range parent[common:] {
			cwd = append(cwd, dir)
			entry(strings.Join(cwd, "/"), 0o40755, nil)
		}
		entry(p, 0o100600, members[p])
	}
	ino = 0
	entry("TRAILER!!!", 0, nil)
	return append(parts, b.Bytes())
}

// pad writes the NULs that pad n bytes to a multiple of 4.
func pad(b *bytes.Buffer, n int) {
	for ; n%4 != 0; n++ {
		b.WriteByte(0)
	}
}

// XZArgs are the arguments of XZ Utils' xz that make coreos-installer's stream: liblzma's preset 9 (not
// extreme), a CRC32 check, the .xz format, one thread (xz's multi-threaded mode writes its blocks differently,
// and xz 5.6 makes it the default), to standard output.
var XZArgs = []string{"--format=xz", "--check=crc32", "-9", "--threads=1", "--stdout"}

// ErrNoXZ says that XZ Utils' xz is not on PATH: the size is then not measured.
var ErrNoXZ = errors.New("xz (XZ Utils) is not on PATH")

// Compress compresses archive as coreos-installer does, with XZ Utils' xz (liblzma, the library coreos-installer
// links through the xz2 crate, at the same preset and check). It takes about half a second of CPU for a live.ign of
// a few megabytes; ctx bounds it.
func Compress(ctx context.Context, archive []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := runXZ(ctx, bytes.NewReader(archive), &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Measure is len(Compress(ctx, Archive(members))): the bytes the members take in the embed area. The archive is
// streamed to xz as its pieces (the members' contents are not copied into it) and only the compressed stream's
// length is kept.
func Measure(ctx context.Context, members map[string][]byte) (int, error) {
	parts := archiveParts(members)
	readers := make([]io.Reader, len(parts))
	for i, p := range parts {
		readers[i] = bytes.NewReader(p)
	}
	var n countingWriter
	if err := runXZ(ctx, io.MultiReader(readers...), &n); err != nil {
		return 0, err
	}
	return int(n), nil
}

// countingWriter counts what is written to it.
type countingWriter int64

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}

// runXZ runs xz with XZArgs from in to out. Its environment asks glibc's malloc for transparent huge pages
// (glibc.malloc.hugetlb=1, glibc 2.35 and later; others ignore it) unless GLIBC_TUNABLES is set already: at preset
// 9, liblzma's match finder allocates a 64 MiB hash table and 512 MiB of binary trees, and on 4 KiB pages touching
// them costs a few megabytes of input ~40,000 page faults, ~15 % of xz's CPU time. The stream is the same: what
// liblzma writes does not depend on where its memory is (TestCompressSettings compares the two).
func runXZ(ctx context.Context, in io.Reader, out io.Writer) error {
	bin, err := exec.LookPath("xz")
	if err != nil {
		return ErrNoXZ
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, XZArgs...)
	if _, set := os.LookupEnv("GLIBC_TUNABLES"); !set {
		cmd.Env = append(os.Environ(), hugePages)
	}
	cmd.Stdin = in
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(XZArgs, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// hugePages is the environment variable runXZ gives xz.
const hugePages = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1"

// Version is the first line of `xz --version` (XZ Utils' and liblzma's versions), "" without xz. It is asked once
// per xz binary (its path, size, modification time and inode) in a process: a fleet asks for every site.
func Version(ctx context.Context) string {
	bin, err := exec.LookPath("xz")
	if err != nil {
		return ""
	}
	fi, err := os.Stat(bin)
	if err != nil {
		return ""
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", bin, fi.Size(), fi.ModTime().UnixNano())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		key += fmt.Sprintf("\x00%d:%d", st.Dev, st.Ino)
	}
	versionsMu.Lock()
	v, ok := versions[key]
	versionsMu.Unlock()
	if ok {
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	v = strings.Join(strings.Fields(string(out)), " ")
	versionsMu.Lock()
	versions[key] = v
	versionsMu.Unlock()
	return v
}

var (
	versionsMu sync.Mutex
	versions   = map[string]string{} // by Version's key of the binary
)
