package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/render-static/render-static/pkg/certs"
	"github.com/render-static/render-static/pkg/renew"
)

// The parts of the renewal end-to-end test (renew_test.go) that need no node: copying an update into the node,
// running the node's apply command bounded, and reading certificates from files, kubeconfigs and a TLS handshake.

// FoundCert is a certificate found in a file: where, and what.
type FoundCert struct {
	Path string // the file (for a kubeconfig: path#user)
	Cert *x509.Certificate
}

// Fingerprint is the SHA-256 of the certificate's DER, hex.
func Fingerprint(c *x509.Certificate) string {
	s := sha256.Sum256(c.Raw)
	return hex.EncodeToString(s[:])
}

// Describe is a certificate in one line: subject, serial, validity.
func Describe(c *x509.Certificate) string {
	return fmt.Sprintf("CN=%s serial=%s valid %s..%s", c.Subject.CommonName, c.SerialNumber.Text(16),
		c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
}

// CertificatesIn reads every certificate under root (a file or a directory, walked; root may be a symlink, as the
// kubelet's kubelet-client-current.pem is, but symlinks below it are not followed): the CERTIFICATE blocks of PEM
// files, and the client certificates embedded in kubeconfigs. Unreadable and non-certificate files are skipped.
func CertificatesIn(root string) ([]FoundCert, error) {
	var out []FoundCert
	if resolved, err := filepath.EvalSymlinks(root); err == nil {
		root = resolved
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		found, err := certificatesOf(p, data)
		out = append(out, found...)
		return err
	})
	return out, err
}

// certificatesOf parses one file's certificates: PEM blocks, else a kubeconfig's embedded client certificates.
// A CERTIFICATE block that does not parse is an error (naming the file), not a certificate less to check.
func certificatesOf(path string, data []byte) ([]FoundCert, error) {
	var out []FoundCert
	add := func(where string, pemData []byte) error {
		cs, err := certs.ParseCertificates(pemData)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, c := range cs {
			out = append(out, FoundCert{Path: where, Cert: c})
		}
		return nil
	}
	if err := add(path, data); err != nil || len(out) > 0 || !bytes.Contains(data, []byte("client-certificate-data")) {
		return out, err
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AuthInfos)) {
		if err := add(path+"#"+name, cfg.AuthInfos[name].ClientCertificateData); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Leaves keeps the certificates that are not CAs.
func Leaves(cs []FoundCert) []FoundCert {
	var out []FoundCert
	for _, c := range cs {
		if !c.Cert.IsCA {
			out = append(out, c)
		}
	}
	return out
}

// Earliest is the certificate that expires first (nil for none).
func Earliest(cs []FoundCert) *FoundCert {
	var e *FoundCert
	for i := range cs {
		if e == nil || cs[i].Cert.NotAfter.Before(e.Cert.NotAfter) {
			e = &cs[i]
		}
	}
	return e
}

// Expired lists the certificates whose NotAfter is before now, as "path: description", sorted.
func Expired(cs []FoundCert, now time.Time) []string {
	var out []string
	for _, c := range cs {
		if now.After(c.Cert.NotAfter) {
			out = append(out, c.Path+": "+Describe(c.Cert))
		}
	}
	sort.Strings(out)
	return out
}

// ServedCertificate connects to addr (host:port) with TLS for serverName and returns the leaf certificate the
// server presents. It verifies against roots when given (nil: the chain is returned unverified, to compare it).
func ServedCertificate(ctx context.Context, addr, serverName string, roots *x509.CertPool) (*x509.Certificate, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second}, Config: &tls.Config{
		ServerName: serverName, RootCAs: roots, InsecureSkipVerify: roots == nil, MinVersion: tls.VersionTLS12}}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	st := conn.(*tls.Conn).ConnectionState()
	if len(st.PeerCertificates) == 0 {
		return nil, fmt.Errorf("%s presented no certificate", addr)
	}
	return st.PeerCertificates[0], nil
}

// CopyTree copies the update directory src to dst (which must not exist) the way render-static renew keeps its
// updates (renew.CopyTree): files with their modes, directories 0700; symlinks and special files are refused, so
// what is copied is exactly the update's regular files and directories.
func CopyTree(src, dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("copy %s: %s exists", src, dst)
	}
	return renew.CopyTree(src, dst)
}

// RunLogged runs argv bounded by timeout, in its own process group, with its output appended to logPath; on
// timeout the group is killed (by the group's PID). It returns the output of this run and the error.
func RunLogged(ctx context.Context, timeout time.Duration, logPath string, env []string, argv ...string) (string, error) {
	if len(argv) == 0 {
		return "", errors.New("no command")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var buf bytes.Buffer
	var w io.Writer = &buf
	if logPath != "" {
		f, err := openLog(logPath)
		if err != nil {
			return "", err
		}
		defer f.Close()
		fmt.Fprintf(f, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "))
		w = io.MultiWriter(&buf, f)
	}
	cmd := nodeCommand(ctx, env, argv...)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%s: still running after %s (killed): %w", argv[0], timeout, err)
	} else if err != nil {
		err = fmt.Errorf("%s: %w", argv[0], err)
	}
	return buf.String(), err
}
