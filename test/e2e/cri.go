package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The node's containers, seen the way the kubelet sees them: through the CRI of the runtime.

// CRI is a client of the runtime's CRI socket.
type CRI struct {
	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
}

// DialCRI connects to a CRI socket (a path).
func DialCRI(socket string) (*CRI, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("CRI %s: %w", socket, err)
	}
	return &CRI{conn: conn, rt: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

// Close closes the connection.
func (c *CRI) Close() error { return c.conn.Close() }

// Container is one container as the CRI reports it.
type Container struct {
	ID, Pod, Namespace, Name string
	State                    runtimeapi.ContainerState
	ExitCode                 int32
	Attempt                  uint32
	LogPath                  string
	Reason, Message          string
	StartedAt                int64 // Unix nanoseconds (0: never started)
}

func (c Container) String() string {
	s := fmt.Sprintf("%s/%s %s (attempt %d, %s", c.Namespace, c.Pod, c.Name, c.Attempt, strings.TrimPrefix(c.State.String(), "CONTAINER_"))
	if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		s += fmt.Sprintf(", exit code %d", c.ExitCode)
	}
	return s + ")"
}

// Containers lists every container with its status (log path included).
func (c *CRI) Containers(ctx context.Context) ([]Container, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return nil, err
	}
	var out []Container
	for _, k := range l.Containers {
		st, err := c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: k.Id})
		if err != nil {
			return nil, err
		}
		s := st.Status
		out = append(out, Container{ID: k.Id, Pod: k.Labels["io.kubernetes.pod.name"], Namespace: k.Labels["io.kubernetes.pod.namespace"],
			Name: k.Metadata.Name, State: s.State, ExitCode: s.ExitCode, Attempt: k.Metadata.Attempt, LogPath: s.LogPath,
			Reason: s.Reason, Message: s.Message, StartedAt: s.StartedAt})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Attempt < out[j].Attempt
	})
	return out, nil
}

// ListContainers lists every container of the runtime at socket (a path), on a connection of its own.
func ListContainers(ctx context.Context, socket string) ([]Container, error) {
	c, err := DialCRI(socket)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Containers(ctx)
}

// Failed keeps the containers that ended with an error: a static pod that cannot run.
func Failed(all []Container) []Container {
	var out []Container
	for _, k := range all {
		if k.State == runtimeapi.ContainerState_CONTAINER_EXITED && k.ExitCode != 0 {
			out = append(out, k)
		}
	}
	return out
}

// LogTail is the last n lines of a container's log, read at the path the CRI reports (CRI log format: each
// line "<time> <stream> <tag> <text>"; the text is kept).
func LogTail(k Container, n int) string {
	data, err := os.ReadFile(k.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log at %s: %v)", k.LogPath, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if f := strings.SplitN(l, " ", 4); len(f) == 4 {
			lines[i] = f[3]
		}
	}
	return strings.Join(lines, "\n")
}

// StopAllPods stops and removes every pod sandbox (their containers with them), bounded by timeout: a clean
// shutdown of the node's workloads, so no runtime shim outlives the runtime.
func StopAllPods(ctx context.Context, socket string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := DialCRI(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	l, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range l.Items {
		if _, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", s.Metadata.Name, err))
			continue
		}
		if _, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", s.Metadata.Name, err))
		}
	}
	return errors.Join(errs...)
}
