package isoembed

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/render-static/render-static/internal/testkit/testtools"
)

// The archive of one member, byte for byte as coreos-installer's Initrd::to_bytes writes it with the cpio crate
// (see the package comment: each field from src/newc.rs Builder::new and into_header, write_cpio's inode numbers,
// trailer()).
func TestArchiveBytes(t *testing.T) {
	got := Archive(map[string][]byte{"config.ign": []byte("{}")})
	want := "070701" + "00000000" + "00008180" + "00000000" + "00000000" + "00000001" + "00000000" + "00000002" +
		"00000000" + "00000000" + "00000000" + "00000000" + "0000000b" + "00000000" + "config.ign\x00" + // 110 + 11 = 121: 3 NULs to 124
		"\x00\x00\x00" + "{}" + "\x00\x00" + // 126: 2 NULs to 128
		"070701" + "00000000" + "00000000" + "00000000" + "00000000" + "00000001" + "00000000" + "00000000" +
		"00000000" + "00000000" + "00000000" + "00000000" + "0000000b" + "00000000" + "TRAILER!!!\x00" + "\x00\x00\x00"
	if string(got) != want {
		t.Errorf("archive\n%q\nwant\n%q", got, want)
	}
}

// GNU cpio reads what Archive writes: every member, its mode and its contents, parent directories first (the
// kernel unpacks a file only into a directory the archive made before it).
func TestArchiveReadByCpio(t *testing.T) {
	cpio := testtools.Tool(t, "cpio")
	members := map[string][]byte{
		"config.ign": []byte(`{"ignition":{"version":"3.2.0"}}`),
		"etc/coreos-firstboot-network/a.nmconnection":    []byte("[connection]\nid=a\n"),
		"etc/coreos-firstboot-network/b.nmconnection":    bytes.Repeat([]byte("x"), 1001),
		"etc/coreos/installer.d/0000-render-static.yaml": []byte("dest-device: /dev/sda\n"),
	}
	archive := Archive(members)
	cmd := exec.Command(cpio, "-t", "-v", "--quiet")
	cmd.Stdin = bytes.NewReader(archive)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpio -t: %v", err)
	}
	var names []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		names = append(names, f[0]+" "+f[len(f)-1])
	}
	// In byte order, as Rust's BTreeMap<String, _> keeps them: "etc/coreos-..." before "etc/coreos/...".
	want := []string{"-rw------- config.ign", "drwxr-xr-x etc", "drwxr-xr-x etc/coreos-firstboot-network",
		"-rw------- etc/coreos-firstboot-network/a.nmconnection", "-rw------- etc/coreos-firstboot-network/b.nmconnection",
		"drwxr-xr-x etc/coreos", "drwxr-xr-x etc/coreos/installer.d", "-rw------- etc/coreos/installer.d/0000-render-static.yaml"}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("cpio -t lists\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	dir := t.TempDir()
	cmd = exec.Command(cpio, "-i", "-d", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(archive)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v\n%s", err, b)
	}
	for p, data := range members {
		if got, err := os.ReadFile(filepath.Join(dir, p)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: extracted %q (%v), want %q", p, got, err, data)
		}
	}
}

