package lawn_test

// A lawnd child process per test group: port 0 on the first start, the same port on a restart; stopped with
// SIGTERM by its own PID (SIGKILL only for this child, only if it ignores SIGTERM). ctest passes the binary
// in $LAWND (clients/go/CMakeLists.txt).

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"lawn.dev/lawn"
)

const (
	startupTimeout = 30 * time.Second
	stopTimeout    = 30 * time.Second
	waitTimeout    = 30 * time.Second // Bound on every wait for a condition; generous for a loaded machine.
)

var listening = regexp.MustCompile(`listening on 127\.0\.0\.1:(\d+)`)

func TestMain(m *testing.M) {
	if os.Getenv("LAWND") == "" {
		fmt.Fprintln(os.Stderr, "set LAWND to the lawnd binary (ctest does)")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

type lawnd struct {
	t       *testing.T
	dataDir string
	extra   []string
	port    string
	cmd     *exec.Cmd
	mu      sync.Mutex
	log     strings.Builder
	exited  chan struct{}
}

// startLawnd runs a lawnd in a temp dir for the test (stopped at its end) and waits until it serves.
func startLawnd(t *testing.T, extra ...string) *lawnd {
	t.Helper()
	d := &lawnd{t: t, dataDir: t.TempDir(), extra: extra}
	d.start()
	t.Cleanup(d.stop)
	return d
}

// config writes yaml to a config file in a temp dir and returns the flags that load it.
func config(t *testing.T, yaml string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lawn.yaml")
	if err := os.WriteFile(path, []byte(yaml+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--config", path}
}

func (d *lawnd) address() string { return "127.0.0.1:" + d.port }

func (d *lawnd) start() {
	d.t.Helper()
	port := d.port
	if port == "" {
		port = "0"
	}
	args := append([]string{"--listen", "127.0.0.1:" + port, "--data-dir", d.dataDir, "--metrics-listen", "",
		"--shards", "2"}, d.extra...)
	cmd := exec.Command(os.Getenv("LAWND"), args...)
	out, err := cmd.StderrPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd, d.exited = cmd, make(chan struct{})
	found := make(chan string, 1)
	go func(exited chan struct{}) {
		defer close(exited)
		scanner := bufio.NewScanner(out)
		for scanner.Scan() {
			line := scanner.Text()
			d.mu.Lock()
			d.log.WriteString(line + "\n")
			d.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}(d.exited)
	select {
	case d.port = <-found:
	case <-d.exited:
		d.t.Fatalf("lawnd exited before it listened; log:\n%s", d.logText())
	case <-time.After(startupTimeout):
		d.t.Fatalf("lawnd did not listen within %v; log:\n%s", startupTimeout, d.logText())
	}
}

func (d *lawnd) logText() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// stop sends SIGTERM and expects exit status 0 within stopTimeout.
func (d *lawnd) stop() {
	cmd := d.cmd
	if cmd == nil {
		return
	}
	d.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-d.exited
		d.t.Errorf("lawnd ignored SIGTERM for %v; log:\n%s", stopTimeout, d.logText())
	}
	if err := cmd.Wait(); err != nil {
		d.t.Errorf("lawnd exited with %v; log:\n%s", err, d.logText())
	}
}

// dial connects to d and waits until lawnd has recovered and serves timer calls.
func dial(t *testing.T, d *lawnd, opts ...lawn.Option) *lawn.Client {
	t.Helper()
	c, err := lawn.Dial(d.address(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	waitServing(t, c)
	return c
}

// waitServing probes with GetTimer (GetStats answers while lawnd recovers) until it is not UNAVAILABLE. With
// auth on, name a namespace the client may read (a denial comes before the recovery check).
func waitServing(t *testing.T, c *lawn.Client, namespace ...string) {
	t.Helper()
	ns := "probe"
	if len(namespace) > 0 {
		ns = namespace[0]
	}
	waitFor(t, "lawnd to serve", func() bool {
		_, err := c.Get(context.Background(), ns, "probe")
		return !errors.Is(err, lawn.ErrUnavailable)
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// take receives n expirations from sub, failing the test if they do not come within waitTimeout.
func take(t *testing.T, sub *lawn.Subscription, n int) []*lawn.Expiration {
	t.Helper()
	var got []*lawn.Expiration
	timeout := time.After(waitTimeout)
	for len(got) < n {
		select {
		case exp, ok := <-sub.Expirations():
			if !ok {
				t.Fatalf("subscription ended after %d of %d expirations: %v", len(got), n, sub.Err())
			}
			got = append(got, exp)
		case <-timeout:
			t.Fatalf("got %d of %d expirations within %v", len(got), n, waitTimeout)
		}
	}
	return got
}

func namespaceStats(t *testing.T, c *lawn.Client, ns string) lawn.NamespaceStats {
	t.Helper()
	s, err := c.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s.Namespaces[ns]
}

// waitEnded drains sub until its channel closes, failing the test if that takes longer than waitTimeout.
func waitEnded(t *testing.T, sub *lawn.Subscription, what string) {
	t.Helper()
	ended := make(chan struct{})
	go func() {
		for range sub.Expirations() {
		}
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(waitTimeout):
		t.Fatalf("%s: the subscription did not end within %v", what, waitTimeout)
	}
}
