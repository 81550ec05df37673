package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// binary is the rediskit binary built once for the end-to-end tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rediskit-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "rediskit")
	build := exec.Command("go", "build", "-race", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build rediskit: " + err.Error())
	}
	code := 0
	func() {
		defer func() { _ = os.RemoveAll(dir) }()
		code = m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// rediskit runs the built binary and returns its output and exit code.
func rediskit(t *testing.T, ctx context.Context, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	default:
		t.Fatalf("run rediskit %v: %v", args, err)
		return "", -1
	}
}

var pidColumn = regexp.MustCompile(`(?m)^(?:node|sentinel)\d+\s+\S+\s+\S+\s+\S+\s+(\d+)\s`)

// labPIDs reads the PIDs from a lab table in the output.
func labPIDs(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, m := range pidColumn.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("no PIDs in output:\n%s", out)
	}
	return pids
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists: %v", pid, err)
		}
	}
}

func TestDemoQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, code := rediskit(t, ctx, nil, "demo", "--quick")
	if code != exitOK {
		t.Fatalf("demo --quick exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"started 1 master, 2 replicas and 3 sentinels",
		"node2 ", "injected 42ms",
		`as the master of "mymaster"`,
		"stopped 6 processes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	assertGone(t, labPIDs(t, out))
}

func TestLabUpStopsOnInterrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "lab", "up", "--replicas", "1", "--sentinels", "1", "--latency", "node1=5ms")
	cmd.Env = append(os.Environ(), "REDISKIT_PASSWORD=lab-up-secret")
	var out safeBuffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C stops it") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("lab up did not come up:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lab up after Ctrl-C: %v\n%s", err, out.String())
	}
	text := out.String()
	if strings.Contains(text, "lab-up-secret") {
		t.Fatalf("lab up printed the password:\n%s", text)
	}
	if !strings.Contains(text, "stopped 3 processes") || !strings.Contains(text, "redis+sentinel://") {
		t.Fatalf("unexpected output:\n%s", text)
	}
	assertGone(t, labPIDs(t, text))
}

func TestUsageErrorsExitTwo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"no-such-command"},
		{"lab", "up", "--no-such-flag"},
		{"lab", "up", "--latency", "node9=5ms"},
		{"lab", "up", "--latency", "node1=fast"},
		{"demo", "extra-arg"},
	} {
		out, code := rediskit(t, ctx, nil, args...)
		if code != exitUsage {
			t.Errorf("rediskit %v: exit %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}

// safeBuffer is a bytes.Buffer safe for the writer goroutines of exec.Cmd
// and a polling reader.
type safeBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