// Compress makes one .xz stream with coreos-installer's settings: a CRC32 check, one LZMA2 filter with the
// dictionary of liblzma's preset 9 (64 MiB; preset 6, xz's default, has 8 MiB), and it decompresses to the
// archive. The stream's own headers say so (the .xz file format, tukaani.org/xz/xz-file-format.txt: stream flags
// 2.1.1.2, block header 3.1, LZMA2 filter properties 5.3.1).
func TestCompressSettings(t *testing.T) {
	xz := testtools.Tool(t, "xz")
	archive := Archive(map[string][]byte{ConfigMember: bytes.Repeat([]byte("render-static live.ign "), 5000)})
	z, err := Compress(context.Background(), archive)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(z, []byte("\xfd7zXZ\x00")) || z[6] != 0 || z[7] != 0x01 {
		t.Fatalf("stream header % x: want the .xz magic and check type 0x01 (CRC32)", z[:12])
	}
	// Block header: size byte, flags (filter count - 1 in the low bits, no sizes: 0x00), filter ID 0x21 (LZMA2),
	// properties size 1, the dictionary size byte.
	bh := z[12:]
	if bh[1] != 0x00 || bh[2] != 0x21 || bh[3] != 0x01 {
		t.Fatalf("block header % x: want one LZMA2 filter and no compressed or uncompressed size (one stream, single-threaded)", bh[:8])
	}
	// Dictionary size byte d: (2 | d&1) << (d/2 + 11); 64 MiB is 28 (2 << 25), 8 MiB 22. xz reads standard input,
	// whose size it does not know, so it does not shrink the dictionary to the input as it may for a file:
	// liblzma's easy encoder, coreos-installer's, never does.
	if d := bh[4]; d != 28 {
		t.Errorf("LZMA2 dictionary byte %d, want 28 (64 MiB, preset 9)", d)
	}
	// Stream footer: CRC32, backward size, flags again, "YZ".
	foot := z[len(z)-12:]
	if !bytes.Equal(foot[10:], []byte("YZ")) || foot[8] != 0 || foot[9] != 0x01 {
		t.Errorf("stream footer % x", foot)
	}
	cmd := exec.Command(xz, "--decompress", "--stdout")
	cmd.Stdin = bytes.NewReader(z)
	back, err := cmd.Output()
	if err != nil || !bytes.Equal(back, archive) {
		t.Errorf("xz -d gives %d bytes (%v), want the archive's %d", len(back), err, len(archive))
	}
	// Without the huge pages runXZ asks glibc for, xz writes the same stream.
	plain := exec.Command(xz, XZArgs...)
	plain.Env = append(os.Environ(), "GLIBC_TUNABLES=")
	plain.Stdin = bytes.NewReader(archive)
	if same, err := plain.Output(); err != nil || !bytes.Equal(same, z) {
		t.Errorf("xz without %s gives %d bytes (%v), Compress %d", hugePages, len(same), err, len(z))
	}
	if v := Version(context.Background()); !strings.Contains(v, "liblzma") {
		t.Errorf("Version %q names no liblzma", v)
	}
}

// Measure is the length of Compress of Archive, for members of every kind: none, empty contents, lengths that are
// and are not multiples of 4, nested directories, text and random bytes.
func TestMeasureIsCompressOfArchive(t *testing.T) {
	testtools.Tool(t, "xz")
	random := make([]byte, 70001)
	for i := range random {
		random[i] = byte(i*7919 + i*i*31 + i>>5)
	}
	for _, members := range []map[string][]byte{
		{},
		{ConfigMember: nil},
		{ConfigMember: []byte("{}")},
		{ConfigMember: bytes.Repeat([]byte("live.ign "), 100001)},
		{ConfigMember: random, "a/b/c.txt": []byte("abc"), "a/d": []byte("abcd"), "e": random[:5]},
	} {
		archive := Archive(members)
		z, err := Compress(context.Background(), archive)
		if err != nil {
			t.Fatal(err)
		}
		n, err := Measure(context.Background(), members)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(z) {
			t.Errorf("%d members: Measure %d, Compress of Archive %d bytes", len(members), n, len(z))
		}
		if joined := bytes.Join(archiveParts(members), nil); !bytes.Equal(joined, archive) {
			t.Errorf("%d members: the parts Measure streams are not Archive", len(members))
		}
	}
}

// Version asks each xz binary once in a process, and asks again when the binary on PATH is another one. The xz
// here is a stand-in that counts its runs: the real one cannot be swapped for another version.
func TestVersionAskedOncePerBinary(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	bin := filepath.Join(dir, "xz")
	write := func(version string) {
		script := "#!/bin/sh\necho run >> " + runs + "\necho 'xz (XZ Utils) " + version + "'\necho 'liblzma " + version + "'\n"
		if err := os.WriteFile(bin+".new", []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(bin+".new", bin); err != nil { // a new inode, as a package update makes
			t.Fatal(err)
		}
	}
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}
	t.Setenv("PATH", dir)
	write("5.4.1")
	for i := 0; i < 3; i++ {
		if v := Version(context.Background()); v != "xz (XZ Utils) 5.4.1 liblzma 5.4.1" {
			t.Fatalf("Version %q", v)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("xz --version ran %d times for three Version calls, want once", n)
	}
	write("5.6.22")
	if v := Version(context.Background()); v != "xz (XZ Utils) 5.6.22 liblzma 5.6.22" {
		t.Errorf("after xz was replaced, Version %q", v)
	}
	if n := count(); n != 2 {
		t.Errorf("xz --version ran %d times, want twice", n)
	}
	t.Setenv("PATH", t.TempDir())
	if v := Version(context.Background()); v != "" {
		t.Errorf("without xz, Version %q", v)
	}
}
