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
	"os/exec"
	"sort"
	"strings"
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
	paths := make([]string, 0, len(members))
	for p := range members {
		paths = append(paths, p)
	}
	sort.Strings(paths) // Rust's BTreeMap<String, _> orders by bytes, as Go compares strings
	var b bytes.Buffer
	ino := 0
	entry := func(name string, mode int, data []byte) {
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		ino++
		b.WriteString(name)
		b.WriteByte(0)
		pad(&b)
		b.Write(data)
		pad(&b)
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
	return b.Bytes()
}

// pad pads b with NULs to a multiple of 4 bytes (each entry starts at a multiple of 4, so the offset in b is the
// offset in the entry).
func pad(b *bytes.Buffer) {
	for b.Len()%4 != 0 {
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
// links through the xz2 crate, at the same preset and check). It takes about a second of CPU for a live.ign of a
// few megabytes; ctx bounds it.
func Compress(ctx context.Context, archive []byte) ([]byte, error) {
	bin, err := exec.LookPath("xz")
	if err != nil {
		return nil, ErrNoXZ
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, XZArgs...)
	cmd.Stdin = bytes.NewReader(archive)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(XZArgs, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}

// Version is the first line of `xz --version` (XZ Utils' and liblzma's versions), "" without xz.
func Version(ctx context.Context) string {
	bin, err := exec.LookPath("xz")
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(out)), " ")
}
