# render-static: `make run` renders the bundled example into ./aio, `make test` runs every test.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
BIN := bin/render-static
EXAMPLE := examples/sno/install-config.yaml
EXAMPLE_NODE_IP := 192.168.126.10
EXAMPLE_NODE_NAME := sno-0

.PHONY: all build run test deps e2e-build e2e lab unit bench lint fuzz clean

all: build

# What `render-static version` reports of this build besides the go command's own stamp (which a git worktree or
# GOFLAGS=-buildvcs=false leave out): git describe's version and the commit.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/render-static

# Renders the bundled single-node example into ./aio (aio.ign, live.ign, auth/, manifests/, rootfs/, state/, trace.txt).
run: build
	./$(BIN) --install-config $(EXAMPLE) --node-ip $(EXAMPLE_NODE_IP) --node-name $(EXAMPLE_NODE_NAME) --dir aio

# Installs what the tests need on a fresh Debian machine (apt packages, Go modules).
deps:
	./hack/install-test-deps.sh
	$(GO) mod download

# The upstream kube-apiserver, kube-controller-manager, kube-scheduler and etcd the end-to-end test boots, built
# from the Go module proxy (cached under ~/go/cache/render-static-e2e; a cold build takes 10-27 minutes on 2
# cores, so it runs first and alone, outside the tests' timeout).
e2e-build:
	./hack/e2e-build.sh

# Everything: lint, unit and integration tests, and the end-to-end boot, with the external tools required.
# The e2e package is named first so that it starts first: it is the longest (~37 min, mostly waiting for the
# renewal and power-off cases' certificates to expire, ~13 and ~8 min; the three IP families with the two worker
# cases ~9 min (2.8-3.1 min each), the lab tests ~6 min) and the other packages run beside it. The timeout leaves
# room for a slower machine and still ends (with every goroutine's stack) before CI's 90 minutes.
test: deps lint e2e-build
	RENDER_STATIC_REQUIRE_TOOLS=1 RENDER_STATIC_E2E=1 RENDER_STATIC_E2E_REQUIRE_FLAVOR=1 $(GO) test -count=1 -timeout 75m ./test/e2e/ ./...

# Only the end-to-end boot of a rendered control plane (root; private network namespaces).
e2e: deps e2e-build
	./hack/e2e-run.sh

# The "kaio" lab: boots the bundled upstream example on this machine with a real kubelet and containerd, in private
# network, mount and PID namespaces, and leaves you a shell there with KUBECONFIG set, on your terminal (root).
# LAB_ARGS="IC NODE_IP" boots another install-config. Exiting the shell (or Ctrl-C before it is up) stops the node
# and cleans up. Without a terminal: LAB_CMD="kubectl get nodes" runs that command instead (make fails if it does);
# without LAB_CMD the lab refuses at once.
lab:
	./hack/lab.sh $(LAB_ARGS)

# Quick: the Go tests, skipping what needs tools that are not installed.
unit:
	$(GO) test -count=1 -short ./...

# Render speed, split into key generation, loops, export and Ignition, with the CPU in RSA key generation (a CPU profile the
# benchmark takes itself: no -cpuprofile here), the rest of the CPU and the wall bound (docs/speed.md), each written to disk (TMPDIR)
# and to a tmpfs (/dev/shm, or RENDER_STATIC_BENCH_TMPFS); a re-render from saved state, the same two ways;
# then fleet throughput over RENDER_STATIC_BENCH_SITES (default 50) sites against cores x one core's single-render rate and
# cores x the single-render rate (metrics: the comment at the top of pkg/pipeline/bench_test.go and pkg/fleet/bench_test.go);
# then 7 interleaved pairs of the command's fresh render and kubeadm v1.34.3's init phases that make a control plane's
# files (test/e2e/kubeadm_bench_test.go; kubeadm built once like the e2e's Kubernetes binaries, cached).
bench: build
	RENDER_STATIC_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench . -benchtime 3x -count 2 ./pkg/pipeline/
	$(GO) test -run '^$$' -bench Fleet -benchtime 1x -timeout 60m ./pkg/fleet/
	RENDER_STATIC_BIN=$(abspath $(BIN)) $(GO) test -run '^$$' -bench Kubeadm -benchtime 7x -timeout 60m ./test/e2e/

# gofmt, go vet, staticcheck (installed on first use), shellcheck over the scripts, go mod tidy changing nothing.
lint:
	./hack/lint.sh

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./pkg/installconfig/

clean:
	rm -rf bin aio
