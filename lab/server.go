package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
)

// Server is one redis-server or redis-sentinel process owned by a lab. It is
// embedded in Node and SentinelNode. Every signal is sent to the process by
// its PID.
type Server struct {
	lab    *Lab
	name   string // node0, sentinel1, ...
	binary string
	dir    string
	conf   string // path of the config file
	// host is the loopback address the process binds and, with
	// Config.Partitions, connects from: 127.0.0.1, or its own.
	host netip.Addr
	port int // the port the process listens on

	username, password string // credentials for the lab's admin client

	mu     sync.Mutex
	proc   *process
	paused bool
	admin  *redis.Client
}

// process is one run of a server binary.
type process struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the process has been reaped
}

// Name is the lab's name for the server: node0, node1, ..., sentinel0, ...
func (s *Server) Name() string { return s.name }

// DirectAddr is the address the process itself listens on, bypassing any
// proxy.
func (s *Server) DirectAddr() string {
	return netip.AddrPortFrom(s.host, uint16(s.port)).String()
}

// IP is the loopback address the process listens on and, when the lab runs
// with Config.Partitions, its own address in the lab: the one its
// connections come from and its proxy listens on (see Endpoint). Without
// Partitions every server's is 127.0.0.1.
func (s *Server) IP() netip.Addr { return s.host }

func (s *Server) endpointLab() *Lab { return s.lab }

// Dir is the server's working directory (config, log).
func (s *Server) Dir() string { return s.dir }

// PID is the process id, or 0 while the server is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.pid
}

// Running reports whether the process is running (paused counts as running).
func (s *Server) Running() bool { return s.PID() != 0 }

// Paused reports whether the process is stopped by Pause.
func (s *Server) Paused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paused
}

// Kill stops the process at once with SIGKILL and waits until it is gone.
// The server keeps its config, so Restart brings it back.
func (s *Server) Kill() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.paused = false
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	s.lab.cfg.Logger.Info("lab: kill", "server", s.name, "pid", p.pid)
	return p.kill()
}

// Pause freezes the process with SIGSTOP: its port still accepts
// connections but nothing is answered, like a server stuck in a long
// command or a VM that stalls.
func (s *Server) Pause() error {
	return s.setPaused(true)
}

// Resume continues a paused process with SIGCONT.
func (s *Server) Resume() error {
	return s.setPaused(false)
}

func (s *Server) setPaused(pause bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return fmt.Errorf("lab: %s is not running", s.name)
	}
	sig, err := setPaused(s.proc.pid, pause)
	if err != nil {
		return fmt.Errorf("lab: signal %s to %s (pid %d): %w", sig, s.name, s.proc.pid, err)
	}
	s.paused = pause
	s.lab.cfg.Logger.Info("lab: signal", "server", s.name, "pid", s.proc.pid, "signal", sig)
	return nil
}

// Restart starts a killed server again with its config file as it is now
// (Sentinel rewrites the files of the nodes it reconfigures, so a former
// master comes back as whatever Sentinel last made it) and waits until it
// answers.
func (s *Server) Restart(ctx context.Context) error {
	if s.Running() {
		return fmt.Errorf("lab: %s is running; Kill it first", s.name)
	}
	return s.start(ctx)
}

// Do runs a command on the server's own port (never through a proxy) with
// the lab's credentials.
func (s *Server) Do(ctx context.Context, args ...any) *redis.Cmd {
	return s.adminClient().Do(ctx, args...)
}

// LogTail returns the last n lines the server logged (its log file and
// anything it wrote to stdout/stderr), with the lab's passwords replaced by
// "xxxxx" (Redis quotes the offending config line when it refuses one).
func (s *Server) LogTail(n int) string {
	var b strings.Builder
	for _, f := range []string{"server.log", "stdout.log"} {
		data, err := os.ReadFile(filepath.Join(s.dir, f))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s %s (last %d lines)\n%s\n", s.name, f, len(lines), strings.Join(lines, "\n"))
	}
	return s.lab.redact(b.String())
}

// adminOptions are the options of the lab's own clients of this server:
// its own port, no retries (the lab's waits poll instead).
func (s *Server) adminOptions() *redis.Options {
	return redisopt.Inner(&redis.Options{
		Addr:         s.DirectAddr(),
		Username:     s.username,
		Password:     s.password,
		TLSConfig:    s.lab.clientTLS(),
		DialTimeout:  time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		PoolSize:     4,
	})
}

func (s *Server) adminClient() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		s.admin = redis.NewClient(s.adminOptions())
	}
	return s.admin
}

