// Command oci-registry is the e2e mirror (issue 38): go-containerregistry's own registry (pkg/registry, an
// implementation of the OCI distribution API) serving images of an OCI image layout (written by oci-image
// -layout) by digest only, each in the repository the harness names, with every request it answers written to a
// log, one JSON object a line, so that the test can say what the node pulled.
//
//	oci-registry -listen :5000 -layout DIR -serve disconnected/e2e/release@sha256:... [-serve ...] -log FILE
//
// Each -serve is REPOSITORY@DIGEST: the layout's image (its manifest, config and layers, the layout's own bytes)
// is put into the registry under that repository and digest before it listens; no tag exists, so a pull by tag
// gets 404 (and is logged). The images are put in through the registry's handler in this process, not over the
// network, so the log holds only the requests of others. It runs until SIGTERM or SIGINT, then exits 0.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

type serves []string

func (s *serves) String() string     { return strings.Join(*s, " ") }
func (s *serves) Set(v string) error { *s = append(*s, v); return nil }

// Entry is one line of the request log.
type Entry struct {
	Time   time.Time `json:"time"`
	Remote string    `json:"remote"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Status int       `json:"status"`
	Bytes  int64     `json:"bytes"`
	Agent  string    `json:"agent,omitempty"`
}

func main() {
	var listen, dir, logPath string
	var want serves
	flag.StringVar(&listen, "listen", ":5000", "the address to listen on")
	flag.StringVar(&dir, "layout", "", "the OCI image layout holding the images")
	flag.StringVar(&logPath, "log", "", "the request log to write (JSON lines)")
	flag.Var(&want, "serve", "REPOSITORY@DIGEST: a layout image to serve (repeatable)")
	flag.Parse()
	if dir == "" || logPath == "" || len(want) == 0 {
		fmt.Fprintln(os.Stderr, "usage: oci-registry -listen ADDR -layout DIR -log FILE -serve REPOSITORY@DIGEST ...")
		os.Exit(2)
	}
	if err := run(listen, dir, logPath, want); err != nil {
		fmt.Fprintf(os.Stderr, "oci-registry: %v\n", err)
		os.Exit(1)
	}
}

func run(listen, dir, logPath string, want []string) error {
	h := registry.New(registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)))
	p, err := layout.FromPath(dir)
	if err != nil {
		return fmt.Errorf("layout %s: %w", dir, err)
	}
	for _, w := range want {
		repo, digest, ok := strings.Cut(w, "@")
		if !ok || repo == "" {
			return fmt.Errorf("-serve %q: want REPOSITORY@DIGEST", w)
		}
		if err := put(h, p, repo, digest); err != nil {
			return fmt.Errorf("-serve %s: %w", w, err)
		}
		fmt.Printf("serving %s\n", w)
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	enc := json.NewEncoder(f)
	srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		mu.Lock()
		defer mu.Unlock()
		// After ServeHTTP: the answer is written, the line says how it ended.
		enc.Encode(Entry{Time: time.Now().UTC(), Remote: r.RemoteAddr, Method: r.Method, Path: r.URL.Path, Status: rec.status,
			Bytes: rec.n, Agent: r.UserAgent()})
	})}
	fmt.Printf("listening on %s\n", l.Addr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case s := <-sig:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		fmt.Printf("stopped (%v)\n", s)
		return nil
	case err := <-errc:
		return err
	}
}

// recorder keeps the status and size of an answer.
type recorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (r *recorder) WriteHeader(s int) { r.status = s; r.ResponseWriter.WriteHeader(s) }
func (r *recorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

// put puts the layout's image of digest into the registry's repository repo by digest: each blob (config and
// layers, their compressed bytes as stored) by a monolithic upload, then the manifest's bytes under its digest.
func put(h http.Handler, p layout.Path, repo, digest string) error {
	hash, err := v1.NewHash(digest)
	if err != nil {
		return err
	}
	img, err := p.Image(hash)
	if err != nil {
		return fmt.Errorf("not in the layout: %w", err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		rc, err := p.Blob(d.Digest)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := do(h, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.Digest.String(), "", data, http.StatusCreated); err != nil {
			return fmt.Errorf("blob %s: %w", d.Digest, err)
		}
	}
	return do(h, http.MethodPut, "/v2/"+repo+"/manifests/"+digest, string(mt), raw, http.StatusCreated)
}

// do makes one request of the handler in this process and wants the status.
func do(h http.Handler, method, target, contentType string, body []byte, want int) error {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		return errors.New(method + " " + target + ": " + rec.Result().Status + ": " + rec.Body.String())
	}
	return nil
}