func (s *Server) closeAdmin() {
	s.mu.Lock()
	c := s.admin
	s.admin = nil
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// start runs the binary on the config file and waits until the server
// answers PING, the process exits, or ctx ends.
func (s *Server) start(ctx context.Context) error {
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.binary, s.conf)
	cmd.Dir = s.dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("lab: start %s (%s): %w", s.name, s.binary, err)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(p.exited)
	}()
	s.mu.Lock()
	s.proc = p
	s.paused = false
	s.mu.Unlock()
	s.closeAdmin() // pooled connections to a previous run are dead
	s.lab.cfg.Logger.Info("lab: started", "server", s.name, "pid", p.pid, "addr", s.DirectAddr())

	if err := s.waitReady(ctx, p); err != nil {
		_ = s.Kill()
		return err
	}
	return nil
}

// errPortInUse is in the error of a server that exited because another
// process holds its port; Start then starts the topology again on fresh
// ports.
var errPortInUse = errors.New("port already in use")

var errPortClosed = errors.New("port not open yet")

func (s *Server) waitReady(ctx context.Context, p *process) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var d net.Dialer
	for {
		// Wait for the port with a bare dial first: go-redis logs every
		// failed dial to stderr, which would litter test output.
		err := errPortClosed
		if c, derr := d.DialContext(ctx, "tcp", s.DirectAddr()); derr == nil {
			_ = c.Close()
			pingCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			var info string
			info, err = s.adminClient().Info(pingCtx, "server").Result()
			cancel()
			if err == nil {
				// Another process may hold the port (taken between the
				// pick and the bind): it answers, and this server exits
				// unable to listen.
				if pid := redisinfo.ParseInfo(info)["process_id"]; pid != strconv.Itoa(p.pid) {
					return fmt.Errorf("lab: %s: process %s answers on %s, not %d: %w", s.name, pid, s.DirectAddr(), p.pid, errPortInUse)
				}
				return nil
			}
		}
		select {
		case <-p.exited:
			tail := s.LogTail(10)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("lab: %s could not listen on %s: %w", s.name, s.DirectAddr(), errPortInUse)
			}
			return fmt.Errorf("lab: %s exited during start-up:\n%s", s.name, tail)
		case <-ctx.Done():
			return fmt.Errorf("lab: %s did not answer PING on %s: %w (last error: %v)\n%s",
				s.name, s.DirectAddr(), ctx.Err(), err, s.LogTail(10))
		case <-tick.C:
		}
	}
}

func (p *process) kill() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := killPID(p.pid); err != nil {
		return fmt.Errorf("lab: kill pid %d: %w", p.pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("lab: pid %d still running 5s after SIGKILL", p.pid)
	}
}

// freePort picks a port free on the loopback address host: below the
// kernel's range of ephemeral ports where that leaves room, else one the
// kernel gives. A port of that range can be taken, while its server is
// down, as the local port of any outgoing connection on the machine, and
// tests kill servers and start them again on their ports (CI saw a node
// restarted after a kill find its port in use); below it, only a listener
// can take a port. Another process can still take the port before the
// server binds it; Start detects that and starts the whole topology again
// on fresh ports. The range is shared out by server (see portShare).
func freePort(host netip.Addr) (int, error) {
	if low, ok := ephemeralLow(); ok && low-stablePortFloor >= 2000 {
		from, to := portShare(stablePortFloor, low)
		for range 50 {
			port := from + rand.IntN(to-from)
			ln, err := net.Listen("tcp", netip.AddrPortFrom(host, uint16(port)).String()) //nolint:gosec // below 65536
			if err != nil {
				continue // taken: another
			}
			_ = ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(host, 0).String())
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// portShare is the part of [from, to) whose ports this process's labs
// pick: the lower half with Redis, the upper with Valkey (ServerEnv). make
// test runs a pass of the suite per server, side by side: a node one pass
// killed is still dialled at its port by its replicas and peers until
// they learn of the failover, and a server the other pass started there
// meanwhile would be taken for it (see reservePort). Apart, the passes'
// ports never meet.
func portShare(from, to int) (int, int) {
	mid := from + (to-from)/2
	if k, _ := ParseServerKind(os.Getenv(ServerEnv)); k == ServerValkey {
		return mid, to
	}
	return from, mid
}

// stablePortFloor is the lowest port freePort picks itself: above the
// ports services commonly listen on.
const stablePortFloor = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), and whether it could be read.
func ephemeralLow() (int, bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	low, err := strconv.Atoi(f[0])
	return low, err == nil && low > 0 && low <= 65535
}

// ProcessesIn returns the PIDs of the processes whose working directory is
// dir or below it, also after the directory was removed, as /proc shows
// them (Linux). Every lab server runs in its own directory under the lab's,
// so tests use it to check that no server outlived its lab, including ones
// whose PIDs were never printed.
func ProcessesIn(dir string) ([]int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("lab: list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue // gone, or not ours to see
		}
		cwd = strings.TrimSuffix(cwd, " (deleted)")
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
